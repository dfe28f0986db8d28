#!/usr/bin/env python3
"""tools/check_layers.py - fails when an #include under dezero/ breaks the layering.

The rules are the table in dezero/README.md (between the "layers:begin" and
"layers:end" markers): each row gives a rank, a layer name, the files of that
layer (globs relative to dezero/, first matching row wins) and the private headers
of lower layers that the row's files may include. A file may include
  - any header of its own layer,
  - a public header (dezero/CMakeLists.txt's DEZERO_PUBLIC_HEADERS) of a lower rank,
  - a private header of a lower rank that its row names;
and a public header may include only public headers, since nothing else is installed.
Anything else is an edge that runs upward, sideways (cpu <-> cuda) or skips to a
private header, and is reported as file:line.

  python3 tools/check_layers.py [ROOT] [--extra-edge FILE:HEADER ...]

--extra-edge adds an include that is not in the tree (FILE and HEADER relative to
ROOT), so a test can show that a bad edge is caught.
"""
import argparse
import fnmatch
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](dezero/[^">]+)[">]')
SOURCE_EXT = ('.hpp', '.cpp', '.cu', '.cuh', '.h')


def read_rules(readme):
    text = open(readme, encoding='utf-8').read()
    try:
        block = text.split('<!-- layers:begin -->', 1)[1].split('<!-- layers:end -->', 1)[0]
    except IndexError:
        sys.exit(f'check_layers: {readme} has no <!-- layers:begin --> ... <!-- layers:end --> table')
    rules = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 4 or not cells[0].isdigit():
            continue
        rank, name, files, allowed = cells
        rules.append({
            'rank': int(rank),
            'layer': name,
            'files': re.findall(r'`([^`]+)`', files),
            'allowed': re.findall(r'`([^`]+)`', allowed),
        })
    if not rules:
        sys.exit(f'check_layers: no rows in the layer table of {readme}')
    return rules


def read_public(cmakelists):
    text = open(cmakelists, encoding='utf-8').read()
    m = re.search(r'set\(DEZERO_PUBLIC_HEADERS(.*?)\)', text, re.S)
    if not m:
        sys.exit(f'check_layers: no DEZERO_PUBLIC_HEADERS list in {cmakelists}')
    body = re.sub(r'#[^\n]*', '', m.group(1))
    return {'dezero/' + h for h in body.split()}


def rule_of(path, rules):
    rel = path[len('dezero/'):]
    for r in rules:
        if any(fnmatch.fnmatchcase(rel, g) for g in r['files']):
            return r
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('root', nargs='?', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('--extra-edge', action='append', default=[])
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    rules = read_rules(os.path.join(root, 'dezero', 'README.md'))
    public = read_public(os.path.join(root, 'dezero', 'CMakeLists.txt'))

    files = []
    for d, _, names in os.walk(os.path.join(root, 'dezero')):
        for n in names:
            if n.endswith(SOURCE_EXT):
                files.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, '/'))
    files.sort()
    edges = []  # (file, line, header)
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if m:
                    edges.append((f, no, m.group(1)))
    for e in args.extra_edge:
        f, h = e.split(':', 1)
        edges.append((f, 0, h))

    errors = []
    for f in files:
        if rule_of(f, rules) is None:
            errors.append(f'{f}: in no layer of dezero/README.md; hint: add it to a row of the table')
    for p in public:
        if not os.path.exists(os.path.join(root, p)):
            errors.append(f'dezero/CMakeLists.txt: public header {p} does not exist')
    for f, no, h in edges:
        where = f'{f}:{no}' if no else f'{f} (extra edge)'
        src, dst = rule_of(f, rules), rule_of(h, rules)
        if not os.path.exists(os.path.join(root, h)):
            errors.append(f'{where}: includes {h}, which does not exist')
            continue
        if src is None or dst is None:
            continue  # reported above
        if f in public and h not in public:
            errors.append(f'{where}: public header includes the internal {h} ({dst["layer"]}); '
                          'hint: installed headers may include only installed headers')
            continue
        if dst['layer'] == src['layer']:
            continue
        if dst['rank'] >= src['rank']:
            kind = 'sideways' if dst['rank'] == src['rank'] else 'upward'
            errors.append(f'{where}: {src["layer"]} (rank {src["rank"]}) includes {h} of {dst["layer"]} '
                          f'(rank {dst["rank"]}): an {kind} edge')
            continue
        rel = h[len('dezero/'):]
        if h not in public and not any(fnmatch.fnmatchcase(rel, g) for g in src['allowed']):
            errors.append(f'{where}: {src["layer"]} includes {h}, a private header of {dst["layer"]}; '
                          'hint: use that layer\'s public header or its checks, or name the header in '
                          'the table if the edge is meant')
    for e in errors:
        print('check_layers: ' + e)
    n = len(edges)
    if errors:
        print(f'check_layers: {len(errors)} problem(s) in {len(files)} files, {n} includes')
        return 1
    print(f'check_layers: {len(files)} files, {n} includes, layering holds')
    return 0


if __name__ == '__main__':
    sys.exit(main())
