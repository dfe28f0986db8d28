// tests/test_cifar10.cpp - datasets::CIFAR10 on the small archives of tools/make_cifar_fixture.py
// (tests/data/cifar10, tests/data/cifar10_bad): values, order, the default transform, labels(),
// every way a damaged archive is refused; and datasets::ImageNet::labels().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <dezero/datasets.hpp>
#include <dezero/transforms.hpp>

#include "support/gzip_bomb.hpp"
#include "support/memory_ceiling.hpp"
#include "support/test_util.hpp"

using namespace dezero;
namespace fs = std::filesystem;
namespace T = dezero::transforms;

namespace {
using dzt::ScopedEnv;
using dzt::TempDir;

const std::string kData = dzt::data_dir();
const std::string kDir = kData + "/cifar10";
const std::string kArchive = "cifar-10-binary.tar.gz";

// tools/make_cifar_fixture.py's formulas; batch 1..5 are data_batch_*, 6 is test_batch.
int pixel(int batch, int n, int c, int r, int col) { return (batch * 40 + n * 13 + c * 80 + r * 3 + col * 5) % 256; }
int label(int batch, int n) { return (batch * 3 + n) % 10; }

template <class Fn>
std::string io_error_of(Fn fn) {
  return dzt::thrown<IOError>(fn);
}

std::string bad(const std::string& which) { return kData + "/cifar10_bad/" + which; }

// The GPU machines may lack libarchive: a CIFAR10 case there says "skipped" (visibly) instead of
// failing. Here (libarchive-dev pulls in libarchive13) it is loaded and the cases run.
bool skip_without_libarchive() {
  std::string e = dzt::thrown<IOError>([] { datasets::CIFAR10(false, {}, {}, kDir); });
  if (!dzt::has(e, "CIFAR10 needs libarchive.so.13")) return false;
  MESSAGE("skipped: libarchive.so.13 cannot be loaded (" << e << ")");
  return true;
}

// The good archive copied into `dir` with its bytes changed by `edit`.
template <class Edit>
std::string damaged_copy(const TempDir& dir, Edit edit) {
  std::string bytes = dzt::read_bytes(kDir + "/" + kArchive);
  edit(bytes);
  fs::path p = dir.path / kArchive;
  dzt::write_bytes(p, bytes);
  return p.string();
}
}  // namespace

TEST_CASE("CIFAR10 train: 5 batches in order, (N, 3, 32, 32) int32 R, G, B planes, int64 labels") {
  if (skip_without_libarchive()) return;
  datasets::CIFAR10 train(true, {}, {}, kDir);
  CHECK(train.train());
  REQUIRE(train.size() == 15);
  CHECK(train.data().shape() == Shape{15, 3, 32, 32});
  CHECK(train.data().dtype() == int32);
  CHECK(train.label().shape() == Shape{15});
  CHECK(train.label().dtype() == int64);

  std::vector<double> t = dzt::vals(train.label());
  std::vector<double> want;
  for (int b = 1; b <= 5; ++b)
    for (int n = 0; n < 3; ++n) want.push_back(label(b, n));
  CHECK(t == want);  // data_batch_1 first, data_batch_5 last

  std::vector<double> x = dzt::vals(train.data());
  auto at = [&](int i, int c, int r, int col) { return x[static_cast<std::size_t>(((i * 3 + c) * 32 + r) * 32 + col)]; };
  // sample 0 = data_batch_1 record 0; sample 7 = data_batch_3 record 1; sample 14 = data_batch_5 record 2
  CHECK(at(0, 0, 0, 0) == pixel(1, 0, 0, 0, 0));
  CHECK(at(7, 0, 5, 9) == pixel(3, 1, 0, 5, 9));
  CHECK(at(7, 1, 5, 9) == pixel(3, 1, 1, 5, 9));  // G plane follows R
  CHECK(at(7, 2, 31, 30) == pixel(3, 1, 2, 31, 30));
  CHECK(at(14, 2, 31, 31) == pixel(5, 2, 2, 31, 31));
  CHECK(at(7, 1, 5, 9) != at(7, 0, 5, 9));  // the formula does tell the planes apart
  bool all = true;
  for (int i = 0; i < 15 && all; ++i)
    for (int c = 0; c < 3 && all; ++c)
      for (int r = 0; r < 32 && all; ++r)
        for (int col = 0; col < 32; ++col)
          if (at(i, c, r, col) != pixel(1 + i / 3, i % 3, c, r, col)) {
            all = false;
            FAIL_CHECK("sample " << i << " c " << c << " r " << r << " col " << col);
            break;
          }
  CHECK(all);

  auto [xi, ti] = train.get(4);  // data_batch_2 record 1
  CHECK(xi.shape() == Shape{3, 32, 32});
  CHECK(ti.item<std::int64_t>() == label(2, 1));
  CHECK(xi.to_vector<double>()[32 * 32 + 2 * 32 + 3] == pixel(2, 1, 1, 2, 3));
}

TEST_CASE("CIFAR10 test: test_batch only, 4 records") {
  if (skip_without_libarchive()) return;
  datasets::CIFAR10 test(false, {}, {}, kDir);
  CHECK_FALSE(test.train());
  REQUIRE(test.size() == 4);
  CHECK(test.data().shape() == Shape{4, 3, 32, 32});
  CHECK(dzt::vals(test.label()) == std::vector<double>{8, 9, 0, 1});
  std::vector<double> x = dzt::vals(test.data());
  CHECK(x[static_cast<std::size_t>(((3 * 3 + 2) * 32 + 10) * 32 + 20)] == pixel(6, 3, 2, 10, 20));
}

TEST_CASE("CIFAR10 default transform: float32 in [-1, 1], (x - 127.5) / 127.5") {
  if (skip_without_libarchive()) return;
  datasets::CIFAR10 train(true, datasets::CIFAR10::default_transform(), {}, kDir);
  CHECK(train.data().dtype() == float32);
  CHECK(train.data().shape() == Shape{15, 3, 32, 32});
  std::vector<double> x = dzt::vals(train.data());
  double lo = 1e9, hi = -1e9;
  for (double v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= -1.0);
  CHECK(hi <= 1.0);
  CHECK(lo < -0.9);  // the fixture's pixels span 0..255 closely enough
  CHECK(hi > 0.9);
  auto [x7, t7] = train.get(7);
  float want = static_cast<float>((pixel(3, 1, 1, 5, 9) - 127.5) / 127.5);
  CHECK(x7.to_vector<float>()[32 * 32 + 5 * 32 + 9] == doctest::Approx(want).epsilon(1e-6));
  CHECK(t7.dtype() == int64);
  // DeZero's own normalisation is one argument away: (x - 0.5) / 0.5 on 0..255
  datasets::CIFAR10 dz(false, T::Compose({T::ToFloat(), T::Normalize(0.5, 0.5)}), {}, kDir);
  CHECK(dz.data().to_vector<float>()[0] == doctest::Approx((pixel(6, 0, 0, 0, 0) - 0.5) / 0.5));
}

TEST_CASE("CIFAR10 labels() and ImageNet::labels()") {
  auto l = datasets::CIFAR10::labels();
  REQUIRE(l.size() == 10);
  CHECK(l.at(0) == "airplane");  // DeZero: "ariplane"
  CHECK(l.at(1) == "automobile");
  CHECK(l.at(3) == "cat");
  CHECK(l.at(9) == "truck");
  CHECK(std::string(datasets::CIFAR10::file_name()) == "cifar-10-binary.tar.gz");
  CHECK(std::string(datasets::CIFAR10::default_mirror()) == "https://www.cs.toronto.edu/~kriz/");

  auto in = datasets::ImageNet::labels();
  REQUIRE(in.size() == 1000);
  CHECK(in.begin()->first == 0);
  CHECK(in.rbegin()->first == 999);
  CHECK(in.at(0) == "tench, Tinca tinca");
  CHECK(in.at(1) == "goldfish, Carassius auratus");
  CHECK(in.at(207) == "golden retriever");
  CHECK(in.at(281) == "tabby, tabby cat");
  CHECK(in.at(340) == "zebra");
  CHECK(in.at(319) == "dragonfly, darning needle, devil's darning needle, sewing needle, snake feeder, snake doctor, "
                      "mosquito hawk, skeeter hawk");
  CHECK(in.at(999) == "toilet tissue, toilet paper, bathroom tissue");
  for (const auto& kv : in) CHECK_MESSAGE(!kv.second.empty(), kv.first);
}

TEST_CASE("CIFAR10: a truncated or corrupt archive is an IOError naming the file") {
  if (skip_without_libarchive()) return;
  TempDir tmp;
  std::string p = damaged_copy(tmp, [](std::string& b) { b.resize(b.size() / 2); });
  std::string e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, tmp.str()); });
  INFO(e);
  CHECK(dzt::has(e, "CIFAR10"));
  CHECK(dzt::has(e, p));
  CHECK(dzt::has(e, "truncated or corrupt"));

  TempDir tmp2;
  p = damaged_copy(tmp2, [](std::string& b) {
    for (std::size_t k = 30; k < 80; ++k) b[k] = static_cast<char>(b[k] ^ 0x5a);
  });
  e = io_error_of([&] { datasets::CIFAR10(false, {}, {}, tmp2.str()); });
  INFO(e);
  CHECK(dzt::has(e, p));
  CHECK(dzt::has(e, "libarchive"));

  TempDir tmp3;  // the gzip trailer (CRC32) damaged
  p = damaged_copy(tmp3, [](std::string& b) { b[b.size() - 6] = static_cast<char>(b[b.size() - 6] ^ 1); });
  e = io_error_of([&] { datasets::CIFAR10(false, {}, {}, tmp3.str()); });
  INFO(e);
  CHECK(dzt::has(e, p));

  std::string not_tar = bad("not_tar") + "/" + kArchive;
  e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, bad("not_tar")); });
  INFO(e);
  CHECK(dzt::has(e, not_tar));
  CHECK(dzt::has(e, "libarchive"));
}

TEST_CASE("CIFAR10: record sizes, labels and members are checked, and nothing is kept") {
  if (skip_without_libarchive()) return;
  std::string e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, bad("record_size")); });
  INFO(e);
  CHECK(dzt::has(e, bad("record_size") + "/" + kArchive));
  CHECK(dzt::has(e, "cifar-10-batches-bin/data_batch_2.bin"));
  CHECK(dzt::has(e, std::to_string(2 * 3073 + 100) + " bytes"));
  CHECK(dzt::has(e, "3073-byte records"));
  // the test split does not read the damaged member
  CHECK(datasets::CIFAR10(false, {}, {}, bad("record_size")).size() == 4);

  e = io_error_of([&] { datasets::CIFAR10(false, {}, {}, bad("empty_member")); });
  INFO(e);
  CHECK(dzt::has(e, "test_batch.bin holds 0 bytes"));

  e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, bad("label10")); });
  INFO(e);
  CHECK(dzt::has(e, bad("label10") + "/" + kArchive));
  CHECK(dzt::has(e, "data_batch_3.bin, record 1 has label 10"));
  CHECK(dzt::has(e, "0-9"));

  e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, bad("missing_member")); });
  INFO(e);
  CHECK(dzt::has(e, "has no member cifar-10-batches-bin/data_batch_4.bin"));
  CHECK(dzt::has(e, "data_batch_5.bin"));  // the members it does hold are listed
  CHECK(datasets::CIFAR10(false, {}, {}, bad("missing_member")).size() == 4);
}

TEST_CASE("CIFAR10: no file and an unreachable mirror is an IOError naming the URL; no file is left") {
  if (skip_without_libarchive()) return;
  TempDir tmp;
  std::string e = io_error_of([&] { datasets::CIFAR10(true, {}, {}, tmp.str(), "file:///nonexistent/"); });
  INFO(e);
  CHECK(dzt::has(e, "file:///nonexistent/cifar-10-binary.tar.gz"));
  CHECK(dzt::has(e, "CIFAR10: cifar-10-binary.tar.gz is not in " + tmp.str()));
  CHECK(dzt::has(e, "DEZERO_CIFAR10_MIRROR"));
  CHECK(tmp.entries() == 0);

  // $DEZERO_CIFAR10_MIRROR, and $DEZERO_HOME as the folder without `dir`
  ScopedEnv home("DEZERO_HOME", tmp.str());
  ScopedEnv mirror("DEZERO_CIFAR10_MIRROR", "file:///nonexistent/env-mirror");
  e = io_error_of([&] { datasets::CIFAR10(false); });
  INFO(e);
  CHECK(dzt::has(e, "file:///nonexistent/env-mirror/cifar-10-binary.tar.gz"));
  CHECK(tmp.entries() == 0);

  // a mirror that has a file of that name: it is downloaded into $DEZERO_HOME and checked against
  // CIFAR-10's published SHA-256; the fixture is not that file, so nothing is kept
  ScopedEnv good("DEZERO_CIFAR10_MIRROR", "file://" + fs::absolute(kDir).string());
  e = io_error_of([&] { datasets::CIFAR10(false); });
  INFO(e);
  CHECK(dzt::has(e, "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"));
  CHECK(dzt::has(e, "file://" + fs::absolute(kDir).string() + "/" + kArchive));
  CHECK(tmp.entries() == 0);
  // one already in the cache is checked on every load
  fs::copy_file(kDir + "/" + kArchive, tmp.path / kArchive);
  e = io_error_of([&] { datasets::CIFAR10(false); });
  INFO(e);
  CHECK(dzt::has(e, "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"));
  CHECK(dzt::has(e, (tmp.path / kArchive).string()));
  CHECK(dzt::has(e, "delete it"));
  // one in an explicit dir is the caller's, read as it is
  CHECK(datasets::CIFAR10(false, {}, {}, tmp.str()).size() == 4);
}

// --- the cap on samples ------------------------------------------------------------------------
namespace {
// A ustar header for a regular file `name` of `size` bytes.
std::string tar_header(const std::string& name, std::uint64_t size) {
  std::string h(512, '\0');
  auto put = [&](std::size_t off, const std::string& v) { h.replace(off, v.size(), v); };
  auto octal = [](std::uint64_t v, int width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", width - 1, static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  put(0, name);
  put(100, octal(0644, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(size, 12));
  put(136, octal(0, 12));
  h[156] = '0';
  put(257, std::string("ustar\0", 6));
  put(263, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  return h;
}
}  // namespace

TEST_CASE("CIFAR10: a small .tar.gz with a huge member is refused before it is read") {
  if (skip_without_libarchive()) return;
  TempDir tmp;
  // test_batch.bin of 70,000 zero records (215 MB, label 0): about 210 kB of gzip
  const std::uint64_t size = 70000ull * 3073;
  const std::uint64_t padded = (size + 511) / 512 * 512;
  const std::string bytes =
      dzt::gzip_zeros(tar_header("cifar-10-batches-bin/test_batch.bin", size), padded + 1024);
  REQUIRE(bytes.size() < 400000);
  dzt::write_bytes(tmp.path / kArchive, bytes);
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { datasets::CIFAR10(false, {}, {}, tmp.str()); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "error: CIFAR10: " + (tmp.path / kArchive).string()));
  CHECK(dzt::has(run.outcome, "declares 215110000 bytes (70000 records)"));
  CHECK(dzt::has(run.outcome, "cap of 60000 samples"));
  CHECK(dzt::has(run.outcome, "datasets::set_max_cifar_samples"));
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb >= 0);
  CHECK(run.grew_kb < 64 * 1024);  // before the cap: about 2 GB
}

TEST_CASE("CIFAR10: the cap counts every wanted member, repeats included, and is settable") {
  if (skip_without_libarchive()) return;
  datasets::set_max_cifar_samples(3);  // the fixture's test split has 4 records
  std::string e = io_error_of([&] { datasets::CIFAR10(false, {}, {}, kDir); });
  datasets::set_max_cifar_samples(14);  // its training split 5 x 3
  std::string e2 = io_error_of([&] { datasets::CIFAR10(true, {}, {}, kDir); });
  datasets::set_max_cifar_samples(60000);
  INFO(e);
  CHECK(dzt::has(e, "member cifar-10-batches-bin/test_batch.bin declares 12292 bytes (4 records)"));
  CHECK(dzt::has(e, "cap of 3 samples"));
  INFO(e2);
  CHECK(dzt::has(e2, "data_batch_5.bin declares 9219 bytes (3 records), which with the 12 records read before it"));
  CHECK(dzt::has(e2, "cap of 14 samples"));
  CHECK(datasets::CIFAR10(true, {}, {}, kDir).size() == 15);
}

TEST_CASE("CIFAR10 without libarchive is an IOError naming it") {
  const char* lib = std::getenv("DEZERO_LIBARCHIVE");
  if (!lib || std::string(lib).find("missing") == std::string::npos) {
    MESSAGE("skipped: run by CTest's cifar10_without_libarchive (DEZERO_LIBARCHIVE names a missing library)");
    return;
  }
  std::string e = io_error_of([&] { datasets::CIFAR10(false, {}, {}, kDir); });
  INFO(e);
  CHECK(dzt::has(e, "CIFAR10 needs libarchive.so.13"));
  CHECK(dzt::has(e, lib));
  CHECK(dzt::has(e, "libarchive13"));
  CHECK(dzt::has(e, kDir + "/" + kArchive));
  // the failure is kept: a second try says the same
  CHECK(io_error_of([&] { datasets::CIFAR10(false, {}, {}, kDir); }) == e);
}
