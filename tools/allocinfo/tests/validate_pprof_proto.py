#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Decodes `allocinfo export -f pprof` with the protobuf library and checks it against `--json top -n 0`.

Usage: validate_pprof_proto.py PROFILE JSON. The schema is built here from the field numbers and types
that pprof's profile.proto documents (package perftools.profiles), so the check needs no protoc and no
go: every site must be one sample whose location has one line in a function named after the site, with
the module label, values [live calls, bytes] under sample types inuse_objects/count and
inuse_space/bytes, inuse_space the default, and string_table[0] empty.
"""

import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from pprof_expect import compare, expected_sites, fail

F = descriptor_pb2.FieldDescriptorProto

# name: [(field name, number, type, repeated, message type)]
SCHEMA = {
    "Profile": [
        ("sample_type", 1, F.TYPE_MESSAGE, True, "ValueType"),
        ("sample", 2, F.TYPE_MESSAGE, True, "Sample"),
        ("mapping", 3, F.TYPE_MESSAGE, True, "Mapping"),
        ("location", 4, F.TYPE_MESSAGE, True, "Location"),
        ("function", 5, F.TYPE_MESSAGE, True, "Function"),
        ("string_table", 6, F.TYPE_STRING, True, None),
        ("drop_frames", 7, F.TYPE_INT64, False, None),
        ("keep_frames", 8, F.TYPE_INT64, False, None),
        ("time_nanos", 9, F.TYPE_INT64, False, None),
        ("duration_nanos", 10, F.TYPE_INT64, False, None),
        ("period_type", 11, F.TYPE_MESSAGE, False, "ValueType"),
        ("period", 12, F.TYPE_INT64, False, None),
        ("comment", 13, F.TYPE_INT64, True, None),
        ("default_sample_type", 14, F.TYPE_INT64, False, None),
    ],
    "ValueType": [("type", 1, F.TYPE_INT64, False, None), ("unit", 2, F.TYPE_INT64, False, None)],
    "Sample": [
        ("location_id", 1, F.TYPE_UINT64, True, None),
        ("value", 2, F.TYPE_INT64, True, None),
        ("label", 3, F.TYPE_MESSAGE, True, "Label"),
    ],
    "Label": [
        ("key", 1, F.TYPE_INT64, False, None),
        ("str", 2, F.TYPE_INT64, False, None),
        ("num", 3, F.TYPE_INT64, False, None),
        ("num_unit", 4, F.TYPE_INT64, False, None),
    ],
    "Mapping": [
        ("id", 1, F.TYPE_UINT64, False, None),
        ("memory_start", 2, F.TYPE_UINT64, False, None),
        ("memory_limit", 3, F.TYPE_UINT64, False, None),
        ("file_offset", 4, F.TYPE_UINT64, False, None),
        ("filename", 5, F.TYPE_INT64, False, None),
        ("build_id", 6, F.TYPE_INT64, False, None),
    ],
    "Location": [
        ("id", 1, F.TYPE_UINT64, False, None),
        ("mapping_id", 2, F.TYPE_UINT64, False, None),
        ("address", 3, F.TYPE_UINT64, False, None),
        ("line", 4, F.TYPE_MESSAGE, True, "Line"),
        ("is_folded", 5, F.TYPE_BOOL, False, None),
    ],
    "Line": [
        ("function_id", 1, F.TYPE_UINT64, False, None),
        ("line", 2, F.TYPE_INT64, False, None),
        ("column", 3, F.TYPE_INT64, False, None),
    ],
    "Function": [
        ("id", 1, F.TYPE_UINT64, False, None),
        ("name", 2, F.TYPE_INT64, False, None),
        ("system_name", 3, F.TYPE_INT64, False, None),
        ("filename", 4, F.TYPE_INT64, False, None),
        ("start_line", 5, F.TYPE_INT64, False, None),
    ],
}


def profile_class():
    fdp = descriptor_pb2.FileDescriptorProto(
        name="profile.proto", package="perftools.profiles", syntax="proto3"
    )
    for name, fields in SCHEMA.items():
        msg = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated, mtype in fields:
            f = msg.field.add(name=fname, number=number, type=ftype)
            f.label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
            if mtype:
                f.type_name = f".perftools.profiles.{mtype}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("perftools.profiles.Profile")
    return message_factory.GetMessageClass(desc)




def main():
    prof_path, json_path = sys.argv[1:3]
    p = profile_class()()
    with open(prof_path, "rb") as f:
        p.ParseFromString(f.read())
    st = list(p.string_table)
    if not st or st[0] != "":
        fail("string_table[0] is not empty")
    types = [(st[t.type], st[t.unit]) for t in p.sample_type]
    if types != [("inuse_objects", "count"), ("inuse_space", "bytes")]:
        fail(f"sample types {types}")
    if st[p.default_sample_type] != "inuse_space":
        fail(f"default sample type {st[p.default_sample_type]}")
    functions = {f.id: f for f in p.function}
    locations = {l.id: l for l in p.location}
    got = {}
    for s in p.sample:
        if len(s.location_id) != 1 or len(s.value) != 2 or len(s.label) != 1:
            fail(f"sample {s} is not one location, two values, one label")
        loc = locations[s.location_id[0]]
        if len(loc.line) != 1:
            fail(f"location {loc.id} has {len(loc.line)} lines")
        fn = functions[loc.line[0].function_id]
        if st[s.label[0].key] != "module" or st[fn.name] != st[fn.system_name]:
            fail(f"sample {s} label or function {fn} malformed")
        module = st[s.label[0].str]
        key = (st[fn.filename], loc.line[0].line, st[fn.name], "" if module == "vmlinux" else module)
        if key in got:
            fail(f"two samples for {key}")
        got[key] = (s.value[0], s.value[1])
    want = expected_sites(json_path, drop_zero=False)
    compare(got, want, "profile.proto", "the decoded profile differs from the input")


if __name__ == "__main__":
    main()
