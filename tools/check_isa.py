#!/usr/bin/env python3
"""tools/check_isa.py - fails when a library has AVX2 or AVX-512 code outside the kernels that run
only after the CPUID check.

dezero builds its host kernels once per instruction-set level, each copy in a namespace of its own
(isa_sse2, isa_avx2, isa_avx512: dezero/backend/isa_namespace.hpp), and everything else for x86-64.
This script disassembles a shared library (objdump) and looks at every instruction of every function:

  - a function of isa_avx512 (or named *_avx512) may use anything;
  - a function of isa_avx2 (or named *_avx2 / *_f16c) may use VEX-encoded instructions (AVX, AVX2,
    FMA, F16C, BMI), never EVEX (AVX-512);
  - any other function only what x86-64 (SSE2) has: no VEX, no EVEX, no SSE3 / SSSE3 / SSE4
    (the 0F 38 and 0F 3A opcode maps), no POPCNT, LZCNT, TZCNT or MOVBE.

The encoding is read from the bytes (legacy prefixes skipped; C4 / C5 start a VEX instruction, 62
an EVEX one, in 64-bit mode always), not guessed from the mnemonic. Prints each function that breaks
its rule with its first offending instruction, then a count per level; exit status 1 when any broke.

  python3 tools/check_isa.py LIB.so [LIB.so ...]
  python3 tools/check_isa.py --self-test     (builds a small library with one function of each kind,
                                             two of them wrong, and checks that exactly those fail)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LEGACY_PREFIXES = {0x66, 0x67, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0xF0}
SSE3_MNEMONICS = {"addsubps", "addsubpd", "haddps", "haddpd", "hsubps", "hsubpd", "lddqu", "movddup",
                  "movshdup", "movsldup"}
LEVELS = ["baseline", "avx2", "avx512"]

FUNC = re.compile(r"^[0-9a-f]+ <(.*)>:$")
INSN = re.compile(r"^\s*[0-9a-f]+:\t([0-9a-f ]+)\t(\S+)?(.*)$")


def needs(raw, mnemonic):
    """The lowest level of LEVELS (index) that has this instruction; with the reason."""
    b = raw
    i = 0
    while i < len(b) and b[i] in LEGACY_PREFIXES:
        i += 1
    if i >= len(b):
        return 0, ""
    lead = b[i]
    if lead == 0x62:
        return 2, "EVEX (AVX-512)"
    if lead in (0xC4, 0xC5):
        return 1, "VEX (AVX/AVX2/FMA/F16C/BMI)"
    j = i
    if 0x40 <= b[j] <= 0x4F:  # REX
        j += 1
    if j + 1 < len(b) and b[j] == 0x0F and b[j + 1] in (0x38, 0x3A):
        return 1, "0F 38 / 0F 3A map (SSSE3, SSE4, MOVBE, CRC32)"
    prefixes = b[:i]
    if j + 1 < len(b) and b[j] == 0x0F and b[j + 1] in (0xB8, 0xBC, 0xBD) and 0xF3 in prefixes:
        return 1, "POPCNT / TZCNT / LZCNT"
    if mnemonic in SSE3_MNEMONICS:
        return 1, "SSE3"
    return 0, ""


def allowed(name):
    """The highest level a function may use, from its demangled name."""
    # (objdump leaves some names mangled, e.g. a lambda's static invoker: 10isa_avx512...)
    if "isa_avx512" in name:
        return 2
    if "isa_avx2" in name:
        return 1
    base = name.replace("(anonymous namespace)", "").split("(", 1)[0]
    base = re.sub(r"\[clone [^\]]*\]", "", base).strip()
    last = re.split(r"[: ]", base)[-1]
    if last.endswith("_avx512"):
        return 2
    if last.endswith("_avx2") or last.endswith("_f16c"):
        return 1
    return 0


def check(path):
    out = subprocess.run(["objdump", "-d", "-C", "--insn-width=16", "-w", path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"check_isa: objdump failed on {path}: {out.stderr.strip()}")
    bad = {}
    counts = [0, 0, 0]
    func, level, used = None, 0, 0
    for line in out.stdout.splitlines():
        m = FUNC.match(line)
        if m:
            if func is not None:
                counts[used] += 1
            func, level, used = m.group(1), allowed(m.group(1)), 0
            continue
        m = INSN.match(line)
        if not m or func is None:
            continue
        raw = bytes(int(x, 16) for x in m.group(1).split())
        lvl, why = needs(raw, m.group(2) or "")
        used = max(used, lvl)
        if lvl > level and func not in bad:
            bad[func] = (lvl, why, (m.group(2) or "") + m.group(3))
    if func is not None:
        counts[used] += 1
    print(f"check_isa: {path}: {sum(counts)} functions; the highest level each uses: "
          f"{counts[0]} x86-64, {counts[1]} AVX2 (VEX), {counts[2]} AVX-512 (EVEX)")
    for f, (lvl, why, insn) in sorted(bad.items()):
        print(f"  NOT ALLOWED: {f}\n      uses {why}: {insn.strip()}\n      but may use only "
              f"{['x86-64 (SSE2)', 'AVX2', 'AVX-512'][allowed(f)]} (it is not in an isa_* namespace of its level)")
    return len(bad)


SELF_TEST = r"""
#include <immintrin.h>
namespace dezero { namespace detail { namespace cpu { namespace isa_avx512 {
__attribute__((target("avx512f"))) void ok512(float* p) { _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16))); }
}
namespace isa_avx2 {
__attribute__((target("avx512f"))) void bad_in_avx2(float* p) { _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16))); }
__attribute__((target("avx2,fma"))) void ok2(float* p) { _mm256_storeu_ps(p, _mm256_fmadd_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), _mm256_loadu_ps(p + 16))); }
}}}}
__attribute__((target("avx2"))) void bad_outside(float* p) { _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8))); }
void ok_plain(float* p) { p[0] += p[1]; }
"""


def self_test():
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        sys.exit("check_isa --self-test: no C++ compiler")
    with tempfile.TemporaryDirectory() as d:
        src, lib = os.path.join(d, "t.cpp"), os.path.join(d, "libt.so")
        with open(src, "w") as f:
            f.write(SELF_TEST)
        subprocess.run([cxx, "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
        out = subprocess.run([sys.executable, __file__, lib], capture_output=True, text=True)
        print(out.stdout, end="")
        flagged = set(re.findall(r"NOT ALLOWED: (\S+?)\(", out.stdout))
        want = {"dezero::detail::cpu::isa_avx2::bad_in_avx2", "bad_outside"}
        if out.returncode != 1 or flagged != want:
            sys.exit(f"check_isa --self-test: FAILED: flagged {sorted(flagged)} (exit {out.returncode}), "
                     f"expected {sorted(want)} (exit 1)")
    print("check_isa --self-test: passed (the two misplaced functions were flagged, the three others not)")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bad = sum(check(p) for p in sys.argv[1:])
    if bad:
        print(f"check_isa: {bad} function(s) use instructions their CPU may lack (see above); hint: put the code "
              "in the kernels' namespace (DEZERO_ISA_BEGIN), or make the shared helper inline in it")
        sys.exit(1)
    print("check_isa: passed")


if __name__ == "__main__":
    main()
