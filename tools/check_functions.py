#!/usr/bin/env python3
"""tools/check_functions.py - every Function of the library has a stable name and an ONNX fate.

Function::name() is what the exporter's emitters are found by, what a graph plot and a plan's
summary print, and what a model file written by export depends on; a class without its own
name() would fall back to the C++ class name, so renaming the class would change a file format.
This script reads every class under dezero/ that derives from Function (or detail::DualFunction<X>)
and counts, as ggml counts its ops:

  - a Function class whose name() is not its own, returning string literals, fails;
  - a name that is neither an emitter of dezero/onnx/export_ops.cpp (emitters()) nor in its
    not_exported() table fails (a new Function must say how it exports, or why it does not);
  - an emitter or not_exported() entry that names no Function fails (a stale or misspelt entry).

  python3 tools/check_functions.py ROOT [--extra-class FILE:SOURCE]

--extra-class reads SOURCE as if it were part of FILE (relative to ROOT), so a test can show
that a class without a name, or with a name nobody exports, is caught.
"""
import argparse
import os
import re
import sys

CLASS = re.compile(r'^\s*class\s+(\w+)\s*(?:final\s*)?:\s*public\s+((?:detail::)?DualFunction<\w+>|Function)\s*\{', re.M)
NAME = re.compile(r'std::string\s+name\(\)\s*const\s+(?:override|final)[^{]*\{\s*return\s+([^;]*);')
LITERAL = re.compile(r'"([^"\\]*)"')
EMITTER = re.compile(r'^\s*\{"(\w+)",', re.M)


def class_body(text, start):
    i = text.index('{', start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    return text[i:]


def table(text, function):
    """The keys of the map that `function()` of export_ops.cpp returns."""
    start = text.find(function + '() {')
    if start < 0:
        return None
    end = text.find('return table;', start)
    return set(EMITTER.findall(text[start:end]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('root')
    ap.add_argument('--extra-class', action='append', default=[])
    args = ap.parse_args()
    root = args.root
    sources = {}
    for d, _, files in os.walk(os.path.join(root, 'dezero')):
        for f in sorted(files):
            if f.endswith(('.cpp', '.hpp', '.cu', '.cuh')):
                p = os.path.join(d, f)
                sources[os.path.relpath(p, root)] = open(p, encoding='utf-8', errors='replace').read()
    for extra in args.extra_class:
        path, _, src = extra.partition(':')
        sources[path] = sources.get(path, '') + '\n' + src.replace('\\n', '\n') + '\n'

    problems = []
    names = {}  # name -> the classes that give it
    count = 0
    for path, text in sorted(sources.items()):
        for m in CLASS.finditer(text):
            cls = m.group(1)
            if cls == 'DualFunction':  # the CRTP base itself
                continue
            count += 1
            body = class_body(text, m.start())
            n = NAME.search(body)
            literals = LITERAL.findall(n.group(1)) if n else []
            if not literals:
                line = text.count('\n', 0, m.start()) + 1
                problems.append(f'{path}:{line}: Function {cls} has no name() of its own returning a string literal '
                                '(the C++ class name would become part of exported files); hint: '
                                f'std::string name() const override {{ return "{cls}"; }}')
                continue
            for lit in literals:
                names.setdefault(lit, []).append(cls)

    ops = sources.get(os.path.join('dezero', 'onnx', 'export_ops.cpp'), '')
    emitters, not_exported = table(ops, 'emitters'), table(ops, 'not_exported')
    if emitters is None or not_exported is None:
        problems.append('dezero/onnx/export_ops.cpp: emitters() or not_exported() not found')
        emitters, not_exported = emitters or set(), not_exported or set()
    for name, classes in sorted(names.items()):
        if name not in emitters and name not in not_exported:
            problems.append(f'Function {name} ({", ".join(classes)}) has no emitter in dezero/onnx/export_ops.cpp '
                            'and is not in its not_exported() table; hint: write its emitter, or say there '
                            'why it has no ONNX form')
    for name in sorted((emitters | not_exported) - set(names)):
        problems.append(f'dezero/onnx/export_ops.cpp names {name}, which no Function under dezero/ is called')
    both = sorted(emitters & not_exported)
    for name in both:
        problems.append(f'dezero/onnx/export_ops.cpp has {name} both as an emitter and in not_exported()')

    for p in problems:
        print('check_functions: ' + p)
    exported = len(set(names) & emitters)
    print(f'check_functions: {count} Function classes, {len(names)} names: {exported} exported, '
          f'{len(set(names) & not_exported)} not exported (with a reason), {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
