#!/usr/bin/env python3
"""tools/check_op_table.py - fails when a dezero::F function has no row in the op table.

The op table (tests/test_op_table.cpp) runs every F:: function on every device; a
function added to a header without a row there would silently go untested. This script
reads the functions declared in namespace dezero::F in dezero/functions.hpp,
dezero/functions_nn.hpp and dezero/functions/*.hpp (overloads count once: one name,
one or more rows), asks the test binary for the names its rows cover
(DEZERO_OP_TABLE_LIST=1 and the case "op table: the rows*"), and compares:

  - a declared function with no row fails (the table must grow with the headers);
  - a row naming a function that no header declares fails (a stale or misspelt row).

  python3 tools/check_op_table.py ROOT TEST_BINARY [--extra-decl DECLARATION ...] [--drop-header PATH ...]

--extra-decl adds a declaration (its ';' may be left out), parsed as if a header said it
inside `namespace dezero::F { ... }`, so a test can show that a missing row is caught;
--drop-header leaves a header (relative to ROOT) unread, so a test can show that rows
naming functions no header declares are caught.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

IDENT = re.compile(r'(operator\s*(?:\(\)|[^\s(]+)|[A-Za-z_]\w*)\s*$')
NOT_FUNCTIONS = ('using', 'typedef', 'class', 'struct', 'enum', 'union', 'static_assert', 'friend',
                 'namespace', 'extern', 'return')


def strip_comments(text):
    """The text with comments and string/char literals blanked (newlines kept for line numbers)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(''.join('\n' if ch == '\n' else ' ' for ch in text[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def function_name(statement):
    """The name a declaration at namespace scope declares, or None when it declares no function."""
    s = ' '.join(statement.split())
    s = re.sub(r'^(\[\[[^\]]*\]\]\s*)+', '', s)
    while s.startswith('template'):  # template <class T, ...> : skip the balanced <...>
        k = s.find('<')
        if k < 0:
            return None
        depth, j = 0, k
        while j < len(s):
            depth += {'<': 1, '>': -1}.get(s[j], 0)
            if depth == 0:
                break
            j += 1
        s = s[j + 1:].strip()
    first = s.split(' ', 1)[0] if s else ''
    if not s or first in NOT_FUNCTIONS or s.startswith('#'):
        return None
    # the first '(' outside <...>: the name is the identifier just before it
    depth = 0
    for k, ch in enumerate(s):
        if ch == '<':
            depth += 1
        elif ch == '>':
            depth = max(0, depth - 1)
        elif ch == '=' and depth == 0:
            return None  # a variable with an initialiser
        elif ch == '(' and depth == 0:
            m = IDENT.search(s[:k])
            if not m or not s[:m.start()].strip():  # no return type: a macro call, not a declaration
                return None
            return re.sub(r'\s+', '', m.group(1))
    return None


def declared_functions(text, where):
    """{name: [where:line, ...]} of the functions declared at the scope of namespace dezero::F.

    Namespace braces open and close scopes; any other block (a function body, a class, an
    initialiser) is skipped whole, its head recorded when it opens in dezero::F (an inline
    function). Nested namespaces (dezero::F::detail) are not dezero::F.
    """
    text = strip_comments(text)
    found = {}
    scopes = []  # one entry per open namespace brace: the list of names it opened (a::b -> [a, b])
    stmt_start = 0
    i, n = 0, len(text)

    def in_f():
        return [name for scope in scopes for name in scope] == ['dezero', 'F']

    def record(stmt, end):
        name = function_name(stmt)
        if name:
            lead = len(stmt) - len(stmt.lstrip())
            line = text.count('\n', 0, end - len(stmt) + lead) + 1
            found.setdefault(name, []).append(f'{where}:{line}')

    while i < n:
        c = text[i]
        if c == '{':
            head = text[stmt_start:i]
            m = re.search(r'(?:^|\s)(?:inline\s+)?namespace\s*([\w:]*)\s*$', head)
            if m:
                scopes.append(m.group(1).split('::') if m.group(1) else ['(anonymous)'])
                stmt_start = i + 1
                i += 1
                continue
            if in_f():
                record(head, i)
            depth, j = 0, i
            while j < n:
                depth += {'{': 1, '}': -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            i = j + 1
            stmt_start = i
            continue
        if c == '}':
            if scopes:
                scopes.pop()
            stmt_start = i + 1
        elif c == ';':
            if in_f():
                record(text[stmt_start:i], i)
            stmt_start = i + 1
        i += 1
    return found


def headers(root):
    d = os.path.join(root, 'dezero')
    files = sorted(glob.glob(os.path.join(d, 'functions*.hpp')) + glob.glob(os.path.join(d, 'functions', '*.hpp')))
    if not files:
        sys.exit(f'check_op_table: no dezero/functions*.hpp under {root}')
    return [(os.path.relpath(f, root), open(f, encoding='utf-8').read()) for f in files]


def table_rows(binary):
    env = dict(os.environ, DEZERO_OP_TABLE_LIST='1')
    p = subprocess.run([binary, '--no-intro', '--test-case=op table: the rows*'], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    # op-table-row: NAME | ROW ID | KIND [| NOTE]
    rows = [tuple(m.split(' | ')[:2]) for m in re.findall(r'^op-table-row: (.*)$', p.stdout, re.M)]
    if p.returncode != 0 or not rows:
        sys.exit(f'check_op_table: {binary} listed no rows (exit {p.returncode}):\n{p.stdout}')
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('root')
    ap.add_argument('binary')
    ap.add_argument('--extra-decl', action='append', default=[])
    ap.add_argument('--drop-header', action='append', default=[])
    args = ap.parse_args()

    declared = {}
    sources = headers(args.root)
    for h in args.drop_header:
        if h not in [where for where, _ in sources]:
            sys.exit(f'check_op_table: --drop-header {h}: no such header among {[w for w, _ in sources]}')
    sources = [(where, text) for where, text in sources if where not in args.drop_header]
    # (a missing ';' is added: CMake lists make one awkward to pass)
    for k, d in enumerate(args.extra_decl):
        end = '' if d.rstrip().endswith((';', '}')) else ';'
        sources.append((f'(extra declaration {k + 1})', 'namespace dezero::F {\n' + d + end + '\n}\n'))
    for where, text in sources:
        for name, at in declared_functions(text, where).items():
            declared.setdefault(name, []).extend(at)
    if not declared:
        sys.exit('check_op_table: no function declared in namespace dezero::F was found: is the parser broken?')

    rows = table_rows(args.binary)
    covered = {}
    for name, rid in rows:
        covered.setdefault(name, []).append(rid)

    bad = False
    for name in sorted(set(declared) - set(covered)):
        print(f'check_op_table: F::{name} (declared at {declared[name][0]}) has no row in '
              f'tests/test_op_table.cpp: add one (shapes, domain, differentiable arguments)')
        bad = True
    for name in sorted(set(covered) - set(declared)):
        print(f'check_op_table: the rows {covered[name]} name F::{name}, which no header under dezero/ declares')
        bad = True
    ndecl = sum(len(v) for v in declared.values())
    if bad:
        print(f'check_op_table: FAILED ({len(declared)} F:: names, {ndecl} declarations, {len(rows)} rows)')
        return 1
    print(f'check_op_table: {len(declared)} F:: names ({ndecl} declarations, {len(sources)} headers read) '
          f'are covered by {len(rows)} rows: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
