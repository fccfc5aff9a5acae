#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the error unwinding of load_module() in kernel/module/main.c.

Once a step of load_module() has succeeded, every later failure must jump
to a label from which the unwind ladder undoes that step.  For each
(step, undo) pair below: every `goto LABEL` after the step's call must name
a label placed at or above the first label whose code calls the undo.
(patches/0009 once sent a codetag_load_module() failure past
module_arch_cleanup(), which undoes post_relocation().)

Usage: check_unwind.py MAIN_C; prints one line per pair, exits 1 on any
jump that skips an undo.
"""
import re
import sys

# A step of load_module() and the call that undoes it.
PAIRS = [
    ("post_relocation", "module_arch_cleanup"),
]


def function_body(text, name):
    """The body of the function `name` (its definition, not a call)."""
    m = re.search(r"^\w[^\n;]*\b%s\([^;{]*\)\s*\{" % re.escape(name), text, re.M)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def check(text):
    """A list of (ok, message) for each pair."""
    body = function_body(text, "load_module")
    if body is None:
        return [(False, "no load_module() found")]
    labels = [(m.start(), m.group(1))
              for m in re.finditer(r"^\s?(\w+):\s*$", body, re.M)]
    out = []
    for step, undo in PAIRS:
        call = re.search(r"\b%s\(" % step, body)
        if not call:
            out.append((False, "%s: not called" % step))
            continue
        # The first label whose code (up to the next label) calls the undo.
        undo_at = None
        for k, (pos, name) in enumerate(labels):
            end = labels[k + 1][0] if k + 1 < len(labels) else len(body)
            if re.search(r"\b%s\(" % undo, body[pos:end]):
                undo_at = k
                break
        if undo_at is None:
            out.append((False, "%s: no label calls %s()" % (step, undo)))
            continue
        order = {name: k for k, (_, name) in enumerate(labels)}
        ladder = labels[0][0] if labels else len(body)
        # The step's own failure jump comes right after its call.
        after = body.index(";", call.end())
        own = re.match(r"\s*if\s*\([^)]*\)\s*goto\s+\w+;", body[after + 1:])
        start = after + 1 + (own.end() if own else 0)
        bad = []
        for m in re.finditer(r"\bgoto\s+(\w+);", body[start:ladder]):
            target = m.group(1)
            if order.get(target, len(labels)) > undo_at:
                line = body[:start + m.start()].count("\n")
                bad.append("goto %s (line %d of load_module)" % (target, line + 1))
        if bad:
            out.append((False, "%s: failures after it skip %s(): %s"
                        % (step, undo, ", ".join(bad))))
        else:
            out.append((True, "%s: every later failure unwinds through %s()"
                        % (step, undo)))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        text = f.read()
    failed = False
    for ok, msg in check(text):
        print(("ok: " if ok else "FAIL: ") + msg)
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
