#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Read a base's series map (tools/testing/allocprof/linux-<base>/series).

    seriesmap.py BASEDIR REPO steps [--only PREFIX]
        one line per step, in patch order:
            patch SLUG
            add PATH        (a file, directories expanded to their files)
            delete PATH
            diff FILE       (BASEDIR/SLUG.diff, when the patch has one)
        --only PREFIX keeps the adds under PREFIX and nothing else (the
        upstream BASE: pristine plus the conformance suite).
    seriesmap.py BASEDIR REPO check
        every file the repo keeps at a kernel path is added by exactly one
        patch, every add names a file, every patch has a message, and no
        diff touches a file of ours.  Prints the problems; exit 1 if any.

The repo's files are those git tracks (git ls-files), or, outside a git
checkout, those on disk.
"""
import os
import re
import subprocess
import sys

# The project's machinery: kept at these paths, never part of a series.
MACHINERY = ('tools/testing/allocprof/', 'tools/testing/alloc_tag_parse/',
             'tools/allocinfo/', 'Documentation/allocprof/', '.ci/', '.git')
TOP_LEVEL = ('Makefile', 'README', '.gitignore')


class MapError(Exception):
    pass


def repo_files(repo):
    try:
        out = subprocess.run(['git', '-C', repo, 'ls-files', '-z'], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split('\0') if f]
        # Deleted in the working tree but not yet in the index: gone.
        return sorted(f for f in files if os.path.lexists(os.path.join(repo, f)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(repo):
            dirs[:] = [x for x in dirs if x != '.git']
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), repo))
        return sorted(files)


def kernel_files(repo):
    return [f for f in repo_files(repo)
            if not f.startswith(MACHINERY) and f not in TOP_LEVEL]


def parse(basedir):
    """[(slug, [add paths], [delete paths])] in order."""
    path = os.path.join(basedir, 'series')
    patches = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            s = line.split('#', 1)[0].strip()
            if not s:
                continue
            m = re.fullmatch(r'(patch|add|delete)\s+(\S+)', s)
            if not m:
                raise MapError(f'{path}:{n}: not "patch SLUG", "add PATH" or "delete PATH": {s}')
            kind, arg = m.groups()
            if kind == 'patch':
                if not re.fullmatch(r'[0-9]{2}-[A-Za-z0-9_.-]+', arg):
                    raise MapError(f'{path}:{n}: patch slug {arg}: want NN-name')
                if any(p[0] == arg for p in patches):
                    raise MapError(f'{path}:{n}: patch {arg} named twice')
                patches.append((arg, [], []))
            elif not patches:
                raise MapError(f'{path}:{n}: {kind} before the first patch')
            elif arg.startswith('/') or '..' in arg.split('/'):
                raise MapError(f'{path}:{n}: {arg}: want a path inside the tree')
            else:
                patches[-1][1 if kind == 'add' else 2].append(arg)
    if not patches:
        raise MapError(f'{path}: no patch')
    return patches


def expand(add, files):
    if add.endswith('/'):
        return [f for f in files if f.startswith(add)]
    return [f for f in files if f == add]


def steps(basedir, repo, only=None):
    files = kernel_files(repo)
    out = []
    for slug, adds, deletes in parse(basedir):
        out.append(('patch', slug))
        for a in adds:
            got = expand(a, files)
            if not got:
                raise MapError(f'{slug}: add {a}: no such file in the repo')
            out += [('add', f) for f in got if only is None or f.startswith(only)]
        if only is not None:
            continue
        out += [('delete', d) for d in deletes]
        diff = os.path.join(basedir, slug + '.diff')
        if os.path.exists(diff):
            out.append(('diff', diff))
    return out


def sections(path):
    """The diff at path as {file: its section's text}, in the diff's order
    (empty when there is no such diff)."""
    out = {}
    if not os.path.exists(path):
        return out
    cur = None
    with open(path) as fh:
        for line in fh:
            if line.startswith('diff --git a/'):
                cur = line.split()[2][2:]
                out[cur] = ''
            if cur is None:
                raise MapError(f'{path}: text before the first "diff --git"')
            out[cur] += line
    return out


def check(basedir, repo):
    problems = []
    try:
        patches = parse(basedir)
    except MapError as e:
        return [str(e)]
    files = kernel_files(repo)
    owner = {}
    for slug, adds, _ in patches:
        if not os.path.exists(os.path.join(basedir, slug + '.msg')):
            problems.append(f'{slug}: no {slug}.msg')
        for a in adds:
            got = expand(a, files)
            if not got:
                problems.append(f'{slug}: add {a}: no such file in the repo')
            for f in got:
                if f in owner:
                    problems.append(f'{f}: added by {owner[f]} and {slug}')
                owner[f] = slug
        try:
            changed = sections(os.path.join(basedir, slug + '.diff'))
        except MapError as e:
            problems.append(str(e))
            changed = {}
        for f in changed:
            if f in files:
                problems.append(f'{slug}.diff changes {f}, a file of ours: edit it in place')
    for f in files:
        if f not in owner:
            problems.append(f'{f}: at a kernel path but added by no patch of {basedir}/series')
    return problems


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    basedir, repo, cmd = argv[1:4]
    try:
        if cmd == 'steps':
            only = argv[5] if len(argv) > 5 and argv[4] == '--only' else None
            for kind, arg in steps(basedir, repo, only):
                print(kind, arg)
            return 0
        if cmd == 'check':
            problems = check(basedir, repo)
            for p in problems:
                print('seriesmap: ' + p)
            return 1 if problems else 0
    except MapError as e:
        print('seriesmap: ' + str(e), file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
