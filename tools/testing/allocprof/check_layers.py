#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fails on a dependency cycle between the files of the Rust core.

Reads every .rs file of a directory (rust/kernel/alloc_tag/ by default) and
finds where each file names another: `super::x` paths (`use super::x::..`,
`use super::{x, y}`, `super::x::f()`; `super::super::x` from an inline
module counts from that module), `crate::alloc_tag::x` paths, and in mod.rs
the paths that start with a child module (`tag::AllocTag`, `pub use
self::tag::..`).  A name that is no file of the directory is an item of
mod.rs, so the edge goes to mod.rs, unless mod.rs re-exports it from a
child (`pub use tag::{AllocTag, Counters}`, `pub(crate) use
rust_sites::tag_for`): then the edge goes to that child, where the item is.  Comments are skipped: doc links may
point anywhere.

Prints the files in dependency order (each after everything it uses) and
exits 0, or prints each cycle found as `cycle: a -> b -> a` and exits 1.
"""
import os
import re
import sys

IDENT = r'[A-Za-z_][A-Za-z0-9_]*'


def strip_comments(text):
    """The text with comments and string literals blanked, newlines kept."""
    raw = re.compile(r'[bc]?r(#*)"')
    char = re.compile(r"'(?:\\.|[^\\'])'")

    def blank(lit):
        return ''.join(ch if ch == '\n' else ' ' for ch in lit)

    out = []
    i, n = 0, len(text)
    depth = 0
    while i < n:
        c = text[i]
        if depth:
            if text.startswith('*/', i):
                depth -= 1
                i += 2
            elif text.startswith('/*', i):
                depth += 1
                i += 2
            else:
                out.append('\n' if c == '\n' else ' ')
                i += 1
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif text.startswith('/*', i):
            depth = 1
            i += 2
        elif raw.match(text, i) and not re.match(r'\w', text[i - 1:i] or ' '):
            m = raw.match(text, i)
            end = text.find('"' + m.group(1), m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(blank(text[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif char.match(text, i):
            m = char.match(text, i)
            out.append(blank(m.group(0)))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def inline_mod_depths(code):
    """For each offset, how many inline `mod x { .. }` blocks enclose it."""
    depth_at = [0] * (len(code) + 1)
    stack = []  # brace depth at which each open inline mod started
    braces = 0
    mods = 0
    i = 0
    for m in re.finditer(r'\bmod\s+' + IDENT + r'\s*\{|\{|\}', code):
        for k in range(i, m.start()):
            depth_at[k] = mods
        i = m.start()
        tok = m.group(0)
        if tok.startswith('mod'):
            braces += 1
            stack.append(braces)
            mods += 1
        elif tok == '{':
            braces += 1
        else:
            if stack and stack[-1] == braces:
                stack.pop()
                mods -= 1
            braces -= 1
    for k in range(i, len(code) + 1):
        depth_at[k] = mods
    return depth_at


def first_names(group):
    """The first path segment of each item of a `{a, b::c, d as e}` group."""
    names, depth, item = [], 0, ''
    for ch in group:
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        if depth == 0 and ch == ',':
            names.append(item)
            item = ''
        elif depth >= 0:
            item += ch
    names.append(item)
    out = []
    for it in names:
        m = re.match(r'\s*(' + IDENT + r')', it)
        if m:
            out.append(m.group(1))
    return out


def brace_group(code, start):
    """The text inside the braces opening at `start`."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == '{':
            depth += 1
        elif code[j] == '}':
            depth -= 1
            if depth == 0:
                return code[start + 1:j]
    return code[start + 1:]


def reexports(code, files):
    """Names mod.rs re-exports from a child: {name: child}."""
    out = {}
    vis = r'\bpub\s*(?:\([^)]*\)\s*)?use\s+(?:self\s*::\s*)?(' + IDENT + r')\s*::\s*'
    for m in re.finditer(vis + r'(\{|' + IDENT + ')', code):
        child = m.group(1)
        if child not in files or child == 'mod':
            continue
        if m.group(2) == '{':
            for n in first_names(brace_group(code, m.start(2))):
                out[n] = child
        else:
            out[m.group(2)] = child
    return out


def references(name, code, files, reexported=None):
    """The files `name` (a module name, 'mod' for mod.rs) refers to."""
    refs = {}
    depth_at = inline_mod_depths(code)
    reexported = reexported or {}

    def add(target, pos):
        if target not in files:
            target = reexported.get(target, 'mod')
        if target != name:
            line = code.count('\n', 0, pos) + 1
            refs.setdefault(target, line)

    # super::...::x from a file (not mod.rs, whose super is the crate).
    if name != 'mod':
        for m in re.finditer(r'(?<![\w:])((?:super\s*::\s*)+)', code):
            k = m.group(1).count('super')
            d = depth_at[m.start()]
            if k != d + 1:
                continue  # inside this file, or outside the core
            rest = m.end()
            if rest < len(code) and code[rest] == '{':
                for n in first_names(brace_group(code, rest)):
                    add(n, m.start())
            elif code.startswith('*', rest):
                add('mod', m.start())
            else:
                mm = re.match(IDENT, code[rest:])
                if mm:
                    add(mm.group(0), m.start())
    # crate::alloc_tag::x from anywhere.
    for m in re.finditer(r'\bcrate\s*::\s*alloc_tag\s*::\s*(\{|' + IDENT + ')',
                         code):
        if m.group(1) == '{':
            for n in first_names(brace_group(code, m.start(1))):
                add(n, m.start())
        else:
            add(m.group(1), m.start())
    # mod.rs: paths that start with a child (or self::child).
    if name == 'mod':
        for m in re.finditer(r'(?<![\w:])(?:self\s*::\s*)?(' + IDENT +
                             r')\s*::', code):
            if m.group(1) in files and m.group(1) != 'mod':
                add(m.group(1), m.start())
        for m in re.finditer(r'\buse\s+(?:self\s*::\s*)?\{', code):
            for n in first_names(brace_group(code, m.end() - 1)):
                if n in files:
                    add(n, m.start())
    return refs


def graph(directory):
    files = {}
    for fn in sorted(os.listdir(directory)):
        if fn.endswith('.rs'):
            with open(os.path.join(directory, fn), encoding='utf-8') as f:
                files[fn[:-3]] = strip_comments(f.read())
    reexported = reexports(files.get('mod', ''), files)
    return {name: references(name, code, files, reexported)
            for name, code in files.items()}


def cycles(g):
    """One cycle per strongly connected component with more than one file."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append((cycle_in(g, set(comp)), sorted(comp)))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def cycle_in(g, comp):
    """A shortest cycle through the first file (by name) of `comp`."""
    start = min(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w in comp and w not in prev:
                prev[w] = v
                queue.append(w)
    return sorted(comp)


def order(g):
    """The files, each after all it uses (ties by name)."""
    done, out = set(), []
    while len(out) < len(g):
        ready = sorted(v for v in g if v not in done and set(g[v]) <= done)
        if not ready:
            break
        done.update(ready)
        out.extend(ready)
    return out


def main(argv):
    directory = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'rust', 'kernel',
        'alloc_tag')
    g = graph(directory)
    found = cycles(g)
    for c, comp in found:
        print('cycle: ' + ' -> '.join(n + '.rs' for n in c))
        for a, b in zip(c, c[1:]):
            print('  %s.rs:%d uses %s.rs' % (a, g[a][b], b))
        if len(comp) > len(c) - 1:
            print('  (one of the cycles between %s)' %
                  ', '.join(n + '.rs' for n in comp))
    if found:
        print('layers: %d cycle(s) between the files of %s' %
              (len(found), directory))
        return 1
    for v in order(g):
        uses = ', '.join(sorted(g[v])) or '-'
        print('%-14s uses %s' % (v + '.rs', uses))
    print('layers: %d files, no cycle' % len(g))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
