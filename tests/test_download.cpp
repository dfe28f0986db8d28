// tests/test_download.cpp - utils::get_file and MNIST's download against a tiny HTTP/1.0
// server on 127.0.0.1 (an ephemeral port, a std::thread in this test): complete files,
// a body shorter than its Content-Length, a 404; none may leave a partial file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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
// file's length but sends half and closes; anything else is a 404.
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
    std::string name = short_body ? path.substr(7) : path.substr(1);
    fs::path file = fs::path(root_) / name;
    if (method != "GET" || name.empty() || name.find('/') != std::string::npos || !fs::exists(file)) {
      send_all(c, "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found");
      return;
    }
    std::string b = dzt::read_bytes(file);
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
  CHECK(named == (home.path / "cache" / "labels.gz").string());  // created when missing
  CHECK(fs::file_size(named) == fs::file_size(src));
}

TEST_CASE("MNIST downloads missing files from the mirror and parses them") {
  NoProxy np;
  HttpServer server(kData + "/mnist");
  TempDir tmp;
  datasets::MNIST ds(true, datasets::MNIST::default_transform(), {}, tmp.str(), server.url());
  CHECK(server.requests() == 2);
  CHECK(ds.size() == 12);
  CHECK(ds.data().shape() == Shape{12, 784});
  CHECK(fs::exists(tmp.path / "train-images-idx3-ubyte.gz"));
  CHECK(fs::exists(tmp.path / "train-labels-idx1-ubyte.gz"));
  CHECK(tmp.entries() == 2);
  datasets::MNIST again(true, datasets::MNIST::default_transform(), {}, tmp.str(), server.url());
  CHECK(server.requests() == 2);  // cached

  // the mirror from $DEZERO_MNIST_MIRROR (no trailing slash needed)
  TempDir tmp2;
  std::string mirror = server.url();
  mirror.pop_back();
  ScopedEnv env("DEZERO_MNIST_MIRROR", mirror);
  datasets::MNIST test(false, {}, {}, tmp2.str());
  CHECK(test.size() == 5);
  CHECK(server.requests() == 4);
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
