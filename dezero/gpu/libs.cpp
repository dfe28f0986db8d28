// dezero/gpu/libs.cpp - cuBLAS, cuRAND, NVRTC and cuDNN are loaded on first use.
//
// libdezero does not link these libraries: linking them made every program that
// uses dezero map and relocate ~250 MB of GPU libraries at start-up (0.26 s and
// 260 MB of RSS for a CPU-only "hello"), and made a CPU-only run fail on a machine
// without them. Instead this file defines, with hidden visibility, each entry point
// the backend calls; the first call dlopen()s the library and forwards to the real
// function. The CUDA runtime itself is linked statically and loads the driver on
// its own.
//
// Where a library is looked for, in order (library_candidates):
//   1. each folder of $DEZERO_CUDA_LIB_PATH (':'-separated; absolute folders only, read with
//      secure_getenv: dezero/env.hpp);
//   2. its soname, through the loader (LD_LIBRARY_PATH, RUNPATH, the ldconfig cache);
//   3. the folder the build found it in, then lib64/ and targets/<arch>-linux/lib/
//      next to that folder (a toolkit's usual layouts).
// After NVRTC, its builtins library (libnvrtc-builtins.so.<major>.<minor>, which NVRTC
// dlopen()s by soname while compiling) is loaded from NVRTC's own folder, so that
// NVRTC finds it however NVRTC itself was found; when it is not there, nothing fails
// until NVRTC needs it, and NVRTC's error then lists the paths tried.
//
// A missing library is a DeviceError that names every path tried, raised from the
// call that needed it: check_gpu_libraries() loads cuBLAS, cuRAND and NVRTC; cuDNN
// is loaded only by its first user. Adding a call to a new entry point elsewhere in
// dezero/cuda fails to link until it is listed here.
#include <cublas_v2.h>
#include <cudnn.h>
#include <curand.h>
#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "dezero/gpu/libs.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"

namespace {

enum Lib { kCublas, kCurand, kNvrtc, kCudnn, kLibCount };

// CMake passes each library's soname and the folder it was found in at build time.
struct LibInfo {
  const char* what;
  const char* key;  // the name detail::load_gpu_library() takes
  const char* soname;
  const char* dir;
  bool checked;  // loaded by check_gpu_libraries()
};
constexpr LibInfo kLibs[kLibCount] = {
    {"cuBLAS", "cublas", DEZERO_CUBLAS_SONAME, DEZERO_CUBLAS_DIR, true},
    {"cuRAND", "curand", DEZERO_CURAND_SONAME, DEZERO_CURAND_DIR, true},
    {"NVRTC", "nvrtc", DEZERO_NVRTC_SONAME, DEZERO_NVRTC_DIR, true},
    {"cuDNN", "cudnn", DEZERO_CUDNN_SONAME, DEZERO_CUDNN_DIR, false},
};

#if defined(__aarch64__)
constexpr const char* kTargetLibDir = "targets/sbsa-linux/lib";
#else
constexpr const char* kTargetLibDir = "targets/x86_64-linux/lib";
#endif

// What has been loaded, kept for the whole process (never destroyed, so forwarders
// called during static destruction still find it).
struct State {
  std::mutex mu;
  void* handles[kLibCount] = {};
  std::string paths[kLibCount];
  std::string builtins_name;                 // libnvrtc-builtins.so.<major>.<minor>
  std::string builtins_path;                 // where it was loaded from ("" when not)
  std::vector<std::string> builtins_tried;  // the paths tried when it was not found
};
State& state() {
  static State* s = new State();  // leaked on purpose
  return *s;
}

bool has_slash(const std::string& p) { return p.find('/') != std::string::npos; }
bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
std::string strip_trailing_slashes(std::string d) {
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}
std::string join(const std::string& dir, const std::string& name) {
  std::string d = strip_trailing_slashes(dir);
  return d == "/" ? d + name : d + "/" + name;
}
std::vector<std::string> split_path_list(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string s = list;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}
// $DEZERO_CUDA_LIB_PATH (dezero/env.hpp: secure_getenv; null when unset or empty).
const char* lib_path_env() { return ::dezero::detail::env_value("DEZERO_CUDA_LIB_PATH"); }
void add_unique(std::vector<std::string>& v, const std::string& p) {
  if (std::find(v.begin(), v.end(), p) == v.end()) v.push_back(p);
}

// The file the loader mapped for `h` (for a library opened by soname).
std::string mapped_path(void* h, const std::string& fallback) {
  link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) return lm->l_name;
  return fallback;
}

// Loads libnvrtc-builtins.so.<major>.<minor> next to the NVRTC that was loaded.
// Called with the state's mutex held.
void load_nvrtc_builtins(State& s, void* nvrtc, const std::string& nvrtc_path) {
  int major = 0, minor = 0;
  auto version = reinterpret_cast<decltype(&nvrtcVersion)>(dlsym(nvrtc, "nvrtcVersion"));
  if (!version || version(&major, &minor) != NVRTC_SUCCESS) {
    s.builtins_tried.push_back("(nvrtcVersion failed: the builtins' name is unknown)");
    return;
  }
  s.builtins_name = "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  std::vector<std::string> dirs;
  char origin[PATH_MAX + 1] = {};
  if (dlinfo(nvrtc, RTLD_DI_ORIGIN, origin) == 0 && origin[0]) add_unique(dirs, origin);
  if (char* real = ::realpath(nvrtc_path.c_str(), nullptr)) {  // NVRTC reached through a symlink
    std::string r = real;
    std::free(real);
    add_unique(dirs, r.substr(0, r.find_last_of('/')));
  }
  std::vector<std::string> cands;
  for (const std::string& d : dirs) add_unique(cands, join(d, s.builtins_name));
  for (const std::string& c : dezero::cuda::detail::library_candidates(s.builtins_name, "", lib_path_env()))
    add_unique(cands, c);
  for (const std::string& c : cands) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      s.builtins_path = has_slash(c) ? c : mapped_path(h, c);
      s.builtins_tried.clear();
      return;
    }
    dlerror();
    s.builtins_tried.push_back(c);
  }
}

void* open_lib(Lib lib) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.handles[lib]) return s.handles[lib];
  const LibInfo& info = kLibs[lib];
  dezero::cuda::detail::OpenedLibrary o = dezero::cuda::detail::open_library(info.what, info.soname, info.dir);
  if (lib == kNvrtc) load_nvrtc_builtins(s, o.handle, o.path);
  s.paths[lib] = o.path;
  s.handles[lib] = o.handle;
  return o.handle;
}

void* symbol(Lib lib, const char* name) {
  void* h = open_lib(lib);
  void* f = dlsym(h, name);
  if (!f)
    throw dezero::DeviceError(std::string("cuda: ") + kLibs[lib].soname + " has no symbol " + name +
                              "; hint: the library is older than the toolkit dezero was built with");
  return f;
}

Lib lib_by_name(const std::string& name) {
  std::string n = name;
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (int i = 0; i < kLibCount; ++i)
    if (n == kLibs[i].key) return static_cast<Lib>(i);
  throw dezero::ValueError("cuda: no GPU library named '" + name + "' (cublas, curand, nvrtc or cudnn)");
}

// Every forwarded entry point, for check_gpu_libraries().
struct Entry {
  Lib lib;
  const char* name;
};
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}
struct Register {
  Register(Lib lib, const char* name) { registry().push_back({lib, name}); }
};

}  // namespace

namespace dezero::cuda::detail {

std::vector<std::string> library_candidates(const std::string& soname, const std::string& build_dir,
                                            const char* env_path) {
  std::vector<std::string> out;
  for (const std::string& d : split_path_list(env_path)) {
    if (d[0] == '/')
      add_unique(out, join(d, soname));
    else  // relative to whatever the working directory is: never searched
      ::dezero::detail::warn_relative_env_entry("DEZERO_CUDA_LIB_PATH", d);
  }
  add_unique(out, soname);
  if (!build_dir.empty()) {
    std::string dir = strip_trailing_slashes(build_dir);
    add_unique(out, join(dir, soname));
    std::string parent = dir.substr(0, dir.find_last_of('/'));
    if (parent.empty()) parent = "/";
    add_unique(out, join(join(parent, "lib64"), soname));
    add_unique(out, join(join(parent, kTargetLibDir), soname));
  }
  return out;
}

OpenedLibrary open_library(const std::string& what, const std::string& soname, const std::string& build_dir) {
  std::string tried;
  for (const std::string& c : library_candidates(soname, build_dir, lib_path_env())) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return {h, has_slash(c) ? c : mapped_path(h, c)};
    const char* e = dlerror();
    tried += "\n  " + c;
    if (!has_slash(c)) tried += " (by soname: LD_LIBRARY_PATH and the ldconfig cache)";
    // a file that is there but cannot be loaded (a missing dependency, another architecture): say why
    if ((!has_slash(c) || file_exists(c)) && e) tried += std::string(": ") + e;
  }
  throw DeviceError("cuda: cannot load " + what + " (" + soname + "); tried:" + tried +
                    "\nhint: set DEZERO_CUDA_LIB_PATH (a ':'-separated list of absolute folders) or "
                    "LD_LIBRARY_PATH to the folder that holds " + soname);
}

std::vector<std::string> library_search_paths(const std::string& name) {
  const LibInfo& info = kLibs[lib_by_name(name)];
  return library_candidates(info.soname, info.dir, lib_path_env());
}

std::string load_gpu_library(const std::string& name) {
  Lib lib = lib_by_name(name);
  open_lib(lib);
  return loaded_library_path(name);
}

std::string loaded_library_path(const std::string& name) {
  State& s = state();
  if (name == "nvrtc-builtins") {
    std::lock_guard<std::mutex> lock(s.mu);
    return s.builtins_path;
  }
  Lib lib = lib_by_name(name);
  std::lock_guard<std::mutex> lock(s.mu);
  return s.paths[lib];
}

std::vector<std::string> check_library_entry_points(const std::string& name) {
  Lib lib = lib_by_name(name);
  void* h = open_lib(lib);
  std::vector<std::string> missing;
  for (const Entry& e : registry())
    if (e.lib == lib && !dlsym(h, e.name))
      missing.push_back(std::string("cuda: ") + kLibs[lib].soname + " has no symbol " + e.name +
                        "; hint: the library is older than the toolkit dezero was built with");
  return missing;
}

std::vector<std::string> check_gpu_libraries() {
  std::vector<std::string> problems;
  for (int i = 0; i < kLibCount; ++i) {
    if (!kLibs[i].checked) continue;
    try {
      for (std::string& m : check_library_entry_points(kLibs[i].key)) problems.push_back(std::move(m));
    } catch (const std::exception& ex) {
      problems.push_back(ex.what());
    }
  }
  return problems;
}

}  // namespace dezero::cuda::detail

// NAME PARAMS forwards to the same function in LIB; the declaration in the library's
// header must match exactly (the compiler checks it).
#define DEZERO_FORWARD(LIB, RET, NAME, PARAMS, ARGS)                                      \
  extern "C" __attribute__((visibility("hidden"))) RET NAME PARAMS {                      \
    using Fn = RET(*) PARAMS;                                                             \
    static Fn fn = reinterpret_cast<Fn>(symbol(LIB, #NAME));                              \
    return fn ARGS;                                                                       \
  }                                                                                       \
  static const Register dz_register_##NAME(LIB, #NAME);

// --- cuBLAS (cublas_v2.h maps cublasCreate / cublasSetStream to the _v2 symbols) ----------
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
           (handle, stream))
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes), (handle, workspace, workspaceSizeInBytes))
DEZERO_FORWARD(kCublas, const char*, cublasGetStatusString, (cublasStatus_t status), (status))
DEZERO_FORWARD(kCublas, const char*, cublasGetStatusName, (cublasStatus_t status), (status))
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasSgemmStridedBatched,
           (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
            const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
            long long int strideB, const float* beta, float* C, int ldc, long long int strideC, int batchCount),
           (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
            batchCount))
DEZERO_FORWARD(kCublas, cublasStatus_t, cublasDgemmStridedBatched,
           (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
            const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
            long long int strideB, const double* beta, double* C, int ldc, long long int strideC, int batchCount),
           (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
            batchCount))

DEZERO_FORWARD(kCublas, cublasStatus_t, cublasGemmEx,
           (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
            const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb,
            const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
            cublasGemmAlgo_t algo),
           (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
            algo))

// --- cuRAND -------------------------------------------------------------------------------
DEZERO_FORWARD(kCurand, curandStatus_t, curandCreateGenerator, (curandGenerator_t * generator, curandRngType_t rng_type),
           (generator, rng_type))
DEZERO_FORWARD(kCurand, curandStatus_t, curandSetStream, (curandGenerator_t generator, cudaStream_t stream),
           (generator, stream))
DEZERO_FORWARD(kCurand, curandStatus_t, curandSetPseudoRandomGeneratorSeed,
           (curandGenerator_t generator, unsigned long long seed), (generator, seed))
DEZERO_FORWARD(kCurand, curandStatus_t, curandSetGeneratorOffset, (curandGenerator_t generator, unsigned long long offset),
           (generator, offset))
DEZERO_FORWARD(kCurand, curandStatus_t, curandGenerateUniform, (curandGenerator_t generator, float* outputPtr, size_t num),
           (generator, outputPtr, num))
DEZERO_FORWARD(kCurand, curandStatus_t, curandGenerateUniformDouble,
           (curandGenerator_t generator, double* outputPtr, size_t num), (generator, outputPtr, num))
DEZERO_FORWARD(kCurand, curandStatus_t, curandGenerateNormal,
           (curandGenerator_t generator, float* outputPtr, size_t n, float mean, float stddev),
           (generator, outputPtr, n, mean, stddev))
DEZERO_FORWARD(kCurand, curandStatus_t, curandGenerateNormalDouble,
           (curandGenerator_t generator, double* outputPtr, size_t n, double mean, double stddev),
           (generator, outputPtr, n, mean, stddev))

// --- NVRTC --------------------------------------------------------------------------------
// When NVRTC could not open its builtins library, its error names the paths tried for it.
extern "C" __attribute__((visibility("hidden"))) const char* nvrtcGetErrorString(nvrtcResult result) {
  using Fn = const char* (*)(nvrtcResult);
  static Fn fn = reinterpret_cast<Fn>(symbol(kNvrtc, "nvrtcGetErrorString"));
  if (result != NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) return fn(result);
  static const std::string* with_builtins = [] {  // built once, after NVRTC was loaded; leaked on purpose
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    std::string m = fn(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE);
    if (s.builtins_path.empty()) {
      std::string name = s.builtins_name.empty() ? "libnvrtc-builtins" : s.builtins_name;
      m += " (" + name + " was not found next to NVRTC (" + s.paths[kNvrtc] + "); tried:";
      for (const std::string& t : s.builtins_tried) m += " " + t;
      m += "; hint: set DEZERO_CUDA_LIB_PATH or LD_LIBRARY_PATH to the folder that holds " + name + ")";
    }
    return new std::string(m);
  }();
  return with_builtins->c_str();
}
static const Register dz_register_nvrtcGetErrorString(kNvrtc, "nvrtcGetErrorString");
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetNumSupportedArchs, (int* numArchs), (numArchs))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetSupportedArchs, (int* supportedArchs), (supportedArchs))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcCreateProgram,
           (nvrtcProgram * prog, const char* src, const char* name, int numHeaders, const char* const* headers,
            const char* const* includeNames),
           (prog, src, name, numHeaders, headers, includeNames))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog), (prog))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcCompileProgram, (nvrtcProgram prog, int numOptions, const char* const* options),
           (prog, numOptions, options))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t* ptxSizeRet), (prog, ptxSizeRet))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char* ptx), (prog, ptx))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t* cubinSizeRet), (prog, cubinSizeRet))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char* cubin), (prog, cubin))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t* logSizeRet), (prog, logSizeRet))
DEZERO_FORWARD(kNvrtc, nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char* log), (prog, log))

// --- cuDNN --------------------------------------------------------------------------------
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle), (handle))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
DEZERO_FORWARD(kCudnn, const char*, cudnnGetErrorString, (cudnnStatus_t status), (status))
DEZERO_FORWARD(kCudnn, size_t, cudnnGetVersion, (void), ())
// descriptors (cudnn_conv.cpp's RAII wrappers)
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * tensorDesc), (tensorDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetTensor4dDescriptor,
           (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c,
            int h, int w),
           (tensorDesc, format, dataType, n, c, h, w))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * filterDesc), (filterDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetFilter4dDescriptor,
           (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c,
            int h, int w),
           (filterDesc, dataType, format, k, c, h, w))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * convDesc),
           (convDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc),
           (convDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetConvolution2dDescriptor,
           (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w,
            cudnnConvolutionMode_t mode, cudnnDataType_t computeType),
           (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetConvolutionMathType,
           (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetConvolutionGroupCount,
           (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount))
// convolution forward, backward data and backward filter, each: the heuristics' list, the
// workspace of one algorithm, the call
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionForwardAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
           (handle, count))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,
           (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t destDesc,
            const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults),
           (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,
           (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
            cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes),
           (handle, xDesc, wDesc, convDesc, yDesc, algo, sizeInBytes))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnConvolutionForward,
           (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
            const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
            cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
            const cudnnTensorDescriptor_t yDesc, void* y),
           (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithmMaxCount,
           (cudnnHandle_t handle, int* count), (handle, count))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,
           (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t gradDesc,
            const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults),
           (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,
           (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
            cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes),
           (handle, wDesc, dyDesc, convDesc, dxDesc, algo, sizeInBytes))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnConvolutionBackwardData,
           (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
            const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
            cudnnConvolutionBwdDataAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
            const cudnnTensorDescriptor_t dxDesc, void* dx),
           (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc, dx))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount,
           (cudnnHandle_t handle, int* count), (handle, count))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
           (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnTensorDescriptor_t diffDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
            const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults),
           (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,
           (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
            const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
            cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes),
           (handle, xDesc, dyDesc, convDesc, gradDesc, algo, sizeInBytes))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnConvolutionBackwardFilter,
           (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
            const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
            cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
            const cudnnFilterDescriptor_t dwDesc, void* dw),
           (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc, dw))
// the forward bias: y += b broadcast over (n, h, w)
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnAddTensor,
           (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc, const void* A,
            const void* beta, const cudnnTensorDescriptor_t cDesc, void* C),
           (handle, alpha, aDesc, A, beta, cDesc, C))
// pooling (cudnn_pool.cpp): the descriptor, its output size, forward and backward
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnCreatePoolingDescriptor, (cudnnPoolingDescriptor_t * poolingDesc),
           (poolingDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnDestroyPoolingDescriptor, (cudnnPoolingDescriptor_t poolingDesc),
           (poolingDesc))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnSetPooling2dDescriptor,
           (cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t mode, cudnnNanPropagation_t maxpoolingNanOpt,
            int windowHeight, int windowWidth, int verticalPadding, int horizontalPadding, int verticalStride,
            int horizontalStride),
           (poolingDesc, mode, maxpoolingNanOpt, windowHeight, windowWidth, verticalPadding, horizontalPadding,
            verticalStride, horizontalStride))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetPooling2dForwardOutputDim,
           (const cudnnPoolingDescriptor_t poolingDesc, const cudnnTensorDescriptor_t inputTensorDesc, int* n, int* c,
            int* h, int* w),
           (poolingDesc, inputTensorDesc, n, c, h, w))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnPoolingForward,
           (cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
            const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc,
            void* y),
           (handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnPoolingBackward,
           (cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
            const cudnnTensorDescriptor_t yDesc, const void* y, const cudnnTensorDescriptor_t dyDesc, const void* dy,
            const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta, const cudnnTensorDescriptor_t dxDesc,
            void* dx),
           (handle, poolingDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx))
// descriptors read back (the descriptor tests, no GPU needed: cudnn_pool.cpp's NaN rule,
// cudnn_batch_norm.cpp's shapes)
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetPooling2dDescriptor,
           (const cudnnPoolingDescriptor_t poolingDesc, cudnnPoolingMode_t* mode, cudnnNanPropagation_t* maxpoolingNanOpt,
            int* windowHeight, int* windowWidth, int* verticalPadding, int* horizontalPadding, int* verticalStride,
            int* horizontalStride),
           (poolingDesc, mode, maxpoolingNanOpt, windowHeight, windowWidth, verticalPadding, horizontalPadding,
            verticalStride, horizontalStride))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnGetTensor4dDescriptor,
           (const cudnnTensorDescriptor_t tensorDesc, cudnnDataType_t* dataType, int* n, int* c, int* h, int* w,
            int* nStride, int* cStride, int* hStride, int* wStride),
           (tensorDesc, dataType, n, c, h, w, nStride, cStride, hStride, wStride))
// batch normalisation (cudnn_batch_norm.cpp): the parameters' descriptor, the training and
// inference forwards, the backward
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnDeriveBNTensorDescriptor,
           (cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc, cudnnBatchNormMode_t mode),
           (derivedBnDesc, xDesc, mode))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnBatchNormalizationForwardTraining,
           (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
            const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
            const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
            double exponentialAverageFactor, void* resultRunningMean, void* resultRunningVariance, double epsilon,
            void* resultSaveMean, void* resultSaveInvVariance),
           (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias,
            exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon, resultSaveMean,
            resultSaveInvVariance))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnBatchNormalizationForwardInference,
           (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
            const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
            const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
            const void* estimatedMean, const void* estimatedVariance, double epsilon),
           (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias, estimatedMean,
            estimatedVariance, epsilon))
DEZERO_FORWARD(kCudnn, cudnnStatus_t, cudnnBatchNormalizationBackward,
           (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alphaDataDiff, const void* betaDataDiff,
            const void* alphaParamDiff, const void* betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void* x,
            const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnTensorDescriptor_t dxDesc, void* dx,
            const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void* bnScale, void* dBnScaleResult,
            void* dBnBiasResult, double epsilon, const void* savedMean, const void* savedInvVariance),
           (handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, x, dyDesc, dy, dxDesc, dx,
            dBnScaleBiasDesc, bnScale, dBnScaleResult, dBnBiasResult, epsilon, savedMean, savedInvVariance))
