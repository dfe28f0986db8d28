// tests/test_download.cpp - utils::get_file and MNIST's download against a tiny HTTP/1.0
// server on 127.0.0.1 (an ephemeral port, a std::thread in this test): complete files,
// a body shorter than its Content-Length, a 404, bytes that fail their SHA-256; none may leave
// a partial file. Also: schemes other than http(s) refused, the cache folder's owner and mode,
// and no write through a symlink planted where the old code put its ".part" file.
#include <arpa/inet.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <dezero/datasets.hpp>
#include <dezero/download.hpp>

#include "support/test_util.hpp"

using namespace dezero;
namespace fs = std::filesystem;

namespace {
using dzt::ScopedEnv;
using dzt::TempDir;

const std::string kData = dzt::data_dir();

// Serves files of `root`: GET /<name> sends the file; GET /short/<name> announces the
// file's length but sends half and closes; GET /wrong/<name> sends the file with its last
// byte changed; anything else is a 404.
class HttpServer {
 public:
  explicit HttpServer(std::string root) : root_(std::move(root)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      handle(c);
      ::close(c);
    }
  }
  static void send_all(int c, const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
      ssize_t n = ::send(c, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  void handle(int c) {
    std::string req;
    char buf[1024];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      req.append(buf, static_cast<std::size_t>(n));
    }
    ++requests_;
    std::istringstream line(req.substr(0, req.find("\r\n")));
    std::string method, path;
    line >> method >> path;
    bool short_body = path.rfind("/short/", 0) == 0;
    bool wrong_body = path.rfind("/wrong/", 0) == 0;
    std::string name = short_body || wrong_body ? path.substr(7) : path.substr(1);
    fs::path file = fs::path(root_) / name;
    if (method != "GET" || name.empty() || name.find('/') != std::string::npos || !fs::exists(file)) {
      send_all(c, "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found");
      return;
    }
    std::string b = dzt::read_bytes(file);
    if (wrong_body && !b.empty()) b.back() = static_cast<char>(b.back() ^ 1);
    send_all(c, "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                    std::to_string(b.size()) + "\r\n\r\n");
    send_all(c, short_body ? b.substr(0, b.size() / 2) : b);
  }

  std::string root_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// a proxy in the environment must not capture 127.0.0.1
struct NoProxy {
  ScopedEnv a{"no_proxy", "127.0.0.1,localhost"}, b{"NO_PROXY", "127.0.0.1,localhost"};
};

std::string io_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const IOError& e) {
    return e.what();
  }
  return "(no IOError)";
}

// SHA-256 of tests/data/mnist/t10k-labels-idx1-ubyte.gz (sha256sum).
const char* kLabelsSha = "cee061e94749ad926d980f33cb71473337bd79d279971355960ac2bcd0ccc74b";

utils::GetFileOptions with_sha(const std::string& sha) {
  utils::GetFileOptions o;
  o.sha256 = sha;
  return o;
}

}  // namespace

TEST_CASE("progress_line draws DeZero's 30-character bar") {
  CHECK(utils::progress_line(1, 6) == "\r[#####.........................] 16.67%");
  CHECK(utils::progress_line(6, 6) == "\r[##############################] 100.00%");
  CHECK(utils::progress_line(0, 6) == "\r[..............................] 0.00%");
  CHECK(utils::progress_line(1234, -1) == "\r1234 bytes");
}

TEST_CASE("get_file downloads once into dir, or into $DEZERO_HOME") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir tmp;
  std::string src = kData + "/mnist/t10k-labels-idx1-ubyte.gz";
  std::string got = utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz", "", tmp.str());
  CHECK(got == (tmp.path / "t10k-labels-idx1-ubyte.gz").string());
  CHECK(fs::file_size(got) == fs::file_size(src));
  CHECK(server.requests() == 1);
  CHECK(utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz", "", tmp.str()) == got);
  CHECK(server.requests() == 1);  // already there
  CHECK(tmp.entries() == 1);

  TempDir home;
  ScopedEnv env("DEZERO_HOME", (home.path / "cache").string());
  std::string named = utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz", "labels.gz");
  CHECK(named == (home.path / "cache" / "labels.gz").string());  // created when missing, private
  CHECK((fs::status(home.path / "cache").permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK(fs::file_size(named) == fs::file_size(src));
}

TEST_CASE("MNIST from a mirror: every download is checked against MNIST's published SHA-256") {
  NoProxy np;
  HttpServer server(kData + "/mnist");  // the fixtures: MNIST's format, not MNIST's files
  TempDir tmp;
  std::string e = io_error_of(
      [&] { datasets::MNIST(true, datasets::MNIST::default_transform(), {}, tmp.str(), server.url()); });
  INFO(e);
  CHECK(dzt::has(e, server.url() + "train-images-idx3-ubyte.gz"));
  CHECK(dzt::has(e, "37e24d9076e13c707fd6d16e528d7d5ac740645e3cfe41e12ceed17e67a7cc81"));  // what came
  CHECK(dzt::has(e, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"));  // MNIST's
  CHECK(server.requests() == 1);
  CHECK(tmp.entries() == 0);  // nothing kept, no temporary file

  // the mirror from $DEZERO_MNIST_MIRROR (no trailing slash needed), into the cache: the same check
  TempDir home;
  ScopedEnv h("DEZERO_HOME", home.str());
  std::string mirror = server.url();
  mirror.pop_back();
  ScopedEnv env("DEZERO_MNIST_MIRROR", mirror);
  e = io_error_of([&] { datasets::MNIST(false); });
  INFO(e);
  CHECK(dzt::has(e, server.url() + "t10k-images-idx3-ubyte.gz"));
  CHECK(dzt::has(e, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"));
  CHECK(server.requests() == 2);
  CHECK(home.entries() == 0);
}

TEST_CASE("get_file with a SHA-256: kept when it matches; wrong bytes leave nothing and name both hashes") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir home;
  ScopedEnv env("DEZERO_HOME", (home.path / "cache").string());
  const fs::path cache = home.path / "cache";
  const std::string name = "t10k-labels-idx1-ubyte.gz";

  // a server that sends other bytes: refused, nothing left in the cache
  std::string e = io_error_of([&] { utils::get_file(server.url() + "wrong/" + name, "", "", with_sha(kLabelsSha)); });
  INFO(e);
  CHECK(dzt::has(e, server.url() + "wrong/" + name));
  CHECK(dzt::has(e, std::string("expected ") + kLabelsSha));
  std::string sent = dzt::read_bytes(kData + "/mnist/" + name);
  sent.back() = static_cast<char>(sent.back() ^ 1);
  TempDir other;
  dzt::write_bytes(other.path / "sent", sent);
  CHECK(dzt::has(e, "SHA-256 " + utils::sha256_file((other.path / "sent").string())));
  CHECK(fs::is_empty(cache));

  // the right bytes: kept; uppercase hex is accepted
  std::string upper = kLabelsSha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string got = utils::get_file(server.url() + name, "", "", with_sha(upper));
  CHECK(got == (cache / name).string());
  CHECK(utils::sha256_file(got) == kLabelsSha);
  CHECK(server.requests() == 2);

  // a cached file is checked on every call with a SHA-256, and not downloaded again
  CHECK(utils::get_file(server.url() + name, "", "", with_sha(kLabelsSha)) == got);
  CHECK(server.requests() == 2);
  std::string bytes = dzt::read_bytes(got);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
  dzt::write_bytes(got, bytes);
  e = io_error_of([&] { utils::get_file(server.url() + name, "", "", with_sha(kLabelsSha)); });
  INFO(e);
  CHECK(dzt::has(e, got));
  CHECK(dzt::has(e, std::string("expected ") + kLabelsSha));
  CHECK(dzt::has(e, "has SHA-256 " + utils::sha256_file(got)));
  CHECK(dzt::has(e, "delete it"));
  CHECK(server.requests() == 2);
  CHECK(dzt::read_bytes(got) == bytes);  // the user's file is not touched

  CHECK_THROWS_AS(utils::get_file(server.url() + name, "", "", with_sha("abc")), ValueError);
}

TEST_CASE("get_file fetches http and https only: file:// and others are a ValueError unless asked for") {
  TempDir tmp;
  const std::string src = fs::absolute(kData + "/mnist/t10k-labels-idx1-ubyte.gz").string();
  std::string e = dzt::thrown<ValueError>([&] { utils::get_file("file://" + src, "", tmp.str()); });
  INFO(e);
  CHECK(dzt::has(e, "file://" + src));
  CHECK(dzt::has(e, "allow_file_urls"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { utils::get_file("ftp://127.0.0.1/x.gz", "", tmp.str()); }), "ftp"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { utils::get_file("127.0.0.1/x.gz", "", tmp.str()); }), "no scheme"));
  CHECK(tmp.entries() == 0);

  utils::GetFileOptions o = with_sha(kLabelsSha);
  o.allow_file_urls = true;
  const std::string got = utils::get_file("file://" + src, "", tmp.str(), o);
  CHECK(dzt::read_bytes(got) == dzt::read_bytes(src));
}

TEST_CASE("get_file refuses a cache folder that others can write or that is not the user's") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir home;
  const fs::path cache = home.path / "shared";
  fs::create_directories(cache);
  ::chmod(cache.c_str(), 0777);
  ScopedEnv env("DEZERO_HOME", cache.string());
  std::string e = io_error_of([&] { utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz"); });
  INFO(e);
  CHECK(dzt::has(e, cache.string()));
  CHECK(dzt::has(e, "0777"));
  CHECK(dzt::has(e, "chmod go-w"));
  CHECK(dzt::has(e, "DEZERO_HOME"));
  CHECK(server.requests() == 0);
  // datasets use the same check for their cache
  CHECK(dzt::has(io_error_of([&] { datasets::MNIST(false, {}, {}, "", server.url()); }), "chmod go-w"));
  ::chmod(cache.c_str(), 0755);
  CHECK(fs::exists(utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz")));
  // another user's folder (root can make one)
  if (::geteuid() == 0 && ::chown(cache.c_str(), 12345, 12345) == 0) {
    e = io_error_of([&] { utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz"); });
    CHECK(dzt::has(e, "belongs to user id 12345"));
  }
}

TEST_CASE("get_file never writes through a symlink planted at the old '<name>.part' name") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir home;
  ScopedEnv env("DEZERO_HOME", home.str());
  const fs::path victim = home.path / "victim.txt";
  dzt::write_bytes(victim, "precious");
  const std::string name = "t10k-labels-idx1-ubyte.gz";
  fs::create_symlink(victim, home.path / (name + ".part"));
  const std::string got = utils::get_file(server.url() + name);
  CHECK(dzt::read_bytes(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(got)));
  CHECK(dzt::read_bytes(got) == dzt::read_bytes(kData + "/mnist/" + name));
  CHECK(fs::is_symlink(fs::symlink_status(home.path / (name + ".part"))));  // left as it was
}

TEST_CASE("a body shorter than Content-Length or a 404 leaves no file and names the URL") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir tmp;
  std::string e = io_error_of([&] {
    datasets::MNIST(true, datasets::MNIST::default_transform(), {}, tmp.str(), server.url() + "short/");
  });
  CHECK(e.find(server.url() + "short/train-images-idx3-ubyte.gz") != std::string::npos);
  CHECK(e.find((tmp.path / "train-images-idx3-ubyte.gz").string()) != std::string::npos);
  CHECK(tmp.entries() == 0);  // no partial file, no .part

  e = io_error_of([&] { datasets::MNIST(false, {}, {}, tmp.str(), server.url() + "missing/"); });
  CHECK(e.find(server.url() + "missing/t10k-images-idx3-ubyte.gz") != std::string::npos);
  CHECK(e.find("404") != std::string::npos);
  CHECK(tmp.entries() == 0);

  e = io_error_of([&] { utils::get_file(server.url() + "short/t10k-labels-idx1-ubyte.gz", "", tmp.str()); });
  CHECK(e.find("short/t10k-labels-idx1-ubyte.gz") != std::string::npos);
  CHECK(tmp.entries() == 0);
}

// libcurl is dlopen()ed by the first download. CTest runs this case alone as
// download_without_libcurl, with DEZERO_LIBCURL naming a library that does not exist;
// in the suite's own run (DEZERO_LIBCURL unset) it has nothing to check.
TEST_CASE("get_file without libcurl is an IOError naming it, and leaves no file") {
  const char* lib = std::getenv("DEZERO_LIBCURL");
  if (!lib || std::string(lib).find("missing") == std::string::npos) {
    MESSAGE("skipped: run by CTest's download_without_libcurl (DEZERO_LIBCURL names a missing library)");
    return;
  }
  Tensor t = ones(Shape{2, 3});  // everything but a download works without libcurl
  CHECK(t.sum().item<double>() == 6.0);
  TempDir tmp;
  std::string e = io_error_of([&] { utils::get_file("http://127.0.0.1:9/file.gz", "", tmp.str()); });
  INFO(e);
  CHECK(e.find(lib) != std::string::npos);
  CHECK(e.find("libcurl") != std::string::npos);
  CHECK(e.find("apt-get install libcurl4") != std::string::npos);
  CHECK(tmp.entries() == 0);
  // the failure is kept: a second download says the same
  CHECK(io_error_of([&] { utils::get_file("http://127.0.0.1:9/file.gz", "", tmp.str()); }) == e);
}

// libcrypto is dlopen()ed by the first checksum. CTest runs this case alone as
// checksum_without_libcrypto, with DEZERO_LIBCRYPTO naming a library that does not exist.
TEST_CASE("get_file with a SHA-256 but without libcrypto is an IOError naming it, and downloads nothing") {
  const char* lib = std::getenv("DEZERO_LIBCRYPTO");
  if (!lib || std::string(lib).find("missing") == std::string::npos) {
    MESSAGE("skipped: run by CTest's checksum_without_libcrypto (DEZERO_LIBCRYPTO names a missing library)");
    return;
  }
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir tmp;
  std::string e = io_error_of(
      [&] { utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz", "", tmp.str(), with_sha(kLabelsSha)); });
  INFO(e);
  CHECK(dzt::has(e, lib));
  CHECK(dzt::has(e, "libcrypto"));
  CHECK(dzt::has(e, "apt-get install libssl3"));
  CHECK(server.requests() == 0);
  CHECK(tmp.entries() == 0);
  // without a checksum the download works
  CHECK(fs::exists(utils::get_file(server.url() + "t10k-labels-idx1-ubyte.gz", "", tmp.str())));
}
