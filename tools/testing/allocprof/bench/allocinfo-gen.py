#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Large /proc/allocinfo inputs for the allocinfo tool's benchmark (allocinfo-bench.sh).

Writes a format 2.0 file of --rows rows to stdout, the same bytes for the same arguments on every
machine (its own PRNG, no Python `random`). The shape follows a real kernel's: a few hundred
directories, most of the sites in built-in code (mm/, kernel/, lib/, fs/, net/) and the rest in
modules named after their directory, several sites per function and several functions per file,
file lines rising through a file, more than half of the rows at 0 bytes and 0 calls, sizes the
slab caches and page orders hand out, a few rows with negative sizes (6.12 after page migration),
wrapped call counts, `accurate:no` and duplicate tags (a macro used twice on one line).

--after gives the same machine later: the same sites with a share of them grown or shrunk, one
module unloaded (its sites gone) and one loaded (new sites), for `allocinfo diff`.
"""

import argparse
import sys

MASK = (1 << 64) - 1


class SplitMix:
    """splitmix64: small, fast enough, and the same stream everywhere."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n

    def unit(self):
        return (self.next() >> 11) / float(1 << 53)


# Directories, whether their code is a module, and their weight in sites.
DIRS = [
    ("mm", False, 40), ("kernel", False, 30), ("kernel/bpf", False, 6), ("kernel/sched", False, 4),
    ("lib", False, 16), ("block", False, 5), ("fs", False, 10), ("fs/proc", False, 3),
    ("fs/kernfs", False, 2), ("security/selinux", False, 4), ("crypto", False, 5),
    ("net/core", False, 14), ("net/ipv4", False, 8), ("net/ipv6", False, 6), ("ipc", False, 2),
    ("drivers/base", False, 4), ("drivers/tty", False, 3), ("drivers/pci", False, 3),
    ("drivers/acpi", False, 4), ("drivers/char", False, 2), ("init", False, 1),
    ("fs/ext4", True, 8), ("fs/xfs", True, 10), ("fs/btrfs", True, 10), ("fs/nfs", True, 5),
    ("fs/fuse", True, 2), ("fs/overlayfs", True, 2), ("net/netfilter", True, 8),
    ("net/bridge", True, 3), ("net/sunrpc", True, 4), ("net/wireless", True, 4),
    ("net/mac80211", True, 6), ("drivers/gpu/drm", True, 6), ("drivers/gpu/drm/i915", True, 6),
    ("drivers/gpu/drm/amd/amdgpu", True, 6), ("drivers/net/ethernet/intel/e1000e", True, 3),
    ("drivers/net/ethernet/intel/ice", True, 3), ("drivers/net/ethernet/mellanox/mlx5/core", True, 4),
    ("drivers/nvme/host", True, 3), ("drivers/scsi", True, 5), ("drivers/md", True, 4),
    ("drivers/usb/core", True, 3), ("drivers/usb/host", True, 3), ("drivers/hid", True, 2),
    ("drivers/input", True, 2), ("drivers/virtio", True, 2), ("drivers/block", True, 3),
    ("sound/core", True, 3), ("sound/pci/hda", True, 3), ("drivers/infiniband/core", True, 2),
    ("drivers/net/wireless/intel/iwlwifi", True, 3), ("drivers/media", True, 4),
    ("virt/kvm", True, 4), ("arch/x86/kvm", True, 4),
]

SYLLABLES = ["alloc", "buf", "page", "slab", "inode", "dev", "queue", "skb", "req", "ctx", "map",
             "node", "tree", "hash", "list", "ring", "desc", "irq", "dma", "msg", "sock", "conn",
             "tbl", "ent", "cache", "pool", "work", "task", "fw", "reg", "init", "probe", "new",
             "get", "add", "open", "load", "bio", "vma", "fd", "key", "obj"]

# Object sizes the slab caches and the page allocator hand out, most common first.
SIZES = [64, 32, 128, 192, 256, 16, 512, 8, 96, 1024, 4096, 2048, 8192, 16384, 32768, 65536,
         131072, 262144, 1048576, 4194304]


def module_name(d):
    """A directory's module: its last component, as Kbuild names most modules."""
    name = d.rsplit("/", 1)[-1].replace("-", "_")
    return {"core": d.split("/")[-2] + "_core", "host": d.split("/")[-2] + "_host"}.get(name, name)


def word(rng, n):
    return "_".join(SYLLABLES[rng.below(len(SYLLABLES))] for _ in range(n))


def sites(rows, seed):
    """The machine's tags, in the kernel's order (built-in first, then module by module):
    (file, line, module, function, duplicate)."""
    rng = SplitMix(seed)
    total = sum(w for _, _, w in DIRS)
    out = []
    for d, is_mod, w in sorted(DIRS, key=lambda x: x[1]):
        mod = module_name(d) if is_mod else None
        want = rows * w // total
        prefix = (mod or d.rsplit("/", 1)[-1]).split("_")[0]
        made = 0
        f = 0
        while made < want:
            # Files hold 1 to ~120 sites, most of them a few.
            per_file = 1 + int(rng.unit() ** 3 * 120)
            stem = word(rng, 1 + (rng.below(4) == 0))
            path = f"{d}/{stem}.c" if rng.below(4) else f"{d}/{prefix}_{stem}.c"
            f += 1
            line = 10 + rng.below(100)
            func = None
            for _ in range(min(per_file, want - made)):
                if func is None or rng.below(3) == 0:
                    name = word(rng, 1 + (rng.below(5) == 0))
                    # Module code prefixes its functions with its name; core code less often.
                    func = f"{prefix}_{name}" if mod or rng.below(2) else f"{name}_{f:x}"
                line += 1 + rng.below(30)
                out.append((path, line, mod, func, rng.below(500) == 0))
                made += 1
    return out


def counters(rng):
    """(bytes, calls, fields) of one row."""
    if rng.below(100) < 55:
        return 0, 0, ""
    r = rng.below(10000)
    if r < 5:  # underflowed after page migration
        return -4096 * (1 + rng.below(64)), 0, ""
    if r < 7:  # a count below zero, printed unsigned
        return 0, (1 << 64) - 1 - rng.below(8), ""
    calls = 1 + int(rng.unit() ** 6 * 200000)
    size = SIZES[min(int(rng.unit() ** 2 * len(SIZES)), len(SIZES) - 1)]
    fields = " accurate:no" if r < 60 else ""
    return calls * size, calls, fields


def later(rng, b, c):
    """The same row some time later."""
    if rng.below(100) >= 30 or c >= 1 << 63:
        return b, c
    per = b // c if c and b > 0 else 64
    d = int((rng.unit() - 0.45) * 2 * (c + 4))
    c2 = max(0, c + d)
    return per * c2, c2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--after", action="store_true", help="the same machine later, for diff")
    a = ap.parse_args()
    tags = sites(a.rows, a.seed)
    mods = sorted({t[2] for t in tags if t[2]})
    gone = mods[a.seed % len(mods)] if a.after else None
    rng = SplitMix(a.seed * 7919 + 1)
    drift = SplitMix(a.seed * 104729 + 3)
    out = sys.stdout
    out.write("allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n")
    buf = []
    for path, line, mod, func, dup in tags:
        b, c, fields = counters(rng)
        if a.after:
            b, c = later(drift, b, c)
        if gone and mod == gone:
            continue
        tag = f"{path}:{line} [{mod}] func:{func}" if mod else f"{path}:{line} func:{func}"
        row = f"{b:12} {c:8} {tag}{fields} \n"
        buf.append(row)
        if dup:
            buf.append(row)
        if len(buf) >= 4096:
            out.write("".join(buf))
            buf.clear()
    if a.after:
        # A module loaded in between: new sites at the end, as the kernel lists them.
        for i in range(len([t for t in tags if t[2] == gone])):
            b, c, _ = counters(drift)
            buf.append(f"{b:12} {c:8} drivers/misc/newmod_{i // 40}.c:{100 + i % 40 * 7} "
                       f"[newmod] func:newmod_{word(drift, 2)} \n")
    out.write("".join(buf))


if __name__ == "__main__":
    main()
