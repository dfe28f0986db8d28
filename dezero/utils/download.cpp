// dezero/utils/download.cpp - utils::cache_dir, utils::get_file (DeZero's utils.get_file) with libcurl
// and utils::sha256_file with OpenSSL's libcrypto: a progress bar on stderr, the body written to a
// fresh temporary file (AtomicFile) and renamed only after a complete transfer whose SHA-256 matched.
//
// libdezero links neither libcurl nor libcrypto: the first download dlopen()s libcurl.so.4 (or
// $DEZERO_LIBCURL), the first checksum libcrypto.so.3 (or $DEZERO_LIBCRYPTO), and looks up the few
// entry points used here, so a program that downloads nothing runs where they are not installed,
// and a missing one is an IOError raised by the call that needed it. curl.h is used for the types
// and constants only; libcrypto's few functions are declared here with opaque pointers.
#define CURL_DISABLE_DEPRECATION  // CURLOPT_PROTOCOLS: the fallback for a libcurl older than 7.85
#include <curl/curl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "dezero/download.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/utils/atomic_file.hpp"
#include "dezero/utils/shared_library.hpp"

namespace fs = std::filesystem;

namespace dezero::utils {

std::string cache_dir() {
  if (const char* h = dezero::detail::env_path("DEZERO_HOME")) return h;
  const char* home = dezero::detail::env_value("HOME");
  if (!home)
    throw IOError("cache_dir: neither DEZERO_HOME nor HOME is set (DEZERO_HOME must be an absolute path); set "
                  "DEZERO_HOME to a writable directory");
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

// --- the cache folder ------------------------------------------------------------------------
namespace {
using dezero::detail::fail;
// `p` exists (created 0700 when missing), is a folder, belongs to this user (or root) and is not
// writable by group or others: nobody else can plant or swap files in it.
void check_private_folder(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
      fail<IOError>("get_file", "cannot create the cache folder ", p.string(), ": ", std::strerror(errno),
                    "; hint: set DEZERO_HOME to a folder you can write");
  }
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0)
    fail<IOError>("get_file", "cannot use the cache folder ", p.string(), ": ", std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) fail<IOError>("get_file", "the cache folder ", p.string(), " is not a folder");
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    fail<IOError>("get_file", "the cache folder ", p.string(), " belongs to user id ", st.st_uid, ", not to you (", me,
                  "); whoever owns it could replace what is downloaded there; hint: set DEZERO_HOME to a folder of "
                  "your own");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    fail<IOError>("get_file", "the cache folder ", p.string(), " is writable by group or others (mode ", mode,
                  "), who could plant or replace files in it; hint: chmod go-w ", p.string(),
                  ", or set DEZERO_HOME to a folder only you can write");
  }
}
}  // namespace

namespace detail {
std::string checked_cache_folder(const std::string& sub) {
  fs::path base = cache_dir();
  check_private_folder(base);
  if (sub.empty()) return base.string();
  check_private_folder(base / sub);
  return (base / sub).string();
}
}  // namespace detail

// --- SHA-256 through libcrypto ---------------------------------------------------------------
namespace {
struct Crypto {
  void* (*ctx_new)() = nullptr;
  void (*ctx_free)(void*) = nullptr;
  const void* (*sha256)() = nullptr;
  int (*init)(void*, const void*, void*) = nullptr;
  int (*update)(void*, const void*, std::size_t) = nullptr;
  int (*final)(void*, unsigned char*, unsigned int*) = nullptr;
  std::string error;  // why libcrypto cannot be used ("" when it can)
};

Crypto load_crypto() {
  Crypto c;
  dezero::detail::SharedLibrary lib =
      dezero::detail::SharedLibrary::open("DEZERO_LIBCRYPTO", {"libcrypto.so.3", "libcrypto.so.1.1"});
  if (!lib.handle) {
    c.error = "checking a SHA-256 needs OpenSSL's libcrypto, which cannot be loaded (" + lib.error +
              "); hint: install it (Debian: apt-get install libssl3), put the folder with libcrypto.so.3 on "
              "LD_LIBRARY_PATH, or set DEZERO_LIBCRYPTO to its path";
    return c;
  }
  lib.bind(c.ctx_new, "EVP_MD_CTX_new");
  lib.bind(c.ctx_free, "EVP_MD_CTX_free");
  lib.bind(c.sha256, "EVP_sha256");
  lib.bind(c.init, "EVP_DigestInit_ex");
  lib.bind(c.update, "EVP_DigestUpdate");
  lib.bind(c.final, "EVP_DigestFinal_ex");
  if (!lib.missing.empty())
    c.error = "the loaded " + lib.name + " has no symbol " + lib.missing +
              "; hint: install OpenSSL 1.1 or 3 (Debian: apt-get install libssl3)";
  return c;
}

const Crypto& crypto_api(const std::string& op) {
  static const Crypto c = load_crypto();  // leaked handle: libcrypto stays loaded; a failure is kept
  if (!c.error.empty()) fail<IOError>(op.c_str(), c.error);
  return c;
}

class Sha256 {
 public:
  explicit Sha256(const std::string& op) : api_(crypto_api(op)), ctx_(api_.ctx_new()) {
    if (!ctx_ || api_.init(ctx_, api_.sha256(), nullptr) != 1) {
      if (ctx_) api_.ctx_free(ctx_);
      fail<IOError>(op.c_str(), "libcrypto could not start a SHA-256 (EVP_DigestInit_ex failed)");
    }
  }
  ~Sha256() { api_.ctx_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(const void* p, std::size_t n) { ok_ = ok_ && api_.update(ctx_, p, n) == 1; }
  std::string hex() {
    unsigned char md[64];
    unsigned int len = 0;
    if (!ok_ || api_.final(ctx_, md, &len) != 1 || len != 32)
      fail<IOError>("sha256", "libcrypto failed to compute a SHA-256");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < len; ++i) {
      s.push_back(kHex[md[i] >> 4]);
      s.push_back(kHex[md[i] & 15]);
    }
    return s;
  }

 private:
  const Crypto& api_;
  void* ctx_;
  bool ok_ = true;
};

std::string sha256_of(const std::string& path, const std::string& op) {
  Sha256 h(op);
  std::ifstream f(path, std::ios::binary);
  if (!f) fail<IOError>(op.c_str(), "cannot read ", path, ": ", std::strerror(errno));
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (f.gcount() > 0) h.add(buf.data(), static_cast<std::size_t>(f.gcount()));
  }
  if (f.bad()) fail<IOError>(op.c_str(), "error while reading ", path);
  return h.hex();
}

// The expected hash in lowercase; ValueError unless it is 64 hex digits.
std::string normalized_sha256(const std::string& s) {
  std::string out;
  for (char ch : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  if (out.size() != 64 || out.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail<ValueError>("get_file", "the expected SHA-256 '", s, "' is not 64 hex digits");
  return out;
}
}  // namespace

std::string sha256_file(const std::string& path) { return sha256_of(path, "sha256_file"); }

// --- libcurl ---------------------------------------------------------------------------------
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
  if (!c.error.empty()) fail<IOError>("get_file", c.error);
  return c;
}

struct Transfer {
  dezero::detail::AtomicFile* out = nullptr;
  Sha256* hash = nullptr;  // null when no checksum was asked for
  std::int64_t written = 0;
  std::exception_ptr error;  // what writing threw (nothing may be thrown through libcurl)
  std::string last_line;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t bytes = size * n;
  try {
    t->out->write(data, bytes);
    if (t->hash) t->hash->add(data, bytes);
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // libcurl stops with CURLE_WRITE_ERROR
  }
  t->written += static_cast<std::int64_t>(bytes);
  return bytes;
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

// The URL's scheme in lowercase ("" when it has none).
std::string scheme_of(const std::string& url) {
  const auto colon = url.find("://");
  if (colon == std::string::npos) return "";
  std::string s = url.substr(0, colon);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Restricts libcurl to `list` ("http,https") for the URL and `redirects` for redirects.
void limit_protocols(const Curl& api, CURL* c, const std::string& list, const std::string& redirects) {
#if LIBCURL_VERSION_NUM >= 0x075500
  if (api.easy_setopt(c, CURLOPT_PROTOCOLS_STR, list.c_str()) == CURLE_OK &&
      api.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, redirects.c_str()) == CURLE_OK)
    return;
#endif
  // A libcurl older than 7.85 at run time: the bit masks.
  auto mask = [](const std::string& l) {
    long m = 0;
    std::size_t start = 0;
    while (start <= l.size()) {
      std::size_t end = l.find(',', start);
      if (end == std::string::npos) end = l.size();
      const std::string p = l.substr(start, end - start);
      if (p == "http") m |= CURLPROTO_HTTP;
      if (p == "https") m |= CURLPROTO_HTTPS;
      if (p == "file") m |= CURLPROTO_FILE;
      start = end + 1;
    }
    return m;
  };
  if (api.easy_setopt(c, CURLOPT_PROTOCOLS, mask(list)) != CURLE_OK ||
      api.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, mask(redirects)) != CURLE_OK)
    fail<IOError>("get_file", "the loaded libcurl cannot be limited to ", list,
                  "; hint: install libcurl 7.85 or newer");
}
}  // namespace

// --- get_file --------------------------------------------------------------------------------
std::string get_file(const std::string& url, const std::string& file_name, const std::string& dir) {
  return get_file(url, file_name, dir, GetFileOptions{});
}

std::string get_file(const std::string& url, const std::string& file_name, const std::string& dir,
                     const GetFileOptions& options) {
  const std::string scheme = scheme_of(url);
  const bool file_ok = options.allow_file_urls && scheme == "file";
  if (scheme != "http" && scheme != "https" && !file_ok)
    throw ValueError("get_file: " + url + ": " +
                     (scheme.empty() ? std::string("the URL has no scheme") : "the scheme " + scheme + ":// is refused") +
                     "; only http:// and https:// URLs are downloaded" +
                     (scheme == "file" ? "; hint: set GetFileOptions::allow_file_urls to copy a local file"
                                       : ""));
  const std::string want = options.sha256.empty() ? "" : normalized_sha256(options.sha256);
  std::string name = file_name.empty() ? base_name(url) : file_name;
  if (name.empty()) fail<ValueError>("get_file", "cannot tell a file name from the URL ", url, "; pass file_name");
  fs::path folder = dir.empty() ? fs::path(detail::checked_cache_folder()) : fs::path(dir);
  fs::path target = folder / name;

  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!want.empty()) {
      const std::string got = sha256_of(target.string(), "get_file");
      if (got != want)
        fail<IOError>("get_file", target.string(), " has SHA-256 ", got, ", expected ", want,
                      "; it is not the file that ", url, " should hold (damaged, replaced, or another version); "
                      "hint: delete it so that it is downloaded again");
    }
    return target.string();
  }

  fs::create_directories(folder, ec);
  if (ec) fail<IOError>("get_file", "cannot create the directory ", folder.string(), ": ", ec.message());
  const Curl& api = curl_api();
  std::unique_ptr<Sha256> hash;
  if (!want.empty()) hash = std::make_unique<Sha256>("get_file");  // before downloading: libcrypto is there

  dezero::detail::AtomicFile part(target.string(), "get_file");
  std::unique_ptr<CURL, void (*)(CURL*)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) fail<IOError>("get_file", "curl_easy_init failed for ", url);
  Transfer tr;
  tr.out = &part;
  tr.hash = hash.get();
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  limit_protocols(api, c, file_ok ? "http,https,file" : "http,https",
                  file_ok ? "http,https,file" : scheme == "https" ? "https" : "http,https");
  api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  api.easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  api.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  api.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &tr);
  api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  api.easy_setopt(c, CURLOPT_XFERINFODATA, &tr);
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  api.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // abort a transfer stalled for a minute
  api.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  api.easy_setopt(c, CURLOPT_USERAGENT, "dezero-cpp");

  std::cerr << "Downloading: " << name << "\n";
  CURLcode rc = api.easy_perform(c);
  long status = 0;
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t expected = -1;
  api.easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected);
  // The AtomicFile removes its temporary file on the way out.
  auto fail = [&](const std::string& why) {
    if (!tr.last_line.empty()) std::cerr << "\n";
    throw IOError("get_file: downloading " + url + " failed: " + why + "; " + target.string() +
                  " was not written (the partial file was removed)");
  };
  if (tr.error) {
    try {
      std::rethrow_exception(tr.error);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  if (rc != CURLE_OK) {
    std::string why = errbuf[0] ? errbuf : api.easy_strerror(rc);
    if (status >= 400) why += " (HTTP " + std::to_string(status) + ")";
    if (rc == CURLE_UNSUPPORTED_PROTOCOL) why += "; only http and https are followed (a redirect elsewhere is refused)";
    fail(why);
  }
  if (expected >= 0 && tr.written != expected)
    fail("received " + std::to_string(tr.written) + " bytes of " + std::to_string(expected));
  if (hash) {
    const std::string got = hash->hex();
    if (got != want)
      fail("the " + std::to_string(tr.written) + " bytes received have SHA-256 " + got + ", expected " + want +
           " (a wrong or tampered mirror, or a changed file)");
  }
  try {
    part.commit();
  } catch (const IOError& e) {
    fail(e.what());
  }
  std::cerr << " Done\n";
  return target.string();
}

}  // namespace dezero::utils
