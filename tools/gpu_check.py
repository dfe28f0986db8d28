#!/usr/bin/env python3
"""tools/gpu-check.sh (tools/gpu_check.py) - the GPU check. It runs from a bundle: one compact folder
that holds only what the check needs (libdezero and the libgomp it NEEDs, the test suite,
examples/mnist, mnist_cnn and gan, the W1-W4 benchmarks, bench/compare_pytorch.py, the test data,
Fashion-MNIST, the CTest tests it runs and a copy of this driver), so it can be carried to a GPU
machine that has no compiler, no packages and no network (python3 only), and run from wherever it lands.

In the source tree:
  bash tools/gpu-check.sh --build               # portable build into build-gpu/, staged into gpu-bundle/
  bash tools/gpu-check.sh --stage BUILD OUT [--allow-no-data]
                                                # stage a bundle from any build folder into OUT
  bash tools/gpu-check.sh --dry-run [BUILD]     # stage from BUILD (default build) into a temporary folder
                                                # and check, with a clean environment, that it runs there
In a bundle:
  bash gpu-bundle/gpu-check.sh [--quick | --rest] [--deadline SECONDS]
      on the GPU machine: the checks. By default all of them: the convolution, pooling and batch
      norm tests with cuDNN, one epoch of examples/mnist, W1, the test suite on CUDA (these four are
      --quick, about 4 minutes), then those tests with DEZERO_CUDNN=0, one epoch of mnist_cnn, W2, W4 (also with
      DEZERO_CUDNN=0), W3, one epoch of gan, PyTorch's W1 and W4 when it sees the GPU (these are
      --rest: a second call after --quick). Under a device runner that returns $OUT and the end
      of the output: DEZERO_GPU_CHECK_RUNS=$OUT bash gpu-bundle/gpu-check.sh --quick --deadline 280
  bash gpu-bundle/gpu-check.sh --smoke          # on a machine without a GPU: every program starts and
                                                # the test suite passes on the CPU (what --dry-run runs)
  bash gpu-bundle/gpu-check.sh --libs-only      # the library steps alone, as on the GPU machine
  --deadline SECONDS, counted from the start: a step that would start after it is skipped (SKIP ...
  deadline), and every step's timeout is cut to the time left, so the summary comes before it.

The steps that run the test suite are the build's CTest tests labelled gpu (tests/CMakeLists.txt;
their label gpu_quick or gpu_rest says which half runs them): staging reads them from `ctest
--show-only=json-v1` into the bundle's tests.json (commands relative to the bundle, environment,
timeouts), which the check runs where there is no ctest. The examples and benchmarks are its own.

The check ends with its summary, printed last: one line per step (PASS / FAIL / SKIP, seconds, the
key figure), then the verdict. Exit status: 0 every step that ran passed; 1 a step failed; 2 a
library is missing, nothing else ran; 3 nothing failed, but the deadline skipped steps.

Environment, in a bundle:
  DEZERO_GPU_CHECK_RUNS=DIR   every log (gpu-check.log, the steps' logs, summary.txt, the examples'
                              outputs) goes there; default: runs/ in the bundle. On the device
                              runner: DEZERO_GPU_CHECK_RUNS=$OUT
  DEZERO_CUDA_LIB_PATH=D1:D2  folders searched first for cuBLAS, cuRAND, NVRTC and cuDNN
  DEZERO_CUDNN=0              the GPU check without cuDNN: its absence is then no failure
  DEZERO_GPU_CHECK_ONLY_LIB_PATH=1   search DEZERO_CUDA_LIB_PATH alone (the tests' fake folders)
"""
# Standard library only, Python 3.9 and later: the GPU machine has python3 and nothing else. Programs
# run from argument lists, never through a shell.
import glob, json, os, re, shutil, signal, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BUNDLE_MB = 52   # MiB; what travels to the GPU machine is at most 64 MiB in all (the tree is ~4 MiB)
BINARIES = ["tests/dezero_tests", "examples/mnist", "examples/mnist_cnn", "examples/gan", "bench/w1_mlp_epoch",
            "bench/w2_cnn", "bench/w3_overhead", "bench/w4_resnet50"]
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz"]
LABEL = "gpu"   # the CTest label of the tests a bundle carries
NOISE = r"^[0-9.]+ s: |^Downloading: |^\[#"   # doctest's durations and progress bars, left out of a log's end


def die(msg):
    print(f"gpu-check: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):   # a helper program's output (readelf, ldd, ldconfig), "" when it is not there
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kw).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def readelf(path, tag):   # the values of one dynamic-section tag of an ELF file
    return re.findall(r"\(" + tag + r"\).*\[(.*)\]", run(["readelf", "-d", path]))


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def grep(pattern, text):
    return [line for line in text.splitlines() if re.search(pattern, line)]


def first(pattern, text, group=0):
    m = re.search(pattern, text, re.M)
    return m.group(group) if m else ""


def secs(ms):   # milliseconds, as seconds with one decimal
    return f"{ms // 1000}.{ms % 1000 // 100}"


def mib(nbytes):
    return -(-nbytes // 1048576)


def tree_bytes(top):   # as du -sb
    return os.lstat(top).st_size + sum(os.lstat(os.path.join(d, n)).st_size
                                       for d, dirs, files in os.walk(top) for n in dirs + files)


def path_join(*parts):
    return ":".join(p for p in parts if p)


# --- staging (source tree) ----------------------------------------------------------------------

def ctest_tests(build, out):
    """The build's tests labelled gpu, from its CTest metadata, as the bundle runs them: their paths into
    the build made relative to the bundle ($BUNDLE/...), which must carry them."""
    cache = f"{build}/CMakeCache.txt"
    ctest = first(r"^CMAKE_CTEST_COMMAND:INTERNAL=(.*)$", read(cache) if os.path.exists(cache) else "", 1)
    try:
        meta = json.loads(subprocess.run([ctest or "ctest", "--show-only=json-v1"], cwd=build,
                                         stdout=subprocess.PIPE, check=True, text=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        die(f"stage: cannot read the CTest tests of {build}: {e}")
    tests, real_build = {}, os.path.realpath(build) + "/"
    for t in meta["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if LABEL not in props.get("LABELS", []):
            continue
        cmd = []
        for arg in t["command"]:
            if os.path.isabs(arg) and os.path.realpath(arg).startswith(real_build):
                arg = os.path.relpath(os.path.realpath(arg), real_build)
                if not os.path.exists(f"{out}/{arg}"):
                    die(f"stage: the test {t['name']} runs {arg}, which the bundle does not carry")
                arg = "$BUNDLE/" + arg
            cmd.append(arg)
        if not cmd[0].startswith("$BUNDLE/"):
            die(f"stage: the test {t['name']} runs {cmd[0]}, which is not in {build} (re-configure it: cmake {build})")
        tests[t["name"]] = {"command": cmd, "labels": props["LABELS"], "timeout": int(props.get("TIMEOUT", 1500)),
                            "environment": dict(e.split("=", 1) for e in props.get("ENVIRONMENT", []))}
    missing = sorted(set(CTEST_STEPS) - set(tests))
    if missing:
        die(f"stage: {build} has no CTest test {', '.join(missing)} labelled {LABEL} (re-configure it: cmake {build})")
    return tests


def stage(build, out, allow_no_data=False):
    """Copies what the check needs into OUT, laid out like the build folder (dezero/, tests/, examples/,
    bench/) so the binaries' relative RUNPATHs resolve, and checks that none carries an absolute one."""
    root = os.path.dirname(HERE)
    if not os.path.isdir(build):
        die(f"stage: no build folder {build}")
    build = os.path.abspath(build)
    if not os.path.exists(f"{build}/dezero/libdezero.so"):
        die(f"stage: {build}/dezero/libdezero.so is missing (is {build} a dezero build?)")
    for f in BINARIES:
        if not os.access(f"{build}/{f}", os.X_OK):
            die(f"stage: {build}/{f} is missing (build the tests, examples and benchmarks first)")
    have_data = all(os.path.isfile(f"{FASHION_DIR}/{f}") for f in FASHION_FILES)
    if not have_data and not allow_no_data:
        die(f"stage: Fashion-MNIST is not in {FASHION_DIR} (install Debian's dataset-fashion-mnist)")
    if not have_data:
        print(f"gpu-check: note: Fashion-MNIST is not in {FASHION_DIR}: this bundle has no data/fashion-mnist")
    if os.path.exists(out) and not os.path.isfile(f"{out}/MANIFEST") and os.listdir(out):
        die(f"stage: {out} exists and is not a bundle; not replacing it")
    shutil.rmtree(out, ignore_errors=True)
    for d in ("dezero", "tests", "examples", "bench"):
        os.makedirs(f"{out}/{d}")
    # The library under its soname only (what the binaries NEED): a real file, no symlinks to lose
    # on the way.
    lib = (readelf(f"{build}/dezero/libdezero.so", "SONAME") or [""])[0]
    if not lib:
        die(f"stage: {build}/dezero/libdezero.so has no SONAME")
    elves = [f"dezero/{lib}"] + BINARIES
    for f in elves:
        shutil.copy(f"{build}/{f}", f"{out}/{f}")
    shutil.copytree(f"{root}/tests/data", f"{out}/tests/data")
    for f in ("bench/compare_pytorch.py", "bench/cpu_isa.py", "tools/gpu_check.py", "tools/gpu-check.sh"):
        shutil.copy(f"{root}/{f}", f"{out}/{f.replace('tools/', '')}")
    if have_data:
        shutil.copytree(FASHION_DIR, f"{out}/data/fashion-mnist",
                        ignore=lambda d, names: set(names) - set(FASHION_FILES))
    # The carried copies lose their symbol tables (about 1.5 MB; backtraces keep the dynamic
    # symbols): the bundle then has room under its limit for the CNN example and benchmarks.
    if shutil.which("strip"):
        subprocess.run(["strip", "--strip-unneeded"] + [f"{out}/{f}" for f in elves], check=True)

    # libgomp (OpenMP), which libdezero NEEDs, travels next to it (about 300 KB): a pip-only image
    # may have no libgomp1 (PyTorch's wheels carry their own copy for that reason). libdezero has no
    # RUNPATH of its own (a RUNPATH is not inherited from the binaries), so the check puts dezero/
    # first on its programs' library path.
    gomp = ""
    if "libgomp.so.1" in readelf(f"{out}/dezero/{lib}", "NEEDED"):
        gomp = first(r"^\s*libgomp\.so\.1 => (/\S*)", run(["ldd", f"{build}/dezero/{lib}"]), 1)
        if not gomp:
            die("stage: libdezero NEEDs libgomp.so.1, which does not resolve on this machine")
        shutil.copy(gomp, f"{out}/dezero/libgomp.so.1")

    # Every RUNPATH must be relative to the binary ($ORIGIN/...), and must resolve inside the bundle.
    bad = ""
    for f in elves:
        for entry in filter(None, ":".join(readelf(f"{out}/{f}", "(?:RUNPATH|RPATH)")).split(":")):
            if not entry.startswith("$ORIGIN"):
                bad += f"  {f}: absolute RUNPATH {entry}\n"
            elif not os.path.isdir(os.path.dirname(f"{out}/{f}") + entry[len("$ORIGIN"):]):
                bad += f"  {f}: RUNPATH {entry} does not resolve in the bundle\n"
    if bad:
        die(f"stage: binaries that would not find libdezero.so in the bundle (configure with "
            f"CMAKE_BUILD_RPATH_USE_ORIGIN=ON):\n{bad}")

    with open(f"{out}/tests.json", "w") as f:
        json.dump({"label": LABEL, "tests": ctest_tests(build, out)}, f, indent=1)
    # The sonames libdezero dlopen()s (none in a build without the CUDA backend), as strings(1) shows them.
    with open(f"{out}/dezero/{lib}", "rb") as f:
        sonames = sorted({m.decode() for m in re.findall(
            rb"(?<![\t\x20-\x7e])lib(?:cublas|curand|nvrtc|cudnn)\.so\.[0-9]+(?![\t\x20-\x7e])", f.read())})
    commit = run(["git", "-C", root, "rev-parse", "--short", "HEAD"]).strip() or "unknown"
    if commit != "unknown" and subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD"],
                                              stderr=subprocess.DEVNULL).returncode:
        commit += " (with uncommitted changes)"
    with open(f"{out}/MANIFEST", "w") as f:
        f.write(f"dezero-cpp GPU-check bundle\ncommit: {commit}\n"
                f"staged: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} from {os.path.basename(build)}\n"
                f"cuda-libs: {' '.join(sonames)}\n"
                + (f"libgomp: carried as dezero/libgomp.so.1, from {gomp}\n" if gomp else "libgomp: not NEEDed\n"))
    nbytes = tree_bytes(out)
    print(f"gpu-check: staged {mib(nbytes)}M in {out} ({nbytes} bytes; limit {MAX_BUNDLE_MB} MiB)")
    if mib(nbytes) > MAX_BUNDLE_MB:
        die(f"stage: the bundle is {mib(nbytes)} MiB, over the {MAX_BUNDLE_MB} MiB limit")


# --- finding the libraries (bundle) -------------------------------------------------------------
# The binaries find libdezero.so through their RUNPATH ($ORIGIN/../dezero), libdezero finds the
# bundle's libgomp.so.1 through LD_LIBRARY_PATH (it has no RUNPATH), the tests find their data
# through DEZERO_TEST_DATA_DIR. The CUDA runtime is linked statically; cuBLAS, cuRAND, NVRTC and
# cuDNN are loaded on first use, so the check looks for them (DEZERO_CUDA_LIB_PATH, the CUDA
# toolkit, then the pip wheels of NVIDIA and PyTorch, found through every python it sees and in the
# usual site-packages folders) and puts the folders where it found them on LD_LIBRARY_PATH for
# dezero's own programs only, never for python or PyTorch.

# What one python knows: nvidia/<package>/lib (`nvidia` is a namespace package, so it has no
# __file__), torch/lib, and the same under its site-packages folders (without importing either).
WHEEL_DIRS_PY = """
import glob, importlib.util, os, site
def spec(name):
    try:
        return importlib.util.find_spec(name)
    except Exception:
        return None
nvidia, torch, sites, pats = spec("nvidia"), spec("torch"), [], []
for b in (list(nvidia.submodule_search_locations) if nvidia else []):
    pats += [os.path.join(b, "*", "lib"), os.path.join(b, "*", "lib64")]
if torch and torch.origin:
    pats.append(os.path.join(os.path.dirname(torch.origin), "lib"))
for get in ("getsitepackages", "getusersitepackages"):
    try:
        got = getattr(site, get)()
        sites += [got] if isinstance(got, str) else got
    except Exception:
        pass
for b in sites:
    pats += [os.path.join(b, "nvidia", "*", "lib"), os.path.join(b, "nvidia", "*", "lib64"),
             os.path.join(b, "torch", "lib")]
print("\\n".join(d for p in pats for d in sorted(glob.glob(p)) if os.path.isdir(d)))
"""


def pythons():
    """The interpreters that may see PyTorch or NVIDIA's wheels: python3, python, the active virtual
    environment's and conda environment's, conda's usual one."""
    venv, conda = os.environ.get("VIRTUAL_ENV"), os.environ.get("CONDA_PREFIX")
    found = [shutil.which("python3"), shutil.which("python"), venv and f"{venv}/bin/python",
             conda and f"{conda}/bin/python", "/opt/conda/bin/python"]
    return list(dict.fromkeys(p for p in found if p and os.access(p, os.X_OK)))


def candidate_dirs():
    """Folders that may hold the CUDA libraries, in order: DEZERO_CUDA_LIB_PATH's, the toolkit's, then
    the pip wheels' (nvidia/*/lib, torch/lib) that some python or a usual site-packages folder shows."""
    env = os.environ
    dirs = [d for d in env.get("DEZERO_CUDA_LIB_PATH", "").split(":") if d and os.path.isdir(d)]
    if env.get("DEZERO_GPU_CHECK_ONLY_LIB_PATH") == "1":
        return dirs
    subs = ("lib64", "lib", "targets/x86_64-linux/lib")
    dirs += [d for d in [f"/usr/local/cuda/{s}" for s in subs] + [d for s in subs for d in sorted(glob.glob(
             f"/usr/local/cuda-*/{s}"))] if os.path.isdir(d)]
    for py in pythons():
        dirs += run([py, "-c", WHEEL_DIRS_PY], timeout=30).split("\n")
    for pre in filter(None, ["/usr", "/usr/local", "/opt/conda", env.get("HOME", "/nonexistent") + "/.local",
                             env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX")]):
        for sp in sorted(glob.glob(f"{pre}/lib/python3*/site-packages")) + sorted(glob.glob(
                f"{pre}/lib/python3*/dist-packages")) + [f"{pre}/lib/python3/dist-packages"]:
            for pat in ("nvidia/*/lib", "nvidia/*/lib64", "torch/lib"):
                dirs += [d for d in sorted(glob.glob(f"{sp}/{pat}")) if os.path.isdir(d)]
    return [d for d in dirs if d]


LIB_LABELS = [("libcublasLt.", "cuBLASLt"), ("libcublas.", "cuBLAS"), ("libcurand.", "cuRAND"),
              ("libnvrtc-builtins", "NVRTC's builtins"), ("libnvrtc.", "NVRTC"), ("libcudnn.", "cuDNN")]


def lib_label(name):
    return next((label for prefix, label in LIB_LABELS if name.startswith(prefix)), name)


# --- the run: steps, deadline, summary (bundle) --------------------------------------------------

class Stop(Exception):
    """The check stops here (exit 2): a library is missing, nothing else runs."""


class Check:
    def __init__(self, bundle, mode="gpu", scope="full"):
        self.start = time.monotonic()
        self.bundle, self.mode = bundle, mode
        self.name = "gpu, libraries only" if mode == "libs" else f"gpu, {scope}" if mode == "gpu" and scope != "full" \
            else mode
        self.data, self.fm = f"{bundle}/tests/data", f"{bundle}/data/fashion-mnist"
        self.runs = self.log = self.deadline = self.stop_at = self.proc = self.current = self.searched = None
        self.summary, self.nfail, self.ncut, self.stopped = [], 0, 0, ""
        self.gomp_dir = self.gomp_tmp = self.dz_ld = self.torch_py = self.torch_state = ""
        self.tests = json.loads(read(f"{bundle}/tests.json"))["tests"] if os.path.exists(f"{bundle}/tests.json") else {}
        self.new_step()

    def new_step(self):   # what the running step found: failures, a deadline cut, a skip, its figure
        self.fails, self.cut, self.skip_why, self.figure = [], False, "", ""

    def say(self, *lines):   # the console, and gpu-check.log
        for line in lines:
            print(line, flush=True)
            if self.log:
                self.log.write(line + "\n")
                self.log.flush()

    def set_deadline(self, seconds):
        # The programs stop a reserve before it (10 %, at most 10 s): room for a killed program to go
        # and for the summary.
        self.deadline, self.stop_at = seconds, self.start + seconds - min(seconds * 0.1, 10)

    def left_ms(self):
        return 999999999 if self.stop_at is None else int((self.stop_at - time.monotonic()) * 1000)

    def timed(self, limit, cmd, log=None, env=None):
        """CMD's exit status, under a timeout of LIMIT seconds cut to the time left before the deadline:
        124 when the timeout stopped it (TERM to its process group, as timeout(1)), 137 when it had to
        be killed. When the cut timeout stops it, or the deadline has passed and it does not start, the
        step is marked as cut: it did not fail, it ran out of time."""
        left = self.left_ms()
        if left <= 0:
            self.cut = True
            self.say("(not started: the deadline has passed)")
            return 124
        cut = left < limit * 1000
        with open(log or os.devnull, "w") as out:
            try:
                self.proc = subprocess.Popen(cmd, stdout=out if log else None, env=env, start_new_session=True,
                                             stderr=subprocess.STDOUT if log else None)
            except OSError as e:
                out.write(f"gpu-check: cannot run {cmd[0]}: {e}\n")
                return 127
            try:
                rc = self.proc.wait(left / 1000 if cut else limit)
            except subprocess.TimeoutExpired:
                rc = 124
                self.signal_group(signal.SIGTERM)
                try:
                    self.proc.wait(2 if cut else 5)
                except subprocess.TimeoutExpired:
                    self.signal_group(signal.SIGKILL)
                    self.proc.wait()
                    rc = 137
        self.proc = None
        self.cut = self.cut or (cut and rc in (124, 137))
        return 128 - rc if rc < 0 else rc

    def signal_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass

    def run_dz(self, limit, cmd, log, env=None):
        """One of dezero's programs, with its library search path; nothing else sees that path."""
        full = dict(os.environ, DEZERO_TEST_DATA_DIR=self.data, LD_LIBRARY_PATH=self.dz_ld)
        if not self.dz_ld:
            del full["LD_LIBRARY_PATH"]
        return self.timed(limit, cmd, log, dict(full, **(env or {})))

    def run_test(self, name, log):
        """A CTest test of the bundle's tests.json; its exit status."""
        test = self.tests[name]
        cmd = [self.bundle + a[len("$BUNDLE"):] if a.startswith("$BUNDLE/") else a for a in test["command"]]
        return self.run_dz(test["timeout"], cmd, log, test.get("environment"))

    def fail(self, why):
        if not self.cut:   # what the deadline stopped did not fail
            self.say(f"FAILED: {why}")
            self.fails.append(why)

    def skip(self, why):
        self.skip_why = why
        self.say(f"SKIP: {why}")

    def program_failed(self, rc, limit, what, log):
        """The failure of a program that exited RC, with its log's end."""
        if self.cut:
            return
        self.say(f"{what}: exit {rc}; the end of {log}:")
        lines = [l for l in read(log).splitlines() if not re.search(NOISE + "|MESSAGE: skipped: no CUDA", l)]
        self.say(*("  " + l for l in lines[-40:]))
        self.fail(f"{what} timed out after {limit} s" if rc in (124, 137) else f"{what}: exit {rc}")

    def record(self, state, title, ms, note):
        """One line of the summary (ms None when the step did not run)."""
        t = "-" if ms is None else f"{secs(ms)} s"
        self.summary.append(f"{state:<4} {t:>8}  {title:<28} {note}")
        self.nfail += state == "FAIL"
        self.ncut += state == "SKIP" and note.startswith("deadline")
        self.write_summary()

    def run_step(self, title, method, *args):
        """The step's header, then the step unless the deadline has passed, then its line of the summary."""
        self.new_step()
        left = self.left_ms()
        self.say("")
        if left <= 0:
            self.say(f"== {title}: SKIP, the deadline ({self.deadline} s) has passed")
            return self.record("SKIP", title, None, f"deadline: not started (--deadline {self.deadline})")
        self.say(f"== {title} ({secs(left)} s left)" if self.stop_at else f"== {title}")
        self.current, t0 = title, time.monotonic()
        try:
            method(*args)
        except Stop as e:
            self.stopped = str(e)
        ms, self.current = int((time.monotonic() - t0) * 1000), None
        fig = f" | {self.figure}" if self.figure else ""
        if self.fails:
            self.record("FAIL", title, ms, "; ".join(self.fails) + fig)
        elif self.cut:
            self.record("SKIP", title, ms, f"deadline: stopped unfinished after {secs(ms)} s{fig}")
        elif self.skip_why:
            self.record("SKIP", title, ms, self.skip_why + fig)
        else:
            self.record("PASS", title, ms, self.figure)

    def verdict(self):
        n = len(self.summary)
        if self.stopped:
            return 2, f"STOPPED: {self.stopped}; nothing else ran"
        if self.nfail:
            return 1, f"FAILED ({self.nfail} of {n} steps)"
        if self.ncut:
            return 3, f"INCOMPLETE: nothing failed, but the deadline skipped {self.ncut} of {n} steps"
        return 0, "PASSED"

    def summary_text(self):
        of = f" of a {self.deadline} s deadline" if self.deadline else ""
        return [f"== summary: {secs(int((time.monotonic() - self.start) * 1000))} s{of}; logs in {self.runs}",
                *self.summary, f"gpu-check ({self.name}): {self.verdict()[1]}"]

    def write_summary(self):
        try:
            if self.runs:
                with open(f"{self.runs}/summary.txt", "w") as f:
                    f.write("\n".join(self.summary_text()) + "\n")
        except OSError:
            pass

    def finish(self):
        """The summary and the verdict, printed last (and kept in summary.txt); exits with the status."""
        self.write_summary()
        self.say("", *self.summary_text())
        if self.gomp_tmp:
            shutil.rmtree(self.gomp_tmp, ignore_errors=True)
        sys.exit(self.verdict()[0])

    def on_signal(self, signum, frame):
        """Killed (by the runner's own limit, say): the summary still comes out, the running step as FAIL."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        name = signal.Signals(signum).name
        self.say("", f"gpu-check: {name} received")
        if self.proc:
            self.signal_group(signal.SIGTERM)
        if self.current:
            self.record("FAIL", self.current, None, f"killed by {name} before it ended")
        self.finish()

    # --- the library steps

    def search_dirs(self):   # the candidate folders, each once (by real path)
        if self.searched is None:
            self.searched = list(dict.fromkeys(os.path.realpath(d) for d in candidate_dirs()))
        return self.searched

    def ldd(self, path):   # (exit status, the libraries a binary loads); the loader's own list without ldd
        cmd = ["ldd", path] if shutil.which("ldd") else ["/lib64/ld-linux-x86-64.so.2", "--list", path]
        env = dict(os.environ, LD_LIBRARY_PATH=path_join(self.gomp_dir, os.environ.get("LD_LIBRARY_PATH")))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        return p.returncode, p.stdout

    def ldd_missing(self):   # what ldd cannot resolve in the carried binaries, binary by binary
        missing = ""
        for f in sorted(glob.glob(f"{self.bundle}/dezero/libdezero.so*")) + [f"{self.bundle}/{b}" for b in BINARIES]:
            rc, out = self.ldd(f)
            name = os.path.relpath(f, self.bundle)
            if rc:
                missing += f"  {name}: {out.strip()}\n"
            elif "not found" in out:
                missing += f"  {name}:\n" + "".join(f"    {l.strip()}\n" for l in grep("not found", out))
        return missing

    def step_shared_libs(self):
        if os.path.isfile(f"{self.bundle}/dezero/libgomp.so.1"):
            self.gomp_dir = f"{self.bundle}/dezero"
        missing = self.ldd_missing()
        if not self.gomp_dir and "libgomp.so.1 => not found" in missing:
            # No libgomp on this machine: PyTorch's hashed copy (torch/lib/libgomp-<hash>.so.1) or any in
            # the candidate folders, linked as libgomp.so.1 into a temporary folder that goes first.
            # glibc matches the NEEDED name by the name it loaded the file under (review L1).
            for d in self.search_dirs():
                found = sorted(glob.glob(f"{d}/libgomp.so.1") + glob.glob(f"{d}/libgomp-*.so.1"))
                if found:
                    self.gomp_tmp = self.gomp_dir = tempfile.mkdtemp(prefix="gpu-check-gomp.")
                    os.symlink(found[0], f"{self.gomp_tmp}/libgomp.so.1")
                    self.say(f"libgomp.so.1 is not on this machine, nor in the bundle: using {found[0]} "
                             f"(linked as {self.gomp_tmp}/libgomp.so.1)")
                    missing = self.ldd_missing()
                    break
        if missing:
            self.say("gpu-check: shared libraries not found on this machine (nothing was run):", missing.rstrip())
            libs = sorted(set(re.findall(r"(\S+) => not found", missing)))
            self.fail(f"not found (ldd): {' '.join(libs)} (above)")
            raise Stop("shared libraries not found")
        self.say("every carried binary's shared libraries resolve (ldd)")
        lib = sorted(glob.glob(f"{self.bundle}/dezero/libdezero.so*"))[0]
        gomp = first(r"^\s*libgomp\.so\.1 => (\S+)", self.ldd(lib)[1], 1)
        self.figure = "ldd ok"
        if gomp:
            self.say(f"libgomp.so.1: {gomp}")
            if gomp.startswith(self.bundle + "/"):
                self.figure += "; libgomp from the bundle"
            elif self.gomp_tmp and gomp.startswith(self.gomp_tmp + "/"):
                self.figure += f"; libgomp: {os.readlink(self.gomp_tmp + '/libgomp.so.1')}"
            else:
                self.figure += f"; libgomp: {gomp}"

    def find_cuda_libs(self):
        """The libraries libdezero loads at run time: the folders that hold them (None without the CUDA
        backend), the required ones not found (cuBLAS, cuBLASLt, cuRAND, NVRTC, NVRTC's builtins), and
        cuDNN's soname when it is not found. (cuDNN 9's libcudnn.so.9 loads its sub-libraries,
        libcudnn_cnn.so.9 and the others, from its own folder, which is then on the path too.)"""
        sonames = first(r"^cuda-libs: *(.*)$", read(f"{self.bundle}/MANIFEST"), 1).split()
        if not sonames:
            self.say("libdezero was built without the CUDA backend: no GPU libraries to look for")
            return None, [], ""
        names = []
        for name in sonames:
            names.append(name)
            if name.startswith("libcublas.so."):
                names.append(name.replace("libcublas", "libcublasLt"))
            if name.startswith("libnvrtc.so."):   # its builtins' name is a pattern: libnvrtc-builtins.so.12.*
                names.append(name.replace("libnvrtc.so.", "libnvrtc-builtins.so.") + ".*")
        self.say("searched: " + (" ".join(self.search_dirs()) or "(no folder: no DEZERO_CUDA_LIB_PATH, CUDA "
                                                                 "toolkit or pip wheels of NVIDIA or PyTorch)"))
        system = "" if os.environ.get("DEZERO_GPU_CHECK_ONLY_LIB_PATH") == "1" else run(
            [shutil.which("ldconfig") or "/sbin/ldconfig", "-p"])
        dirs, missing, cudnn_missing = [], [], ""
        for name in names:
            where = next((d for d in self.search_dirs() if glob.glob(f"{d}/{name}")), "")
            found = sorted(glob.glob(f"{where}/{name}"))[0] if where else \
                first(r"^\s*" + re.escape(name).replace(r"\*", "[0-9]*") + r" .*=> (.*)$", system, 1)
            if found and not where:
                found += " (system library path)"
            self.say(f"  {name + ':':<28} {found or 'NOT FOUND'}")
            if where and where not in dirs:
                dirs.append(where)
            if not found and name.startswith("libcudnn.so."):
                cudnn_missing = name
            elif not found:
                missing.append(f"{lib_label(name)} ({name})")
        return dirs, missing, cudnn_missing

    def step_gpu_libs(self):
        gpus = ""
        if self.mode != "smoke":
            listed = run(["nvidia-smi", "-L"]).strip()
            self.say(listed or "(nvidia-smi not found, or it lists no GPU)")
            gpus = re.sub(r" \(UUID.*", "", listed.split("\n")[0])
            driver = first(r"libcuda\.so\.1 .*=> (.*)$", run([shutil.which("ldconfig") or "/sbin/ldconfig", "-p"]), 1)
            self.say(f"driver: {driver or 'libcuda.so.1 is not in the system library path'}")
        dirs, missing, cudnn_missing = self.find_cuda_libs()
        if self.mode == "smoke":
            self.say("(the smoke test runs on the CPU: none of these folders is used)")
            self.dz_ld = path_join(self.gomp_dir, os.environ.get("LD_LIBRARY_PATH"))
            cudnn = [f"cuDNN ({cudnn_missing})"] if cudnn_missing else []
            self.figure = "no CUDA backend in this build" if dirs is None else \
                f"not found: {', '.join(missing + cudnn)} (not needed on the CPU)" if missing or cudnn else \
                "all found (not used on the CPU)"
            return
        where = ":".join(dirs or [])
        self.dz_ld = path_join(self.gomp_dir, where, os.environ.get("LD_LIBRARY_PATH"))
        self.figure = "no CUDA backend in this build" if dirs is None else "cuBLAS, cuRAND, NVRTC" + \
            ("" if cudnn_missing else ", cuDNN") + f" in {where or 'the system library path'}"
        self.figure = f"{gpus}; {self.figure}" if gpus else self.figure
        only = os.environ.get("DEZERO_GPU_CHECK_ONLY_LIB_PATH") == "1"
        looked = " ".join(self.search_dirs()) or "(no folder)"
        if missing:
            self.say(f"gpu-check: not found: {', '.join(missing)}",
                     f"  looked in: {looked}{' (DEZERO_CUDA_LIB_PATH only)' if only else ''}",
                     *([] if only else ["  and the system library path (ldconfig -p)"]),
                     "  DEZERO_CUDA_LIB_PATH=DIR1:DIR2 names the folders that hold them (searched first)")
            self.figure = ""
            self.fail(f"not found: {', '.join(missing)}; looked in {looked}")
            raise Stop(f"not found: {', '.join(missing)}")
        if cudnn_missing and os.environ.get("DEZERO_CUDNN") == "0":
            self.say("cuDNN is not found, and DEZERO_CUDNN=0 asks for the check without it")
            self.figure += "; no cuDNN (DEZERO_CUDNN=0)"
        elif cudnn_missing:
            self.fail(f"cuDNN ({cudnn_missing}) not found; looked in {looked} (DEZERO_CUDNN=0 checks without it)")

    # --- the other steps. Each prints what it does, leaves its logs in the runs folder, sets its figure
    # and calls fail or skip.

    def step_starts(self):   # the smoke test: each carried program's cheap mode must start and exit 0
        started, log = 0, f"{self.runs}/start.log"
        for what in ("examples/mnist --help", "examples/mnist_cnn --help", "examples/gan --help",
                     "bench/w1_mlp_epoch --epochs 0 --dataset synthetic", "bench/w3_overhead --steps 10",
                     "bench/w4_resnet50 --batch 1 --warmup 0 --steps 1", "tests/dezero_tests --no-intro --count"):
            rc = self.run_dz(120, [f"{self.bundle}/{what.split()[0]}"] + what.split()[1:], log)
            if rc == 0:
                self.say(f"{what}: ok")
                started += 1
            else:
                self.program_failed(rc, 120, what, log)
        self.figure = f"{started} programs started"

    def step_data_folder(self):
        if not os.path.isdir(self.fm):
            return self.skip("no data/fashion-mnist in this bundle")
        log = f"{self.runs}/mnist-data.log"
        rc = self.run_dz(120, [f"{self.bundle}/examples/mnist", "--device", "cpu", "--epochs", "0", "--dataset",
                               "fashion-mnist", "--data", self.fm], log)
        if rc == 0 and "dataset: Fashion-MNIST" in read(log):
            self.say(f"examples/mnist --data {self.fm} loads Fashion-MNIST from the bundle: ok")
            self.figure = "Fashion-MNIST loads from the bundle"
        elif rc:
            self.program_failed(rc, 120, "examples/mnist --epochs 0", log)
        else:
            self.fail(f"examples/mnist did not load Fashion-MNIST from {self.fm}")
            self.say(*("  " + l for l in read(log).splitlines()))

    def step_fixture_dir(self):
        nowhere, log = f"{self.runs}/no-such-data", f"{self.runs}/fixtures.log"
        self.run_dz(120, [f"{self.bundle}/tests/dezero_tests", "--no-intro", "--source-file=*test_tensor.cpp"], log,
                    {"DEZERO_TEST_DATA_DIR": nowhere})
        if f"fixtures: cannot open {nowhere}/" in read(log):
            self.say(f"with DEZERO_TEST_DATA_DIR={nowhere} the fixtures are looked for there: ok")
            self.figure = "the fixtures are looked for there"
        else:
            self.fail("the tests did not look for their fixtures in DEZERO_TEST_DATA_DIR")

    def test_step(self, name, log, suite=False, before=None):
        """A CTest test: BEFORE(its log's text) first, then its doctest summary, and on failure the log's
        end (for the SUITE, the failures in context and the slowest cases too); (exit status, text)."""
        log = f"{self.runs}/{log}"
        rc = self.run_test(name, log)
        text = read(log)
        if before:
            before(text)
        if rc and suite:   # the failures, without the "skipped" messages and progress bars
            lines = [l for l in text.splitlines() if not re.search(NOISE + "|MESSAGE: skipped", l)]
            hits = [i for i, l in enumerate(lines) if re.search(r"ERROR|error:|exception|timed out", l)]
            keep = sorted({j for i in hits for j in range(max(i - 4, 0), min(i + 7, len(lines)))})
            self.say(*[("--\n" if k and j > keep[k - 1] + 1 else "") + lines[j] for k, j in enumerate(keep)][:150])
        self.say(*grep(r"^\[doctest\]" + ("" if suite else " test cases"), text))
        if suite:
            slow = sorted(grep(r"^[0-9.]+ s: ", text), key=lambda l: float(l.split(" ")[0]), reverse=True)
            self.say("slowest test cases:", *("  " + l for l in slow[:5]),
                     f"test suite: exit {rc} (full output: {log})")
        cases = re.findall(r"^\[doctest\] test cases: *(.*)$", text, re.M)
        self.figure = f"cases {re.sub(' +', ' ', cases[-1])}" if cases else ""
        if rc:
            self.program_failed(rc, self.tests[name]["timeout"], name, log)
        if "skipped: no CUDA device" in text and self.mode != "smoke":
            self.fail("the CUDA cases were skipped: dezero sees no GPU here")
        return rc, text

    def step_suite_cpu(self, name):
        rc, text = self.test_step(name, "tests.log", suite=True)
        skips = len(grep("skipped: no CUDA device", text))
        if rc:
            return
        if skips:
            self.say(f'CUDA cases: {skips} printed "skipped: no CUDA device"')
            self.figure += f"; {skips} CUDA cases skipped"
        else:
            self.fail('no test printed "skipped: no CUDA device"')

    def step_conv_cudnn(self, name):
        def show(text):   # cuDNN's version and timings, and why it was not used
            shown = [re.sub(r"^.*MESSAGE: ", "  ", l) for l in grep(
                r"MESSAGE: (cuDNN [0-9]+ from|cudnn timing:|skipped|cuDNN unavailable)|cuDNN unavailable", text)
                if "skipped: no CUDA device" not in l]
            self.say(*(l for i, l in enumerate(shown) if i == 0 or l != shown[i - 1]))   # as uniq(1)
        rc, text = self.test_step(name, "conv.log", before=show)
        self.figure = f"{first(r'cuDNN [0-9]+(?= from)', text) or 'cuDNN version not printed'}; {self.figure}"
        if cudnn_not_used(text) and os.environ.get("DEZERO_CUDNN") != "0":
            self.fail(f"cuDNN was not used: {cudnn_not_used(text)}")

    def step_conv_no_cudnn(self, name):
        self.test_step(name, "conv-im2col.log")

    def step_suite_gpu(self, name):
        rc, text = self.test_step(name, "tests.log", suite=True)
        if cudnn_not_used(text) and os.environ.get("DEZERO_CUDNN") != "0":
            self.figure += f"; {cudnn_not_used(text)}"

    def program(self, limit, prog, args, log, what="", env=None, show=12):
        """One of the bundle's programs on the device, the end of its log shown; the log's text."""
        rc = self.run_dz(limit, [f"{self.bundle}/{prog}"] + args, f"{self.runs}/{log}", env)
        text = read(f"{self.runs}/{log}")
        if show:
            self.say(*text.splitlines()[-show:])
        if rc:
            self.program_failed(rc, limit, what or prog, f"{self.runs}/{log}")
        return text

    def no_fashion(self):
        if not os.path.isfile(f"{self.fm}/train-images-idx3-ubyte.gz"):
            self.fail(f"the bundle has no Fashion-MNIST ({self.fm})")
            return True
        return False

    def step_mnist(self, ex):   # one epoch of examples/mnist or mnist_cnn: the test accuracy, the epoch's time
        if self.no_fashion():
            return
        text = self.program(300, f"examples/{ex}", ["--device", "cuda", "--epochs", "1", "--dataset", "fashion-mnist",
                                                    "--data", self.fm, "--plot", f"gpu_{ex}.png"], f"{ex}.log", show=0)
        # epoch 1: train loss 0.5, accuracy 0.8 | test loss 0.4, accuracy 0.85 | 12.3 s
        line = (grep(r"^epoch [0-9]+: ", text) or [""])[-1]
        m = re.search(r"\| test loss [^,]*, accuracy ([0-9.]*) \| ([0-9.]*) s", line)
        if line:
            self.say(line)
        self.figure = f"test accuracy {m[1]}, epoch {m[2]} s" if m else line or "no epoch line"

    def step_w1(self):   # on Fashion-MNIST when the bundle has it, else on synthetic images (labelled so)
        data = ["--data", self.fm] if os.path.isdir(self.fm) else ["--dataset", "synthetic"]
        self.figure = epoch_figure(self.program(120, "bench/w1_mlp_epoch", ["--device", "cuda", "--epochs", "2"] + data,
                                                "w1.log"))

    def step_w2(self):
        if not self.no_fashion():
            self.figure = epoch_figure(self.program(120, "bench/w2_cnn", ["--device", "cuda", "--epochs", "2", "--data",
                                                                          self.fm], "w2.log"))

    def step_w3(self):
        text = self.program(120, "bench/w3_overhead", ["--device", "cuda", "--steps", "5000"], "w3.log")
        us = first(r"median ([0-9.e+-]+) us/step", text, 1)
        self.figure = f"median {float(us):.1f} us/step = {float(us) / 1000:.4f} ms/step" if us else "no median line"

    def step_w4(self, kind):   # ResNet50 at batch 8; kind cudnn or im2col (DEZERO_CUDNN=0)
        env, steps = ({"DEZERO_CUDNN": "0"}, "5") if kind == "im2col" else ({}, "10")
        text = self.program(180, "bench/w4_resnet50", ["--device", "cuda", "--steps", steps], f"w4-{kind}.log",
                            f"bench/w4_resnet50 ({kind})", env)
        m = re.search(r"^step: median ([0-9.e+-]+) s/step, best ([0-9.e+-]+) s", text, re.M)
        self.figure = f"median {float(m[1]) * 1000:.1f} ms/step, best {float(m[2]) * 1000:.1f}" if m else "no step line"

    def step_gan(self):
        if self.no_fashion():
            return
        text = self.program(300, "examples/gan", ["--device", "cuda", "--epochs", "1", "--dataset", "fashion-mnist",
                                                  "--data", self.fm, "--out", "gan"], "gan.log", show=3)
        # epoch 1: loss_g 0.7, loss_d 1.3, 468 iterations, 20.1 s; wrote gan/gan_epoch1.png
        m = re.search(r"^epoch [0-9]*: loss_g ([^,]*), loss_d ([^,]*), ([0-9]*) iterations, ([0-9.]*) s",
                      (grep(r"^epoch [0-9]+: loss_g", text) or [""])[-1])
        self.figure = f"epoch {m[4]} s ({m[3]} iterations), loss_g {m[1]}, loss_d {m[2]}" if m else "no epoch line"

    def find_torch(self):   # the python that has torch, and "gpu" when it sees the GPU, else why it is left out
        probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)"
        for py in pythons():
            try:
                if subprocess.run([py, "-c", probe], stderr=subprocess.DEVNULL, timeout=30).returncode == 0:
                    self.torch_py = py
                    break
            except (OSError, subprocess.SubprocessError):
                pass
        if not self.torch_py:
            self.torch_state = "PyTorch is not installed (no python here imports torch)"
            return
        rc = self.timed(120, [self.torch_py, "-c", "import sys, torch\nprint('PyTorch', torch.__version__, 'CUDA', "
                              "torch.version.cuda, 'sees a GPU:', torch.cuda.is_available())\n"
                              "sys.exit(0 if torch.cuda.is_available() else 3)"], f"{self.runs}/pytorch.log")
        lines = read(f"{self.runs}/pytorch.log").splitlines()
        self.say(*lines)
        self.torch_state = "gpu" if rc == 0 else "" if self.cut else f"PyTorch ({self.torch_py}) sees no GPU" \
            if rc == 3 else f"PyTorch ({self.torch_py}) does not import: {(lines or [''])[-1]}"

    def step_pytorch(self, w):
        """PyTorch eager on the same GPU, through bench/compare_pytorch.py. PyTorch keeps its own
        environment; our program there gets DEZERO_LD_LIBRARY_PATH."""
        if not self.torch_state:
            self.find_torch()   # "" again when the deadline cut it: the next step tries again
        script = f"{self.bundle}/bench/compare_pytorch.py"
        if self.cut:
            return
        if self.torch_state != "gpu":
            return self.skip(self.torch_state)
        if f'"{w}"' not in read(script):
            choices = first(r'"--only", choices=\[([^]]*)\]', read(script), 1).replace('"', "")
            return self.skip(f"bench/compare_pytorch.py has no {w} (its --only: {choices})")
        data = ["--data", self.fm] if os.path.isdir(self.fm) else ["--dataset", "synthetic"]
        log = f"{self.runs}/pytorch-{w}.log"
        rc = self.timed(300, [self.torch_py, script, "--build", self.bundle, "--device", "cuda", "--only", w] + data,
                        log, dict(os.environ, DEZERO_LD_LIBRARY_PATH=self.dz_ld))
        text = read(log)
        self.say(*text.splitlines()[-12:])
        row = (grep(f"(?i)^{w} ", text) or [""])[-1].split()   # workload  dezero-cpp  PyTorch  PyTorch/ours
        self.figure = f"{' '.join(row[:-3])}: dezero-cpp {row[-3]}, PyTorch {row[-2]} (PyTorch/ours {row[-1]})" \
            if len(row) >= 4 else f"no {w} row"
        if rc:
            self.program_failed(rc, 300, f"bench/compare_pytorch.py --only {w}", log)


def cudnn_not_used(text):
    """The reason a conv/pool test log gives for cuDNN not being used, if it says so: the library's
    "cuDNN unavailable: <reason>" (a failed cudnnCreate) first, else the tests' "skipped" message."""
    why = first(r"cuDNN unavailable: .*", text) or first(r"(?<=skipped: )cuDNN (is not used|does not load).*", text)
    return why[:300]


def epoch_figure(text):
    """W1 and W2: the last epoch's seconds, and per step (the header says "batch B, N ... images")."""
    m = re.search(r"batch ([0-9]+), ([0-9]+) ", text)
    line = (grep(r"^epoch [0-9]+: [0-9.e+-]+ s", text) or [""])[-1]
    if not line:
        return "no epoch line"
    e, s = line.split(":")[0], line.split(" ")[2]
    k = int(m[2]) // int(m[1]) if m and int(m[1]) > 0 else 0
    return f"{e}: {float(s):.3f} s = {float(s) * 1000 / k:.3f} ms/step ({k} steps)" if k else f"{e}: {s} s"


# The steps after the library ones, in order: (title, scope, method, argument). The test steps run the
# CTest test their argument names (CTEST_STEPS), in the half of the check its label says (gpu_quick or
# gpu_rest). --quick runs the short steps first, then the suite.
CTEST_STEPS = ["gpu_conv_cudnn", "gpu_suite", "gpu_conv_no_cudnn"]
GPU_STEPS = [
    ("conv/pool/BN tests, cuDNN", None, "step_conv_cudnn", "gpu_conv_cudnn"),
    ("MNIST, 1 epoch", "quick", "step_mnist", "mnist"),
    ("W1 MLP epoch", "quick", "step_w1", None),
    ("test suite on CUDA", None, "step_suite_gpu", "gpu_suite"),
    ("conv/pool/BN tests, no cuDNN", None, "step_conv_no_cudnn", "gpu_conv_no_cudnn"),
    ("MNIST CNN, 1 epoch", "rest", "step_mnist", "mnist_cnn"),
    ("W2 small CNN", "rest", "step_w2", None),
    ("W4 ResNet50", "rest", "step_w4", "cudnn"),
    ("W4 ResNet50, no cuDNN", "rest", "step_w4", "im2col"),
    ("W3 overhead", "rest", "step_w3", None),
    ("DCGAN, 1 epoch", "rest", "step_gan", None),
    ("PyTorch W1", "rest", "step_pytorch", "w1"),
    ("PyTorch W4", "rest", "step_pytorch", "w4"),
]
SMOKE_STEPS = [
    ("every program starts", None, "step_starts", None),
    ("MNIST data folder", None, "step_data_folder", None),
    ("DEZERO_TEST_DATA_DIR", None, "step_fixture_dir", None),
    ("test suite (CPU)", None, "step_suite_cpu", "gpu_suite"),
]


def run_bundle(mode, scope, deadline):
    """MODE gpu, smoke or libs (the library steps in GPU mode); SCOPE full, quick or rest (GPU mode)."""
    check = Check(HERE, mode, scope)
    if deadline:
        check.set_deadline(deadline)
    runs = os.environ.get("DEZERO_GPU_CHECK_RUNS") or f"{HERE}/runs"
    try:
        os.makedirs(runs, exist_ok=True)
        writable = os.access(runs, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        wanted, runs = runs, tempfile.mkdtemp(prefix="gpu-check-runs.")
        print(f"gpu-check: {wanted} is not writable: the logs go to {runs}")
    check.runs = os.path.abspath(runs)
    # Everything printed also goes to gpu-check.log; the examples write their files in the runs folder.
    check.log = open(f"{check.runs}/gpu-check.log", "w")
    os.chdir(check.runs)
    signal.signal(signal.SIGTERM, check.on_signal)
    signal.signal(signal.SIGINT, check.on_signal)
    os.environ.setdefault("OMP_NUM_THREADS", "2" if mode == "smoke" else "8")
    cudnn = os.environ.get("DEZERO_CUDNN")
    check.say(*read(f"{HERE}/MANIFEST").splitlines()[:5],
              f"bundle: {HERE} ({mib(tree_bytes(HERE))}M); logs: {check.runs}"
              + (f"; deadline {deadline} s" if deadline else ""),
              f"check: {check.name}" + (f"; DEZERO_CUDNN={cudnn}" if cudnn else ""))

    for title, method in (("shared libraries", check.step_shared_libs), ("GPU libraries", check.step_gpu_libs)):
        check.run_step(title, method)
        if check.stopped:
            check.finish()
    check.say(f"LD_LIBRARY_PATH for dezero's programs: {check.dz_ld or '(none)'}", f"test data: {check.data}")
    for title, step_scope, method, arg in {"smoke": SMOKE_STEPS, "gpu": GPU_STEPS}.get(mode, []):
        if arg in CTEST_STEPS and arg in check.tests:
            step_scope = "quick" if "gpu_quick" in check.tests[arg]["labels"] else "rest"
        if mode == "gpu" and scope not in ("full", step_scope):
            continue
        if method == "step_conv_cudnn" and cudnn == "0":
            title = "conv/pool/BN, DEZERO_CUDNN=0"
        if arg in CTEST_STEPS and arg not in check.tests:
            check.run_step(title, check.fail, f"the bundle's tests.json has no CTest test {arg} (stage it again)")
        else:
            check.run_step(title, getattr(check, method), *([arg] if arg else []))
    check.finish()


# --- the dry run and main (source tree) ---------------------------------------------------------

def dry_run(build):
    tmp = tempfile.mkdtemp()
    try:
        bundle = f"{tmp}/gpu-bundle"
        stage(build, bundle, allow_no_data=True)
        print(f"gpu-check: running the bundle in {bundle} with a clean environment", flush=True)
        proc = subprocess.Popen(["bash", f"{bundle}/gpu-check.sh", "--smoke"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                env={"PATH": "/usr/bin:/bin", "HOME": tmp})
        lines = []
        for line in proc.stdout:   # shown as it comes, kept for the checks below
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        if proc.wait():
            die(f"dry run: the bundle's smoke test failed (exit {proc.returncode})")
        if f"test data: {bundle}/tests/data" not in lines:
            die("dry run: the tests did not read the bundle's data")
        if not os.path.isfile(f"{bundle}/runs/summary.txt"):
            die("dry run: no runs/summary.txt in the bundle")
        if lines[-1:] != ["gpu-check (smoke): PASSED"]:
            die("dry run: the bundle's output does not end with its verdict")
        if not any(l.startswith("== summary: ") for l in lines):
            die("dry run: no summary")
        if "carried" in read(f"{bundle}/MANIFEST") and f"libgomp.so.1: {bundle}/dezero/libgomp.so.1" not in lines:
            die("dry run: libdezero does not load the bundle's libgomp.so.1")
        print(f"gpu-check: dry run PASSED (bundle {mib(tree_bytes(bundle))}M)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(args):
    if os.path.isfile(f"{HERE}/MANIFEST"):   # a bundle
        mode, scope, deadline = "gpu", "full", None
        while args:
            a = args.pop(0)
            if a in ("--smoke", "--libs-only"):
                mode = "smoke" if a == "--smoke" else "libs"
            elif a in ("--quick", "--rest"):
                scope = a[2:]
            elif a == "--deadline" or a.startswith("--deadline="):
                d = (args.pop(0) if args else "") if a == "--deadline" else a[len("--deadline="):]
                if not re.fullmatch(r"[0-9]+", d) or int(d) == 0:
                    die(f"--deadline takes a number of seconds (got '{d}')")
                deadline = int(d)
            elif a in ("-h", "--help"):
                print(__doc__.rstrip())
                return 0
            else:
                die(f"unknown option {a} (in a bundle: [--quick | --rest] [--deadline SECONDS], --smoke, --libs-only; "
                    "see --help)")
        return run_bundle(mode, scope, deadline)

    root, a = os.path.dirname(HERE), args[0] if args else ""
    if a == "--build":
        os.chdir(root)
        subprocess.run(["bash", "-c", "source tools/deps.sh && "
                        'dezero_install_packages "${DEZERO_BUILD_PACKAGES[@]}" dataset-fashion-mnist'], check=True)
        # Without oneDNN: libdnnl.so.2 (40 MB) would not fit the bundle, and the GPU machine may lack it.
        subprocess.run(["cmake", "-S", ".", "-B", "build-gpu", "-DCMAKE_BUILD_TYPE=Release", "-DDEZERO_CUDA=ON",
                        "-DDEZERO_NATIVE=OFF", "-DDEZERO_BENCH_LIBTORCH=OFF", "-DDEZERO_ONEDNN=OFF"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", "build-gpu", f"-j{os.environ.get('JOBS') or os.cpu_count()}"], check=True)
        stage("build-gpu", "gpu-bundle")
        print("gpu-check: carry gpu-bundle/ to the GPU machine and run there:\n"
              "  DEZERO_GPU_CHECK_RUNS=$OUT bash gpu-bundle/gpu-check.sh --quick --deadline 280")
    elif a == "--stage":
        if len(args) != 3 and args[3:] != ["--allow-no-data"]:
            die("usage: tools/gpu-check.sh --stage BUILD_DIR OUT_DIR [--allow-no-data]")
        stage(args[1], args[2], len(args) == 4)
    elif a == "--dry-run":
        if len(args) > 2:
            die("usage: tools/gpu-check.sh --dry-run [BUILD_DIR]")
        dry_run(args[1] if len(args) == 2 else f"{root}/build")
    elif a in ("-h", "--help"):
        print(__doc__.rstrip())
    elif a in ("", "--quick", "--rest", "--deadline", "--smoke", "--libs-only") or a.startswith("--deadline="):
        if not os.path.isfile(f"{root}/gpu-bundle/MANIFEST"):
            die(f"no bundle in {root}/gpu-bundle; make one with: bash tools/gpu-check.sh --build")
        os.execv(sys.executable, [sys.executable, f"{root}/gpu-bundle/gpu_check.py"] + args)
    else:
        die(f"unknown option {a} (see: bash tools/gpu-check.sh --help)")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as e:
        die(f"{' '.join(e.cmd)}: exit {e.returncode}")
