# tools/deps.sh - installs the Debian packages dezero-cpp needs, when missing.
# Sourced by tools/test.sh and tools/mnist.sh. The compiler, CMake and (optionally)
# the CUDA toolkit are expected to be there already.

dezero_install_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dezero: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Build dependencies: Eigen, doctest, zlib, libcurl, stb (image files) and libjpeg (JPEG input;
# loaded at run time), libarchive's headers
# (CIFAR-10's tar.gz; the library itself is loaded at run time); oneDNN (optional to the build:
# float32 CPU convolutions, cmake -DDEZERO_ONEDNN); Graphviz renders graphs; NumPy
# checks that our .npz files load in NumPy.
DEZERO_BUILD_PACKAGES=(libeigen3-dev doctest-dev zlib1g-dev libcurl4-openssl-dev libstb-dev libjpeg62-turbo-dev libarchive-dev libdnnl-dev graphviz python3-numpy)
# The packaging tests (tests/packaging: dezero.pc through pkg-config, cpack -G DEB's Depends
# computed by dpkg-shlibdeps, which needs file): tools/test.sh installs them.
DEZERO_PACKAGING_PACKAGES=(pkgconf dpkg-dev file)
# The API reference (cmake --build build --target docs; the CTest test docs_reference): Doxygen.
DEZERO_DOCS_PACKAGES=(doxygen)
# dezero::mn (data-parallel training, libdezero_mn) and its tests under mpirun: Open MPI; iproute2's
# ip and tc for the simulated cluster of tools/netsim.sh (the mn_netsim test).
DEZERO_MPI_PACKAGES=(libopenmpi-dev openmpi-bin iproute2)
# dezero::onnx (ONNX import and export, libdezero_onnx; optional to the build, -DDEZERO_ONNX) and its
# tests: libonnx and protobuf to build; ONNX's own node tests as the judge (libonnx-testdata);
# OpenCV's dnn as an independent reader of exported models.
DEZERO_ONNX_PACKAGES=(libonnx-dev libprotobuf-dev libonnx-testdata libopencv-dnn-dev)
# ONNX Runtime, the second judge of exported models (CTest onnx_ort, tools/ort_check.sh): node and
# npm, Debian's unless the machine has them already (a NodeSource nodejs carries its own npm, and
# Debian's npm package would conflict with it).
dezero_install_node() {
  command -v node >/dev/null && command -v npm >/dev/null && return 0
  dezero_install_packages nodejs npm
}
# The fuzz targets (tests/fuzz, tools/fuzz.sh): clang with libFuzzer and its OpenMP runtime.
DEZERO_FUZZ_PACKAGES=(clang libclang-rt-dev libomp-dev)
# The examples' figures (examples/common/plot.hpp runs gnuplot; without it they write the
# CSV and the .gp script only): tools/mnist.sh installs it, so the README's main command
# draws mnist_curves.png. tools/test.sh does not: the example tests pass either way (they
# check the PNG files only when gnuplot is found).
DEZERO_PLOT_PACKAGES=(gnuplot-nox)

# nvcc is on PATH on our machines; make sure CMake finds it even when it is only in /usr/local/cuda.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
