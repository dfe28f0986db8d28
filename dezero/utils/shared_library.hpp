// dezero/utils/shared_library.hpp - internal: a library libdezero loads with dlopen() on
// first use instead of linking it (libcurl for get_file, libjpeg for JPEG input,
// libarchive for CIFAR-10), so that a program which never needs it runs where it is not
// installed, and one that does gets an IOError saying what to install.
//
//   SharedLibrary lib = SharedLibrary::open("DEZERO_LIBJPEG", {"libjpeg.so.62"});
//   if (!lib.handle) ... lib.error ...
//   lib.bind(api.read_header, "jpeg_read_header");  ...  if (!lib.missing.empty()) ...
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <type_traits>

#include "dezero/env.hpp"

namespace dezero::detail {

struct SharedLibrary {
  void* handle = nullptr;  // never closed: the library stays loaded for the process
  std::string name;        // the file that was loaded (or the last one tried)
  std::string error;       // why nothing could be loaded ("" when handle is set)
  std::string missing;     // the first symbol bind() did not find ("" when all were)

  // $env_var when it is set and not empty (that library or nothing), else the first of
  // `names` that loads. RTLD_LOCAL: the library's symbols stay out of the global scope.
  // $env_var is read as dezero/env.hpp says: secure_getenv, and an absolute path or a bare
  // soname only; a relative path (which dlopen would resolve against the working directory)
  // is skipped with a warning, as if unset.
  static SharedLibrary open(const char* env_var, std::initializer_list<const char*> names) {
    SharedLibrary lib;
    const char* env = env_path(env_var, /*bare_names_ok=*/true);
    auto try_one = [&](const std::string& n) {
      lib.name = n;
      lib.handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib.handle) return true;
      const char* e = dlerror();
      lib.error += (lib.error.empty() ? "" : "; ") + std::string(e ? e : n + ": cannot be loaded");
      return false;
    };
    if (env && *env) {
      try_one(env);
    } else {
      for (const char* n : names)
        if (try_one(n)) break;
    }
    if (lib.handle) lib.error.clear();
    return lib;
  }

  // fn = the library's `symbol`, or nullptr (and `missing` names it when it is the first).
  template <class Fn>
  void bind(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<Fn>>(dlsym(handle, symbol));
    if (!fn && missing.empty()) missing = symbol;
  }
};

}  // namespace dezero::detail
