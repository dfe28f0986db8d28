#!/usr/bin/env python3
"""The README's library-only install recipe (the first ```sh block of "## Install") does what
the README says: three commands (configure, build, install), and the build they configure
compiles the library and nothing else (no test, example or benchmark target).

The configure command runs as written, into a scratch folder instead of `build`; the build
and install are not run here (the consumer and packaging tests build and install the full
tree), so the check costs one CMake configure, a few seconds.

    check_readme_install.py <repo> <scratch> [--readme FILE]
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

# What a library-only build may have: CMake's own targets, `docs`, and the libraries.
CMAKE_OWN = {'all', 'clean', 'depend', 'edit_cache', 'install', 'install/local', 'install/strip',
             'list_install_components', 'package', 'package_source', 'rebuild_cache', 'test', 'docs'}
LIBRARY = re.compile(r'^dezero(_isa_\w+|_mn|_onnx)?$')


def recipe(readme):
    text = open(readme, encoding='utf-8').read()
    at = text.find('\n## Install\n')
    if at < 0:
        sys.exit('check_readme_install: the README has no "## Install" section')
    m = re.search(r'```sh\n(.*?)```', text[at:], re.S)
    if not m:
        sys.exit('check_readme_install: no ```sh block in "## Install"')
    return [line.strip() for line in m.group(1).splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('repo')
    ap.add_argument('scratch')
    ap.add_argument('--readme')
    a = ap.parse_args()
    lines = recipe(a.readme or os.path.join(a.repo, 'README.md'))
    if len(lines) != 3 or not lines[0].startswith('cmake -S . -B build ') or lines[1] != 'cmake --build build -j' \
            or not lines[2].startswith('cmake --install build --prefix '):
        sys.exit('check_readme_install: the recipe is not configure, build, install:\n  ' + '\n  '.join(lines))
    args = shlex.split(lines[0])
    for opt in ('-DDEZERO_BUILD_TESTS=OFF', '-DDEZERO_BUILD_EXAMPLES=OFF', '-DDEZERO_BUILD_BENCH=OFF'):
        if opt not in args:
            sys.exit(f'check_readme_install: the recipe does not pass {opt}')
    shutil.rmtree(a.scratch, ignore_errors=True)
    args[args.index('-B') + 1] = a.scratch
    r = subprocess.run(args, cwd=a.repo, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'check_readme_install: `{lines[0]}` failed:\n{r.stdout}{r.stderr}')
    r = subprocess.run(['cmake', '--build', a.scratch, '--target', 'help'], capture_output=True, text=True, check=True)
    targets = sorted({m.group(1) for m in re.finditer(r'^\.\.\. (\S+)', r.stdout, re.M)})
    shutil.rmtree(a.scratch, ignore_errors=True)
    extra = [t for t in targets if t not in CMAKE_OWN and not LIBRARY.match(t)]
    if 'dezero' not in targets:
        sys.exit('check_readme_install: the recipe builds no `dezero` target; targets: ' + ' '.join(targets))
    if extra:
        sys.exit('check_readme_install: the library-only recipe also builds ' + ' '.join(extra))
    libs = [t for t in targets if t.startswith('dezero')]
    print(f'check_readme_install: the recipe configures {len(targets)} targets, libraries {" ".join(libs)}; '
          'no tests, examples or benchmarks: passed')


if __name__ == '__main__':
    main()
