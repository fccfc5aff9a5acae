#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make refresh: write edits of upstream files in the tested tree into the
base's diffs.

    refresh.py BASEDIR PRISTINE SRC TARBALL BASE_DIR [--patch SLUG] [FILE...]

Files of ours are edited in the repo, where they are.  An upstream file
exists whole only in the tested tree (SRC, which make tree lays), so a hook
is edited there and its change written back into the diff of one patch:

- With no FILE, every upstream file the base's diffs change whose content
  in SRC is no longer what make tree laid.
- FILE names an upstream file no diff changes yet (a new hook); --patch
  says which patch takes it.  SRC's file may still be a hard link to the
  pristine tree, edited through it: the pristine file is then taken again
  from the base's tarball and the link broken.

The edit goes to --patch SLUG, else to the last patch whose diff changes the
file.  The patch's diff for the file becomes the difference between the
file as the patches before it leave it and SRC's file with the changes of
the patches after it taken out again (which must still apply in reverse).
Other files' sections of the diff are kept as they are.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seriesmap  # noqa: E402


class RefreshError(Exception):
    pass


def apply(workdir, diff_text, reverse=False):
    with tempfile.NamedTemporaryFile('w', suffix='.diff', delete=False) as fh:
        fh.write(diff_text)
        name = fh.name
    try:
        args = ['git', 'apply', '--whitespace=nowarn'] + (['-R'] if reverse else []) + [name]
        r = subprocess.run(args, cwd=workdir, capture_output=True, text=True,
                           env=dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(workdir)))
        return r.returncode == 0, r.stderr.strip()
    finally:
        os.unlink(name)


def section_for(path, t, pristine):
    """A diff --git section changing path from t/old/path to t/new/path,
    as git diff writes it in the kernel tree (its .gitattributes: function
    names in the hunk headers)."""
    attrs = os.path.join(pristine, '.gitattributes')
    r = subprocess.run(['git', '-c', 'core.attributesFile=' + attrs, 'diff', '--no-index', '--no-color', '--abbrev=9',
                        '--src-prefix=a/', '--dst-prefix=b/', 'old/' + path, 'new/' + path],
                       cwd=t, capture_output=True, text=True,
                       env=dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(t)))
    if r.returncode == 0:
        return ''
    if r.returncode != 1:
        raise RefreshError(f'diff {path}: {r.stderr.strip()}')
    out = r.stdout.replace(f'a/old/{path}', f'a/{path}').replace(f'b/new/{path}', f'b/{path}')
    return out


def pristine_text(pristine, src, tarball, base_dir, f):
    """The pristine content of f, repairing a pristine file edited through
    its hard link in SRC."""
    p, s = os.path.join(pristine, f), os.path.join(src, f)
    if not os.path.exists(p):
        raise RefreshError(f'{f}: not in the pristine tree (a new file is a file of ours: '
                           'add it to the repo and to a patch in the series map)')
    if os.path.exists(s) and os.path.samefile(p, s):
        with tempfile.TemporaryDirectory() as t:
            r = subprocess.run(['tar', '-C', t, '-xJf', tarball, f'{base_dir}/{f}'],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RefreshError(f'{f}: cannot take it again from {tarball}: {r.stderr.strip()}')
            orig = open(os.path.join(t, base_dir, f), 'rb').read()
        edited = open(s, 'rb').read()
        os.unlink(p)
        open(p, 'wb').write(orig)
        os.unlink(s)
        open(s, 'wb').write(edited)
        print(f'refresh: {f} was edited through its link to the pristine tree: pristine restored')
    return open(p, 'rb').read()


def laid(pristine, diffs, touched, f):
    """f as the base's current diffs leave it."""
    with tempfile.TemporaryDirectory() as t:
        d = os.path.join(t, 'tree')
        os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
        shutil.copyfile(os.path.join(pristine, f), os.path.join(d, f))
        for p in touched[f]:
            ok, err = apply(d, diffs[p][f])
            if not ok:
                raise RefreshError(f'{f}: {p}.diff does not apply: {err}')
        return open(os.path.join(d, f), 'rb').read()


def refresh(basedir, pristine, src, tarball, base_dir, patch, files):
    patches = [p[0] for p in seriesmap.parse(basedir)]
    if patch is not None and patch not in patches:
        raise RefreshError(f'--patch {patch}: not a patch of {basedir}/series')
    diffs = {p: seriesmap.sections(os.path.join(basedir, p + '.diff')) for p in patches}
    touched = {}
    for p in patches:
        for f in diffs[p]:
            touched.setdefault(f, []).append(p)
    if not files:
        files = [f for f in sorted(touched) if os.path.exists(os.path.join(src, f))
                 and open(os.path.join(src, f), 'rb').read() != laid(pristine, diffs, touched, f)]
        if not files:
            print('refresh: no upstream file edited in ' + src)
            return []
    changed = []
    for f in files:
        if f not in touched and patch is None:
            raise RefreshError(f'{f}: no patch changes it yet: say which with PATCH=')
        target = patch or touched[f][-1]
        before = [p for p in patches[:patches.index(target)] if f in diffs[p]]
        after = [p for p in patches[patches.index(target) + 1:] if f in diffs[p]]
        orig = pristine_text(pristine, src, tarball, base_dir, f)
        with tempfile.TemporaryDirectory() as t:
            old_dir, new_dir = os.path.join(t, 'old'), os.path.join(t, 'new')
            for d in (old_dir, new_dir):
                os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
            open(os.path.join(old_dir, f), 'wb').write(orig)
            for p in before:
                ok, err = apply(old_dir, diffs[p][f])
                if not ok:
                    raise RefreshError(f'{f}: {p}.diff does not apply: {err}')
            shutil.copyfile(os.path.join(src, f), os.path.join(new_dir, f))
            for p in reversed(after):
                ok, err = apply(new_dir, diffs[p][f], reverse=True)
                if not ok:
                    raise RefreshError(f'{f}: the edit meets the lines {p}.diff changes, so it '
                                       f'cannot go to {target}: edit {p} instead '
                                       f'(PATCH={p}) ({err})')
            sec = section_for(f, t, pristine)
        if sec == diffs[target].get(f, ''):
            continue
        if sec:
            diffs[target][f] = sec
        else:
            diffs[target].pop(f, None)
        path = os.path.join(basedir, target + '.diff')
        text = ''.join(diffs[target][k] for k in sorted(diffs[target]))
        if text:
            open(path, 'w').write(text)
        elif os.path.exists(path):
            os.unlink(path)
        changed.append((f, target))
        print(f'refresh: {f} -> {os.path.basename(basedir)}/{target}.diff')
    return changed


def main(argv):
    args = argv[1:]
    patch = None
    if '--patch' in args:
        i = args.index('--patch')
        patch = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
        if not patch:
            print('refresh: --patch needs a slug', file=sys.stderr)
            return 2
    if len(args) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    basedir, pristine, src, tarball, base_dir = args[:5]
    try:
        refresh(basedir, pristine, src, tarball, base_dir, patch, args[5:])
    except (RefreshError, seriesmap.MapError) as e:
        print('refresh: ' + str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
