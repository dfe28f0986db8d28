// dezero/utils/download.cpp - utils::cache_dir and utils::get_file (DeZero's utils.get_file) with libcurl:
// a progress bar on stderr, "<file>.part" renamed only after a complete transfer.
//
// libdezero does not link libcurl: the first download dlopen()s libcurl.so.4 (or
// $DEZERO_LIBCURL, a file name or path) and looks up the few entry points used here,
// so a program that downloads nothing runs where libcurl is not installed, and a
// missing libcurl is an IOError raised by the download that needed it. curl.h is
// used for the types and constants only.
#include <curl/curl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include "dezero/download.hpp"
#include "dezero/error.hpp"
#include "dezero/utils/shared_library.hpp"

namespace fs = std::filesystem;

namespace dezero::utils {

std::string cache_dir() {
  if (const char* h = std::getenv("DEZERO_HOME"); h && *h) return h;
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw IOError("cache_dir: neither DEZERO_HOME nor HOME is set; set DEZERO_HOME to a writable directory");
  return (fs::path(home) / ".dezero").string();
}

std::string progress_line(std::int64_t downloaded, std::int64_t total) {
  char buf[96];
  if (total <= 0) {
    std::snprintf(buf, sizeof buf, "\r%lld bytes", static_cast<long long>(downloaded));
    return buf;
  }
  double p = static_cast<double>(downloaded) / static_cast<double>(total) * 100.0;
  int i = static_cast<int>(static_cast<double>(downloaded) / static_cast<double>(total) * 30);
  if (p >= 100.0) p = 100.0;
  if (i >= 30) i = 30;
  if (i < 0) i = 0;
  std::string bar = std::string(static_cast<std::size_t>(i), '#') + std::string(static_cast<std::size_t>(30 - i), '.');
  std::snprintf(buf, sizeof buf, "\r[%s] %.2f%%", bar.c_str(), p);
  return buf;
}

namespace {
// libcurl's entry points, each with the exact type curl.h declares (curl_easy_setopt
// and curl_easy_getinfo are variadic, and are called through variadic pointers).
struct Curl {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  std::string error;  // why libcurl cannot be used ("" when it can)
};

// Loads libcurl and runs curl_global_init once per process (thread-safe); the
// outcome, failure included, is kept.
Curl load_curl() {
  Curl c;
  dezero::detail::SharedLibrary lib =
      dezero::detail::SharedLibrary::open("DEZERO_LIBCURL", {"libcurl.so.4", "libcurl-gnutls.so.4"});
  if (!lib.handle) {
    c.error = "cannot load libcurl (" + lib.error +
              "); hint: install libcurl (apt-get install libcurl4), put the folder with libcurl.so.4 on "
              "LD_LIBRARY_PATH, or set DEZERO_LIBCURL to its path";
    return c;
  }
  lib.bind(c.global_init, "curl_global_init");
  lib.bind(c.easy_init, "curl_easy_init");
  lib.bind(c.easy_cleanup, "curl_easy_cleanup");
  lib.bind(c.easy_setopt, "curl_easy_setopt");
  lib.bind(c.easy_perform, "curl_easy_perform");
  lib.bind(c.easy_getinfo, "curl_easy_getinfo");
  lib.bind(c.easy_strerror, "curl_easy_strerror");
  if (!lib.missing.empty())
    c.error = "the loaded libcurl has no symbol " + lib.missing + "; hint: install libcurl (apt-get install libcurl4)";
  if (!c.error.empty()) return c;
  CURLcode rc = c.global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) c.error = std::string("libcurl failed to initialise: ") + c.easy_strerror(rc);
  return c;
}

const Curl& curl_api() {
  static const Curl c = load_curl();  // leaked handle: libcurl stays loaded
  if (!c.error.empty()) throw IOError("get_file: " + c.error);
  return c;
}

struct Transfer {
  std::FILE* out = nullptr;
  std::int64_t written = 0;
  bool write_failed = false;
  std::string last_line;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t w = std::fwrite(data, size, n, t->out);
  t->written += static_cast<std::int64_t>(w * size);
  if (w != n) t->write_failed = true;
  return w * size;
}

int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  std::string line = progress_line(dlnow, dltotal);
  if (dlnow > 0 && line != t->last_line) {
    std::cerr << line << std::flush;
    t->last_line = line;
  }
  return 0;
}

std::string base_name(const std::string& url) {
  std::string u = url.substr(0, url.find_first_of("?#"));
  auto slash = u.find_last_of('/');
  return slash == std::string::npos ? u : u.substr(slash + 1);
}

// Removes the partial file on every way out that is not a success.
struct PartFile {
  fs::path path;
  std::FILE* f = nullptr;
  bool keep = false;
  ~PartFile() {
    if (f) std::fclose(f);
    if (!keep) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};
}  // namespace

std::string get_file(const std::string& url, const std::string& file_name, const std::string& dir) {
  std::string name = file_name.empty() ? base_name(url) : file_name;
  if (name.empty()) throw ValueError("get_file: cannot tell a file name from the URL " + url + "; pass file_name");
  fs::path folder = dir.empty() ? fs::path(cache_dir()) : fs::path(dir);
  fs::path target = folder / name;
  if (fs::exists(target)) return target.string();

  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw IOError("get_file: cannot create the directory " + folder.string() + ": " + ec.message());
  const Curl& api = curl_api();

  PartFile part{fs::path(target.string() + ".part")};
  part.f = std::fopen(part.path.c_str(), "wb");
  if (!part.f) throw IOError("get_file: cannot write " + part.path.string() + ": " + std::strerror(errno));

  std::unique_ptr<CURL, void (*)(CURL*)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) throw IOError("get_file: curl_easy_init failed for " + url);
  Transfer tr;
  tr.out = part.f;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  api.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  api.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &tr);
  api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  api.easy_setopt(c, CURLOPT_XFERINFODATA, &tr);
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  api.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);   // abort a transfer stalled for a minute
  api.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  api.easy_setopt(c, CURLOPT_USERAGENT, "dezero-cpp");

  std::cerr << "Downloading: " << name << "\n";
  CURLcode rc = api.easy_perform(c);
  long status = 0;
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t expected = -1;
  api.easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected);
  auto fail = [&](const std::string& why) {
    if (!tr.last_line.empty()) std::cerr << "\n";
    throw IOError("get_file: downloading " + url + " failed: " + why + "; " + target.string() +
                  " was not written (the partial file was removed)");
  };
  if (rc != CURLE_OK) {
    std::string why = errbuf[0] ? errbuf : api.easy_strerror(rc);
    if (status >= 400) why += " (HTTP " + std::to_string(status) + ")";
    fail(why);
  }
  if (tr.write_failed) fail("cannot write " + part.path.string());
  int closed = std::fclose(part.f);
  part.f = nullptr;
  if (closed != 0) fail("cannot write " + part.path.string());
  if (expected >= 0 && tr.written != expected)
    fail("received " + std::to_string(tr.written) + " bytes of " + std::to_string(expected));
  fs::rename(part.path, target, ec);
  if (ec) fail("cannot rename " + part.path.string() + ": " + ec.message());
  part.keep = true;
  std::cerr << " Done\n";
  return target.string();
}

}  // namespace dezero::utils
