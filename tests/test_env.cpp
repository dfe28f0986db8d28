// tests/test_env.cpp - how the library reads its DEZERO_* environment variables
// (dezero/env.hpp): secure_getenv everywhere (a scan of the source tree finds no other
// getenv), empty counts as unset, and a variable that names a file or a folder is used only
// when it is absolute (a bare soname too, for the dlopen()ed libraries): a relative one would
// be found from whatever the working directory is, which is how a planted library gets loaded.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "dezero/env.hpp"
#include "dezero/utils/shared_library.hpp"
#include "support/test_util.hpp"

namespace fs = std::filesystem;

namespace {

// Every `getenv(` call in `text` that is not secure_getenv, as "<where>:<line>: <the line>"
// (the part of a line after // is not read).
std::vector<std::string> plain_getenv_calls(const std::string& text, const std::string& where) {
  static const std::regex call(R"((^|[^A-Za-z0-9_])getenv\s*\()");
  std::vector<std::string> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    const std::string code = line.substr(0, line.find("//"));
    if (std::regex_search(code, call)) out.push_back(where + ":" + std::to_string(n) + ": " + line);
  }
  return out;
}

// What a scope writes to file descriptor 2 (the library warns with fprintf(stderr, ...)).
struct Fd2Capture {
  fs::path file;
  int saved = -1;
  explicit Fd2Capture(const fs::path& f) : file(f) {
    std::fflush(stderr);
    saved = ::dup(2);
    const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::string done() {
    std::fflush(stderr);
    if (saved >= 0) {
      ::dup2(saved, 2);
      ::close(saved);
      saved = -1;
    }
    return dzt::read_bytes(file);
  }
  ~Fd2Capture() { done(); }
};

// The file of a shared library this process has loaded (libm, by the address of cos).
std::string loaded_file_of(const void* symbol) {
  Dl_info info{};
  if (::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  return fs::canonical(info.dli_fname).string();
}

}  // namespace

TEST_CASE("env: no plain getenv under dezero/: every variable is read by dezero/env.hpp's secure_getenv") {
  // The scanner itself: what it must catch, and what it must let through.
  CHECK(plain_getenv_calls("a = std::getenv(\"X\");\nb = ::getenv (\"Y\");\nc = getenv(\"Z\");", "t").size() == 3);
  CHECK(plain_getenv_calls("v = ::secure_getenv(name);\n// std::getenv(\"X\") in a comment\n", "t").empty());
  CHECK(plain_getenv_calls("x = my_getenv(1); y = getenvx(2);", "t").empty());

  const fs::path root = fs::path(DEZERO_TEST_DATA_DIR).parent_path().parent_path() / "dezero";
  if (!fs::is_directory(root)) {
    MESSAGE("skipped: the source tree is not here (" << root.string() << ")");
    return;
  }
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh" && ext != ".h"))
      continue;
    ++files;
    const std::string rel = fs::relative(e.path(), root.parent_path()).string();
    if (rel == "dezero/env.hpp") continue;
    for (const std::string& f : plain_getenv_calls(dzt::read_bytes(e.path()), rel)) found.push_back(f);
  }
  CHECK(files > 100);
  std::string list;
  for (const std::string& f : found) list += "\n  " + f;
  INFO("getenv outside dezero/env.hpp (use detail::env_value / env_path / env_path_list):" << list);
  CHECK(found.empty());
}

TEST_CASE("env: env_value, env_path and env_path_list: empty is unset, relative entries are skipped") {
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_VALUE", "");
    CHECK(dezero::detail::env_value("DEZERO_TEST_ENV_VALUE") == nullptr);
  }
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_VALUE", "0");
    REQUIRE(dezero::detail::env_value("DEZERO_TEST_ENV_VALUE") != nullptr);
    CHECK(std::string(dezero::detail::env_value("DEZERO_TEST_ENV_VALUE")) == "0");
  }
  dzt::TempDir dir;
  Fd2Capture err(dir.path / "stderr");
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_LIST", "/a:rel:/b/::./c:../d");
    CHECK(dezero::detail::env_path_list("DEZERO_TEST_ENV_LIST") == std::vector<std::string>{"/a", "/b/"});
    CHECK(dezero::detail::env_path_list("DEZERO_TEST_ENV_LIST") == std::vector<std::string>{"/a", "/b/"});
  }
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_PATH", "lib/libx.so.1");
    CHECK(dezero::detail::env_path("DEZERO_TEST_ENV_PATH", true) == nullptr);
    CHECK(dezero::detail::env_path("DEZERO_TEST_ENV_PATH") == nullptr);
  }
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_PATH", "libx.so.1");
    REQUIRE(dezero::detail::env_path("DEZERO_TEST_ENV_PATH", true) != nullptr);
    CHECK(std::string(dezero::detail::env_path("DEZERO_TEST_ENV_PATH", true)) == "libx.so.1");
  }
  {
    dzt::ScopedEnv v("DEZERO_TEST_ENV_PATH", "/opt/x/libx.so.1");
    REQUIRE(dezero::detail::env_path("DEZERO_TEST_ENV_PATH") != nullptr);
    CHECK(std::string(dezero::detail::env_path("DEZERO_TEST_ENV_PATH")) == "/opt/x/libx.so.1");
  }
  const std::string said = err.done();
  // One line per variable and process, naming the entry, the variable and the cure.
  CHECK(said ==
        "dezero: ignoring 'rel' in DEZERO_TEST_ENV_LIST: only absolute paths are used (a relative one would "
        "depend on the working directory); hint: write it as /full/path\n"
        "dezero: ignoring 'lib/libx.so.1' in DEZERO_TEST_ENV_PATH: only absolute paths are used (a relative one "
        "would depend on the working directory); hint: write it as /full/path\n");
}

TEST_CASE("env: a library named by a relative DEZERO_LIBJPEG / DEZERO_LIBCURL is not loaded") {
  const std::string libm = loaded_file_of(reinterpret_cast<const void*>(static_cast<double (*)(double)>(&::cos)));
  if (libm.empty()) {
    MESSAGE("skipped: cannot find the file libm was loaded from");
    return;
  }
  dzt::TempDir dir;
  fs::create_directory(dir.path / "sub");
  fs::copy_file(libm, dir.path / "sub" / "libdezero-planted.so");
  dzt::ScopedCwd cwd(dir.path);
  REQUIRE(::dlopen("sub/libdezero-planted.so", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) == nullptr);

  for (const char* var : {"DEZERO_LIBJPEG", "DEZERO_LIBCURL"}) {
    INFO("the variable: " << var);
    {
      // A file that would load, named relative to the working directory: skipped, so the
      // library's own names are tried instead (here, one that does not exist).
      dzt::ScopedEnv env(var, "sub/libdezero-planted.so");
      Fd2Capture err(dir.path / "stderr");
      auto lib = dezero::detail::SharedLibrary::open(var, {"libdezero-missing-for-test.so.1"});
      const std::string said = err.done();
      CHECK(lib.handle == nullptr);
      CHECK(lib.name == "libdezero-missing-for-test.so.1");
      CHECK(dzt::has(said, "dezero: ignoring 'sub/libdezero-planted.so' in " + std::string(var)));
    }
    {
      // The same file by its absolute path, and a bare soname through the loader, are used.
      dzt::ScopedEnv env(var, (dir.path / "sub" / "libdezero-planted.so").string());
      auto lib = dezero::detail::SharedLibrary::open(var, {"libdezero-missing-for-test.so.1"});
      CHECK(lib.handle != nullptr);
      CHECK(lib.name == (dir.path / "sub" / "libdezero-planted.so").string());
    }
    {
      dzt::ScopedEnv env(var, fs::path(libm).filename().string());
      auto lib = dezero::detail::SharedLibrary::open(var, {"libdezero-missing-for-test.so.1"});
      CHECK(lib.handle != nullptr);
    }
  }
}
