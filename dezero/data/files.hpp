// dezero/data/files.hpp - internal: where the downloadable datasets (MNIST, Fashion-MNIST,
// CIFAR-10) find their files and mirrors. Not installed.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "dezero/download.hpp"

namespace dezero::datasets::detail {

inline std::string with_slash(std::string url) {
  if (!url.empty() && url.back() != '/') url += '/';
  return url;
}

// The mirror to download from: `mirror` when given, else $env when set, else `fallback`;
// always ending in '/'.
inline std::string pick_mirror(const std::string& mirror, const char* env, const char* fallback) {
  if (!mirror.empty()) return with_slash(mirror);
  const char* e = std::getenv(env);
  return with_slash(e && *e ? e : fallback);
}

// dir/name, downloaded from mirror + name when missing.
inline std::string fetch(const std::string& dir, const char* name, const std::string& mirror) {
  std::filesystem::path p = std::filesystem::path(dir) / name;
  if (std::filesystem::exists(p)) return p.string();
  return utils::get_file(mirror + name, name, dir);
}

}  // namespace dezero::datasets::detail
