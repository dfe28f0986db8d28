// dezero/env.hpp - internal: how the library reads its DEZERO_* environment variables.
//
// Every variable goes through env_value(): glibc's secure_getenv, so a setuid or setgid
// program (or one with file capabilities) sees none of them, and an empty value counts as
// unset. A variable that names a file or a search path is read with env_path() /
// env_path_list(): only absolute entries count. A relative entry would be resolved against
// whatever the working directory happens to be, which is how a planted library gets
// loaded; it is skipped, with one line on stderr per variable and process.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace dezero::detail {

// $name, or nullptr when it is unset, empty, or the process runs setuid/setgid.
inline const char* env_value(const char* name) {
  const char* v = ::secure_getenv(name);
  return v && *v ? v : nullptr;
}

// One line on stderr the first time `name` has an entry that is skipped.
inline void warn_relative_env_entry(const char* name, const std::string& entry) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(name).second) return;
  std::fprintf(stderr,
               "dezero: ignoring '%s' in %s: only absolute paths are used (a relative one would depend on the "
               "working directory); hint: write it as /full/path\n",
               entry.c_str(), name);
}

// The absolute entries of the ':'-separated list in $name, in order (none when unset).
inline std::vector<std::string> env_path_list(const char* name) {
  std::vector<std::string> out;
  const char* v = env_value(name);
  if (!v) return out;
  std::string s(v);
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    std::string e = s.substr(start, end - start);
    if (!e.empty()) {
      if (e[0] == '/')
        out.push_back(e);
      else
        warn_relative_env_entry(name, e);
    }
    start = end + 1;
  }
  return out;
}

// $name when it holds an absolute path; nullptr when unset or relative (with the warning).
// `bare_names_ok`: a bare file name with no '/' (a library's soname, which dlopen looks up
// through the loader's own search path, never the working directory) is accepted too.
inline const char* env_path(const char* name, bool bare_names_ok = false) {
  const char* v = env_value(name);
  if (!v) return nullptr;
  const std::string s(v);
  if (s[0] == '/' || (bare_names_ok && s.find('/') == std::string::npos)) return v;
  warn_relative_env_entry(name, s);
  return nullptr;
}

}  // namespace dezero::detail
