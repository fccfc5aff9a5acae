# SPDX-License-Identifier: GPL-2.0
"""Checks `allocinfo export` output with prometheus_client's own parsers.

usage: validate_export.py {openmetrics|prometheus} EXPORT_FILE TOP_JSON_FILE

TOP_JSON_FILE is `allocinfo --json top -n 0` on the same input: the samples must be exactly its
rows, summed per site, with the right labels and values.
"""

import json
import sys


def expected_sites(top):
    sites = {}
    for r in top["rows"]:
        key = (r["file"], str(r["line"]), r["function"], r["module"] or "")
        b, c, inacc = sites.get(key, (0, 0, False))
        sites[key] = (b + r["bytes"], c + r["calls"], inacc or not r["accurate"])
    return sites


def same_value(parsed, exact):
    """Parsers keep integers exact, or turn them into floats; either must match the exact count."""
    if isinstance(parsed, float):
        return parsed == float(exact)
    return parsed == exact


def main():
    fmt, export_path, top_path = sys.argv[1:4]
    with open(export_path, encoding="utf-8") as f:
        text = f.read()
    with open(top_path, encoding="utf-8") as f:
        top = json.load(f)

    if fmt == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
        if "# EOF" in text:
            raise AssertionError("Prometheus text must not carry the OpenMetrics # EOF")

    families = {f.name: f for f in text_string_to_metric_families(text)}
    want_names = {"allocinfo_bytes", "allocinfo_calls"}
    if top["version"] == "2.0":
        want_names.add("allocinfo_inaccurate")
    if set(families) != want_names:
        raise AssertionError(f"families {sorted(families)} != {sorted(want_names)}")
    if fmt == "openmetrics" and families["allocinfo_bytes"].unit != "bytes":
        raise AssertionError("allocinfo_bytes lacks UNIT bytes")

    sites = expected_sites(top)
    for name, index in (("allocinfo_bytes", 0), ("allocinfo_calls", 1)):
        fam = families[name]
        if fam.type != "gauge" or not fam.documentation:
            raise AssertionError(f"{name}: type {fam.type!r}, help {fam.documentation!r}")
        got = {}
        for s in fam.samples:
            key = (s.labels["file"], s.labels["line"], s.labels["function"], s.labels["module"])
            if set(s.labels) != {"file", "line", "function", "module"}:
                raise AssertionError(f"{name}: labels {sorted(s.labels)}")
            if key in got:
                raise AssertionError(f"{name}: duplicate series {key}")
            got[key] = s.value
        want = {k: v[index] for k, v in sites.items()}
        missing = set(want) - set(got)
        extra = set(got) - set(want)
        wrong = {k for k in set(got) & set(want) if not same_value(got[k], want[k])}
        if missing or extra or wrong:
            raise AssertionError(f"{name}: missing {missing} extra {extra} wrong {wrong}")
    if "allocinfo_inaccurate" in families:
        got = {
            (s.labels["file"], s.labels["line"], s.labels["function"], s.labels["module"])
            for s in families["allocinfo_inaccurate"].samples
        }
        want = {k for k, v in sites.items() if v[2]}
        if got != want:
            raise AssertionError(f"allocinfo_inaccurate: {got} != {want}")
    print(f"{fmt}: {len(sites)} sites, {sum(len(f.samples) for f in families.values())} samples")


if __name__ == "__main__":
    main()
