// dezero/gpu/libs.hpp - the GPU libraries that libs.cpp loads on first use:
// where they are looked for, where they were found, and the check that every entry
// point dezero calls is there (internal; tests/test_cuda.cpp uses it). Needs no GPU.
//
// The libraries are named "cublas", "curand", "nvrtc" and "cudnn".
#pragma once

#include <string>
#include <vector>

namespace dezero::cuda::detail {

// The paths tried for a library, in order: <dir>/<soname> for each folder of
// `env_path` (DEZERO_CUDA_LIB_PATH's ':'-separated list; may be null; a relative folder is
// skipped, with one warning on stderr: see dezero/env.hpp), the bare soname
// (the loader's search), then <build_dir>/<soname> and <soname> in lib64/ and
// targets/<arch>-linux/lib/ next to build_dir (skipped when build_dir is empty).
std::vector<std::string> library_candidates(const std::string& soname, const std::string& build_dir,
                                            const char* env_path);
// library_candidates() for one of the libraries, with the build's folder and the
// current $DEZERO_CUDA_LIB_PATH.
std::vector<std::string> library_search_paths(const std::string& name);

// dlopen()s the first candidate that loads; DeviceError naming every path tried.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;  // the candidate that loaded, or the file the loader found for a soname
};
OpenedLibrary open_library(const std::string& what, const std::string& soname, const std::string& build_dir);

// Loads a library if it is not loaded yet (NVRTC with its builtins) and returns the
// path it was loaded from; DeviceError when it cannot be loaded.
std::string load_gpu_library(const std::string& name);
// The path a library was loaded from, "" when it has not been loaded (yet). Also
// takes "nvrtc-builtins": "" when NVRTC's builtins were not found next to it.
std::string loaded_library_path(const std::string& name);

// Loads the library and looks up every entry point dezero forwards to it; returns
// one message per missing symbol. DeviceError when the library cannot be loaded.
std::vector<std::string> check_library_entry_points(const std::string& name);
// Loads cuBLAS, cuRAND and NVRTC and looks up every entry point dezero calls; returns
// one message per library or symbol that is missing (empty: all present). cuDNN is
// not checked: nothing requires it until its first user loads it.
std::vector<std::string> check_gpu_libraries();

}  // namespace dezero::cuda::detail
