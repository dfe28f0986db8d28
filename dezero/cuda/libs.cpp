// dezero/cuda/libs.cpp - cuBLAS, cuRAND, NVRTC and cuDNN are loaded on first use.
//
// libdezero does not link these libraries: linking them made every program that
// uses dezero map and relocate ~250 MB of GPU libraries at start-up (0.26 s and
// 260 MB of RSS for a CPU-only "hello"), and made a CPU-only run fail on a machine
// without them. Instead this file defines, with hidden visibility, each entry point
// the backend calls; the first call dlopen()s the library (by its soname, so
// LD_LIBRARY_PATH and the usual folders apply, then from the toolkit folder found
// at build time) and forwards to the real function. The CUDA runtime itself is
// linked statically and loads the driver on its own.
//
// A missing library is a DeviceError that names it, raised from the call that
// needed it. Adding a call to a new entry point elsewhere in dezero/cuda fails to link
// until it is listed here.
#include <cublas_v2.h>
#include <cudnn.h>
#include <curand.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <string>
#include <vector>

#include "dezero/cuda/detail/libs.hpp"
#include "dezero/error.hpp"

namespace {

enum Lib { kCublas, kCurand, kNvrtc, kCudnn, kLibCount };

// CMake passes each library's soname and the folder it was found in at build time.
struct LibInfo {
  const char* what;
  const char* soname;
  const char* dir;
};
constexpr LibInfo kLibs[kLibCount] = {
    {"cuBLAS", DEZERO_CUBLAS_SONAME, DEZERO_CUBLAS_DIR},
    {"cuRAND", DEZERO_CURAND_SONAME, DEZERO_CURAND_DIR},
    {"NVRTC", DEZERO_NVRTC_SONAME, DEZERO_NVRTC_DIR},
    {"cuDNN", DEZERO_CUDNN_SONAME, DEZERO_CUDNN_DIR},
};

void* open_lib(Lib lib) {
  static void* handles[kLibCount] = {};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (handles[lib]) return handles[lib];
  const LibInfo& info = kLibs[lib];
  void* h = dlopen(info.soname, RTLD_NOW | RTLD_LOCAL);
  std::string first_error = h ? "" : dlerror();
  if (!h) {
    std::string fallback = std::string(info.dir) + "/" + info.soname;
    h = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!h)
    throw dezero::DeviceError(std::string("cuda: cannot load ") + info.what + " (" + first_error +
                              "); hint: put the CUDA toolkit's lib64 folder (with " + info.soname +
                              ") on LD_LIBRARY_PATH");
  handles[lib] = h;
  return h;
}

void* symbol(Lib lib, const char* name) {
  void* h = open_lib(lib);
  void* f = dlsym(h, name);
  if (!f)
    throw dezero::DeviceError(std::string("cuda: ") + kLibs[lib].soname + " has no symbol " + name +
                              "; hint: the library is older than the toolkit dezero was built with");
  return f;
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
std::vector<std::string> check_gpu_libraries() {
  std::vector<std::string> problems;
  for (const Entry& e : registry()) {
    try {
      symbol(e.lib, e.name);
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
DEZERO_FORWARD(kNvrtc, const char*, nvrtcGetErrorString, (nvrtcResult result), (result))
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
