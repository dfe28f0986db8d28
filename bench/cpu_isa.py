"""bench/cpu_isa.py - which instruction-set level the benchmarks run at, for us and for the rivals.

Our library picks its kernels from CPUID at run time (dezero::cpu_info(); DEZERO_CPU_ISA caps the
level). The rivals must be given kernels this CPU can run, never more: OpenBLAS's SkylakeX kernels die
with SIGILL on a CPU without AVX-512. Every comparison script takes `--isa LEVEL` (default: the best
level this CPU has) and runs both sides at that level:

  ours                DEZERO_CPU_ISA=LEVEL (and oneDNN, which it caps itself)
  LibTorch, PyTorch   OPENBLAS_CORETYPE (SkylakeX / Haswell / Nehalem), ATEN_CPU_CAPABILITY
                      (avx512 / avx2 / default), ONEDNN_MAX_CPU_ISA (their oneDNN)

`--isa avx2` on an AVX-512 machine measures both sides' AVX2 kernels there: a stand-in for an AVX2-only
CPU (the same cores, half the vector width), which the figures must say.
"""
import os

LEVELS = ["sse4", "avx2", "avx512", "avx512_bf16", "amx"]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def best_level(flags=None):
    """The highest level of LEVELS that this CPU runs (the same rule as dezero::cpu_info())."""
    f = cpu_flags() if flags is None else flags
    if not {"avx2", "fma", "f16c", "bmi2"} <= f:
        return "sse4"
    if not {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= f:
        return "avx2"
    if "amx_bf16" in f and "amx_tile" in f:
        return "amx"
    if "avx512_bf16" in f:
        return "avx512_bf16"
    return "avx512"


def check_level(level):
    """Exits with a message when `level` is not one this CPU runs."""
    best = best_level()
    if level not in LEVELS:
        raise SystemExit(f"--isa {level}: not one of {', '.join(LEVELS)}")
    if LEVELS.index(level) > LEVELS.index(best):
        raise SystemExit(f"--isa {level}: this CPU ({cpu_model()}) runs at most {best}")
    return level


def describe(level):
    best = best_level()
    note = "" if level == best else f", capped from {best}"
    return f"{cpu_model()}; ISA level {level}{note}"


def ours_env(level, env=None):
    e = dict(os.environ if env is None else env)
    e["DEZERO_CPU_ISA"] = level
    return e


def rival_env(level, env=None):
    """OpenBLAS, ATen and oneDNN in the rivals, capped at `level` (never above what the CPU has)."""
    e = dict(os.environ if env is None else env)
    i = LEVELS.index(level)
    if i >= LEVELS.index("avx512"):
        e["OPENBLAS_CORETYPE"] = "SkylakeX"
        e["ATEN_CPU_CAPABILITY"] = "avx512"
        e["ONEDNN_MAX_CPU_ISA"] = {"avx512": "AVX512_CORE_VNNI", "avx512_bf16": "AVX512_CORE_BF16",
                                   "amx": "AVX512_CORE_AMX"}[level]
    elif level == "avx2":
        e["OPENBLAS_CORETYPE"] = "Haswell"
        e["ATEN_CPU_CAPABILITY"] = "avx2"
        e["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    else:
        e["OPENBLAS_CORETYPE"] = "Nehalem"
        e["ATEN_CPU_CAPABILITY"] = "default"
        e["ONEDNN_MAX_CPU_ISA"] = "SSE41"
    return e
