#!/usr/bin/env python3
"""tools/check_docs.py - checks the API reference that Doxygen wrote (cmake/docs.cmake).

  python3 tools/check_docs.py <docs-dir>

<docs-dir> holds warnings.log, html/ and xml/ (the `docs` target writes <build>/docs). Fails
(exit 1) when warnings.log is not empty (an undocumented public name, a \\param that names no
parameter, a broken reference: each line is printed) or when an internal name (a `detail`
namespace) appears in the pages. On success prints how many public names the reference
documents, by kind, from xml/index.xml.
"""
import collections
import pathlib
import re
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    docs = pathlib.Path(argv[1])
    failed = False

    warnings = [l for l in (docs / "warnings.log").read_text(encoding="utf-8", errors="replace").splitlines() if l.strip()]
    if warnings:
        failed = True
        print(f"check_docs: {len(warnings)} Doxygen warning line(s) in {docs / 'warnings.log'}:")
        def where(line):  # file, line number: the same order in every run
            m = re.match(r"(.*?):(\d+):", line)
            return (m.group(1), int(m.group(2))) if m else (line, 0)
        for line in sorted(warnings, key=where)[:300]:
            print("  " + line)

    html = docs / "html"
    if html.is_dir():
        leaks = sorted({p.name for p in html.glob("*detail*.html")})
        for page in sorted(html.glob("*.html")):
            text = page.read_text(encoding="utf-8", errors="replace")
            if re.search(r"\bdetail::", re.sub(r"<[^>]+>", "", text)):
                leaks.append(page.name)
        if leaks:
            failed = True
            print("check_docs: internal names (detail) appear in the reference: " + ", ".join(sorted(set(leaks))[:20]))

    index = docs / "xml" / "index.xml"
    if not index.is_file():
        print(f"check_docs: {index} is missing (GENERATE_XML)")
        return 1
    root = ET.parse(index).getroot()
    kinds = collections.Counter()
    members = set()
    for compound in root.findall("compound"):
        kind = compound.get("kind")
        if kind in ("class", "struct", "union", "namespace"):
            kinds[kind] += 1
        if kind in ("class", "struct", "union", "namespace"):  # not "file": the same members again
            for m in compound.findall("member"):
                if m.get("refid") not in members:
                    members.add(m.get("refid"))
                    kinds[m.get("kind")] += 1
    total = sum(kinds.values())
    detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    if failed:
        return 1
    print(f"check_docs: no warnings, no internal names; {total} public names documented ({detail})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
