// dezero/data/files.hpp - internal: where the downloadable datasets (MNIST, Fashion-MNIST,
// CIFAR-10) find their files and mirrors, and the SHA-256 every one of their files must have.
// Not installed.
#pragma once

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "dezero/download.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"
#include "dezero/tensor.hpp"

namespace dezero::datasets::detail {

// --- the published SHA-256 of every file the datasets download ----------------------------------
// Sources: tensorflow/datasets' url_checksums (mnist.txt, fashion_mnist.txt, cifar10.txt), which
// give the same sizes as the files' publishers; MNIST's four are also the hashes of
// yann.lecun.com's files, which ossci-datasets (torchvision's mirror, same MD5s) and
// storage.googleapis.com/cvdf-datasets serve unchanged. Fashion-MNIST's are those of Zalando's
// files (S3 and the GitHub repository's data/fashion/). Debian's dataset-fashion-mnist package
// holds recompressed copies (24 bytes shorter each, same pixels): they are not these files.
struct KnownFile {
  const char* name;
  const char* sha256;
};
constexpr KnownFile kMnistFiles[] = {
    {"train-images-idx3-ubyte.gz", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},  // 9912422 B
    {"train-labels-idx1-ubyte.gz", "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},  // 28881 B
    {"t10k-images-idx3-ubyte.gz", "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},   // 1648877 B
    {"t10k-labels-idx1-ubyte.gz", "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},   // 4542 B
};
constexpr KnownFile kFashionMnistFiles[] = {
    {"train-images-idx3-ubyte.gz", "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"},  // 26421880 B
    {"train-labels-idx1-ubyte.gz", "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"},  // 29515 B
    {"t10k-images-idx3-ubyte.gz", "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"},   // 4422102 B
    {"t10k-labels-idx1-ubyte.gz", "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"},   // 5148 B
};
constexpr KnownFile kCifar10Files[] = {
    {"cifar-10-binary.tar.gz", "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"},  // 170052171 B
};

template <std::size_t N>
const char* sha256_of(const KnownFile (&files)[N], const char* name) {
  for (const KnownFile& f : files)
    if (std::strcmp(f.name, name) == 0) return f.sha256;
  throw Error(std::string("datasets: no SHA-256 is known for ") + name);
}

// --- mirrors and folders -----------------------------------------------------------------------------
inline std::string with_slash(std::string url) {
  if (!url.empty() && url.back() != '/') url += '/';
  return url;
}

// The mirror to download from: `mirror` when given, else $env when set, else `fallback`;
// always ending in '/'. Every mirror gets the same checksum check.
inline std::string pick_mirror(const std::string& mirror, const char* env, const char* fallback) {
  if (!mirror.empty()) return with_slash(mirror);
  const char* e = dezero::detail::env_value(env);
  return with_slash(e ? e : fallback);
}

// The file `name`, downloaded from mirror + name when missing, and checked against `sha256`.
// With an explicit `dir` (the caller's own folder), a file already there is the caller's: it is
// read as it is. Without one, the file lives in the cache (cache_dir()/sub, checked by
// utils::detail::checked_cache_folder), where a file already there is checked against `sha256`
// on every use: the cache may be shared or tampered with.
inline std::string fetch(const std::string& dir, const std::string& sub, const char* name, const std::string& mirror,
                         const char* sha256) {
  utils::GetFileOptions opt;
  opt.sha256 = sha256;
  opt.allow_file_urls = true;  // a file:// mirror is the caller's explicit choice; the checksum still applies
  if (!dir.empty()) {
    const std::filesystem::path p = std::filesystem::path(dir) / name;
    if (std::filesystem::exists(p)) return p.string();
    return utils::get_file(mirror + name, name, dir, opt);
  }
  return utils::get_file(mirror + name, name, utils::detail::checked_cache_folder(sub), opt);
}

// --- CIFAR-10's reader ----------------------------------------------------------------------------
// The images (N, 3, 32, 32) int32 and labels (N,) int64 of the split in the archive at `path`,
// with every check CIFAR10 makes (and its cap) but no lookup, download or checksum: CIFAR10's
// core, and the entry point of tests/fuzz/fuzz_cifar.cpp.
std::pair<Tensor, Tensor> read_cifar10_archive(const std::string& path, bool train);

}  // namespace dezero::datasets::detail
