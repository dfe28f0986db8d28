// tests/test_npz.cpp - utils::load_npz / save_npz against NumPy's own files (fixtures made
// by tools/make_npz_fixtures.py), and Layer::save_weights / load_weights: round trips,
// DeZero's keys, and files that must be refused without changing the model; no write through a
// planted symlink; the cap on what a file may declare (utils::set_max_npz_bytes).
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/gzip_bomb.hpp"
#include "support/memory_ceiling.hpp"
#include "support/test_util.hpp"

using namespace dezero;
namespace L = dezero::L;
namespace fs = std::filesystem;

namespace {

std::string data_path(const std::string& name) { return dzt::data_dir() + "/" + name; }


fs::path out_dir() {
  fs::path d = fs::temp_directory_path() / "dezero_test_npz";
  fs::create_directories(d);
  return d;
}

const Tensor& get(const utils::NamedTensors& a, const std::string& key) {
  for (const auto& [k, t] : a)
    if (k == key) return t;
  FAIL("no key " << key);
  throw 0;
}

// The arrays of make_npz_fixtures.py's arrays(), checked exactly.
void check_fixture_arrays(const utils::NamedTensors& a) {
  std::vector<std::string> keys;
  for (const auto& [k, t] : a) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"l0/W", "l0/b", "f8", "i4", "i8", "scalar", "u1", "b1", "empty", "be",
                                         "cube"});
  CHECK(get(a, "l0/W").dtype() == float32);
  CHECK(get(a, "l0/W").shape() == Shape{2, 3});
  CHECK(get(a, "l0/W").to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f});
  CHECK(get(a, "l0/b").to_vector<float>() == std::vector<float>{0.5f, -1.5f, 2.0f});
  CHECK(get(a, "f8").dtype() == float64);
  CHECK(get(a, "f8").to_vector<double>() == std::vector<double>{-0.5, -0.375, -0.25, -0.125, 0, 0.125, 0.25});
  CHECK(get(a, "i4").dtype() == int32);
  CHECK(get(a, "i4").to_vector<std::int32_t>() == std::vector<std::int32_t>{-3, 0, 2147483647});
  CHECK(get(a, "i8").dtype() == int64);
  CHECK(get(a, "i8").shape() == Shape{2, 2});
  CHECK(get(a, "i8").to_vector<std::int64_t>() == std::vector<std::int64_t>{-(1LL << 40), 1, 2, 3});
  CHECK(get(a, "scalar").shape() == Shape{});
  CHECK(get(a, "scalar").dtype() == float64);
  CHECK(get(a, "scalar").item<double>() == 2.5);
  CHECK(get(a, "u1").dtype() == int32);  // '|u1' widens to int32
  CHECK(get(a, "u1").to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, 255});
  CHECK(get(a, "b1").dtype() == int32);  // '|b1' too
  CHECK(get(a, "b1").to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 0, 1});
  CHECK(get(a, "empty").shape() == Shape{0, 3});
  CHECK(get(a, "be").dtype() == float64);  // '>f8' byte-swapped
  CHECK(get(a, "be").to_vector<double>() == std::vector<double>{1.5, -2.0});
  std::vector<float> cube(24);
  for (int i = 0; i < 24; ++i) cube[i] = static_cast<float>(i);
  CHECK(get(a, "cube").shape() == Shape{2, 3, 4});
  CHECK(get(a, "cube").to_vector<float>() == cube);
}

// What make_npz_fixtures.py --check expects (its OURS).
utils::NamedTensors ours() {
  return {
      {"a", array(std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}, Shape{2, 3})},
      {"b", array(std::vector<double>{-1, -0.75, -0.5, -0.25, 0})},
      {"c", array(std::vector<std::int32_t>{-1, 0, 7})},
      {"d", array(std::vector<std::int64_t>{1, -2, 3, 1LL << 40}, Shape{2, 2})},
      {"e", array(3.25)},
      {"l0/W", zeros({0, 3}, float32)},
  };
}

std::vector<std::vector<double>> snapshot(const L::Layer& m) {
  std::vector<std::vector<double>> out;
  for (auto& p : m.params()) out.push_back(p.data().to_vector<double>());
  return out;
}

}  // namespace

// --- NumPy's files ------------------------------------------------------------------------------
TEST_CASE("npz: np.savez fixture (stored entries, zip64 local headers) loads exactly") {
  check_fixture_arrays(utils::load_npz(data_path("npz_savez.npz")));
}

TEST_CASE("npz: np.savez_compressed fixture (deflate) loads exactly") {
  check_fixture_arrays(utils::load_npz(data_path("npz_savez_compressed.npz")));
}

TEST_CASE("npz: .npy format versions 1.0, 2.0, 3.0") {
  auto a = utils::load_npz(data_path("npz_versions.npz"));
  REQUIRE(a.size() == 3);
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i) want[i] = i - 5.5;
  for (const auto& [k, t] : a) {
    CAPTURE(k);
    CHECK(t.shape() == Shape{3, 4});
    CHECK(t.to_vector<double>() == want);
  }
}

TEST_CASE("npz: zip64 end record and central-directory fields") {
  auto a = utils::load_npz(data_path("npz_zip64.npz"));
  CHECK(get(a, "x").to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(get(a, "y").shape() == Shape{1, 2});
  CHECK(get(a, "y").to_vector<float>() == std::vector<float>{1, 2});
}

TEST_CASE("npz: fortran_order is a clear error (float16 loads: test_half.cpp)") {
  CHECK_THROWS_WITH_AS(utils::load_npz(data_path("npz_fortran.npz")), doctest::Contains("fortran_order"), IOError);
  CHECK_THROWS_AS(utils::load_npz(data_path("no_such_file.npz")), IOError);
}

TEST_CASE("npz: every truncation of a file throws; corrupt bytes throw or load, never crash") {
  for (const char* name : {"npz_savez.npz", "npz_savez_compressed.npz"}) {
    const std::string bytes = dzt::read_bytes(data_path(name));
    REQUIRE(bytes.size() > 100);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      CAPTURE(n);
      CHECK_THROWS_AS(utils::parse_npz(bytes.substr(0, n)), Error);
    }
    int thrown = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ 0x5a);
      try {
        utils::parse_npz(b);
      } catch (const Error&) {
        ++thrown;
      }
    }
    MESSAGE(std::string(name) << ": " << thrown << " of " << bytes.size() << " single-byte corruptions rejected");
    CHECK(thrown > static_cast<int>(bytes.size()) / 2);
  }
  // A flipped data byte is caught by the CRC.
  std::string b = dzt::read_bytes(data_path("npz_savez.npz"));
  b[150] = static_cast<char>(b[150] ^ 1);  // inside l0/W's array data
  CHECK_THROWS_WITH_AS(utils::parse_npz(b), doctest::Contains("CRC"), IOError);
}

// --- our files ----------------------------------------------------------------------------------
TEST_CASE("npz: save_npz round trip, stored and compressed, every dtype, 0-d and empty") {
  for (bool compressed : {false, true}) {
    CAPTURE(compressed);
    const fs::path p = out_dir() / (compressed ? "dezero_written_compressed.npz" : "dezero_written.npz");
    utils::save_npz(p.string(), ours(), compressed);
    CHECK_FALSE(fs::exists(p.string() + ".tmp"));
    auto back = utils::load_npz(p.string());
    auto want = ours();
    REQUIRE(back.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(back[i].first == want[i].first);
      CHECK(back[i].second.dtype() == want[i].second.dtype());
      CHECK(back[i].second.shape() == want[i].second.shape());
      CHECK(utils::array_equal(back[i].second, want[i].second));
    }
  }
  MESSAGE("check in NumPy: /usr/bin/python3 tools/make_npz_fixtures.py --check " << (out_dir() / "dezero_written.npz").string()
                                                                                 << " " << (out_dir() / "dezero_written_compressed.npz").string());
}

TEST_CASE("npz: our writer is deterministic and matches the committed file NumPy checked") {
  // tests/data/dezero_written.npz was written by save_npz(ours()) and verified with
  // make_npz_fixtures.py --check; the writer must still produce the same bytes.
  CHECK(utils::serialize_npz(ours(), false) == dzt::read_bytes(data_path("dezero_written.npz")));
  check_fixture_arrays(utils::parse_npz(utils::serialize_npz(utils::load_npz(data_path("npz_savez.npz")), true)));
}

TEST_CASE("npz: .npy headers are 64-byte aligned like NumPy's") {
  std::string npy = utils::serialize_npy(ones({3, 4}, float32));
  CHECK(npy.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  CHECK(npy.size() == 128 + 48);  // 10-byte prefix + dict + padding = 128
  CHECK(npy[127] == '\n');
  CHECK(npy.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }") == 10);
}

TEST_CASE("npz: bad names are refused") {
  CHECK_THROWS_AS(utils::serialize_npz({{"a", ones({1})}, {"a", ones({1})}}), ValueError);
  CHECK_THROWS_AS(utils::serialize_npz({{"", ones({1})}}), ValueError);
}

// --- weight files ------------------------------------------------------------------------------
TEST_CASE("weights: DeZero's keys, and NumPy's MLP weights give NumPy's output") {
  models::MLP model({3, 2});
  model.load_weights(data_path("mlp_weights.npz"));  // lazy parameters take the file's arrays
  std::vector<std::string> keys;
  for (auto& [k, p] : model.named_params()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"l0/W", "l0/b", "l1/W", "l1/b"});
  auto io = utils::load_npz(data_path("mlp_io.npz"));
  Variable y = model(get(io, "x"));
  CHECK(y.dtype() == float32);
  CHECK(dzt::allclose(y.data(), get(io, "y"), 1e-5, 1e-6));
}

TEST_CASE("weights: save/load round trip is bit-identical; save leaves the model on its device") {
  dzt::on_each_device([](Device dev) {
    random::seed(3);
    models::MLP a({5, 3});
    a.to(dev);
    a(random::randn({2, 4}, float32, dev));
    const fs::path p = out_dir() / "mlp_roundtrip.npz";
    a.save_weights(p.string());
    for (auto& w : a.params()) CHECK(w.data().device() == dev);  // DeZero moved it to the CPU
    CHECK_FALSE(fs::exists(p.string() + ".tmp"));

    models::MLP b({5, 3});
    b.to(dev);
    b(random::randn({2, 4}, float32, dev));
    b.load_weights(p.string());
    CHECK(snapshot(a) == snapshot(b));
    for (auto& w : b.params()) CHECK(w.data().device() == dev);
    // DeZero's layout: keys l0/W ... as np.savez_compressed writes them.
    auto file = utils::load_npz(p.string());
    CHECK(file[0].first == "l0/W");
    CHECK(file[3].first == "l1/b");
  });
}

TEST_CASE("weights: a bad file throws and leaves the model exactly as it was") {
  random::seed(4);
  models::MLP model({3, 2});
  model(random::randn({1, 4}, float32));
  const auto before = snapshot(model);
  const fs::path dir = out_dir();
  auto good = utils::load_npz(data_path("mlp_weights.npz"));
  auto variant = [&](const std::string& name, utils::NamedTensors arrays) {
    const std::string p = (dir / name).string();
    utils::save_npz(p, arrays);
    return p;
  };

  utils::NamedTensors missing(good.begin(), good.end() - 1);
  utils::NamedTensors extra = good;
  extra.emplace_back("l2/W", ones({2, 2}));
  utils::NamedTensors shape = good;
  shape[2].second = ones({2, 3});
  utils::NamedTensors dtype = good;
  dtype[3].second = ones({2}, float64);
  CHECK_THROWS_WITH_AS(model.load_weights(variant("missing.npz", missing)), doctest::Contains("l1/b"), ValueError);
  CHECK_THROWS_WITH_AS(model.load_weights(variant("extra.npz", extra)), doctest::Contains("l2/W"), ValueError);
  CHECK_THROWS_WITH_AS(model.load_weights(variant("shape.npz", shape)), doctest::Contains("l1/W"), ShapeError);
  CHECK_THROWS_WITH_AS(model.load_weights(variant("dtype.npz", dtype)), doctest::Contains("float64"), DtypeError);

  const std::string bytes = dzt::read_bytes(data_path("mlp_weights.npz"));
  dzt::write_bytes((dir / "truncated.npz").string(), bytes.substr(0, bytes.size() - 30));
  CHECK_THROWS_AS(model.load_weights((dir / "truncated.npz").string()), IOError);
  std::string corrupt = bytes;
  corrupt[bytes.size() / 3] = static_cast<char>(corrupt[bytes.size() / 3] ^ 0xff);
  dzt::write_bytes((dir / "corrupt.npz").string(), corrupt);
  CHECK_THROWS_AS(model.load_weights((dir / "corrupt.npz").string()), Error);
  CHECK_THROWS_AS(model.load_weights((dir / "does_not_exist.npz").string()), IOError);

  CHECK(snapshot(model) == before);  // bit-identical
  model.load_weights(data_path("mlp_weights.npz"));
  CHECK(snapshot(model) != before);
}

TEST_CASE("weights: saving a never-run lazy model is a clear error, and writes nothing") {
  models::MLP model({3});
  const fs::path p = out_dir() / "lazy.npz";
  fs::remove(p);
  CHECK_THROWS_WITH_AS(model.save_weights(p.string()), doctest::Contains("l0/W"), ValueError);
  CHECK_FALSE(fs::exists(p));
}

TEST_CASE("weights: a save that fails leaves the previous file intact") {
  random::seed(5);
  models::MLP model({2});
  model(random::randn({1, 3}, float32));
  const fs::path p = out_dir() / "keep.npz";
  model.save_weights(p.string());
  const std::string before = dzt::read_bytes(p.string());
  Tensor w = model.params()[0].data();
  w.fill_(7.0);
  {
    // a full disk: no file may grow past 16 bytes (EFBIG; SIGXFSZ ignored), even as root
    rlimit old{};
    ::getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = 16;
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    ::setrlimit(RLIMIT_FSIZE, &small);
    std::string e = dzt::thrown<IOError>([&] { model.save_weights(p.string()); });
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    INFO(e);
    CHECK(dzt::has(e, p.string()));
  }
  CHECK(dzt::read_bytes(p.string()) == before);
  for (const auto& entry : fs::directory_iterator(out_dir()))  // no temporary file left
    CHECK(entry.path().filename().string().rfind("keep.npz.", 0) == std::string::npos);
  model.save_weights(p.string());  // and a later save replaces it
  CHECK(dzt::read_bytes(p.string()) != before);
}

TEST_CASE("save_npz and save_weights never write through a symlink planted at '<path>.tmp'") {
  dzt::TempDir dir;
  const fs::path victim = dir.path / "victim.txt";
  dzt::write_bytes(victim, "precious");
  const fs::path p = dir.path / "model.npz";
  fs::create_symlink(victim, p.string() + ".tmp");
  utils::save_npz(p.string(), {{"a", ones({2, 3})}});
  CHECK(dzt::read_bytes(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(p)));
  CHECK(utils::load_npz(p.string())[0].second.shape() == Shape{2, 3});

  random::seed(6);
  models::MLP model({2});
  model(random::randn({1, 3}, float32));
  const fs::path w = dir.path / "weights.npz";
  fs::create_symlink(victim, w.string() + ".tmp");
  model.save_weights(w.string());
  CHECK(dzt::read_bytes(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(w)));
  CHECK(dir.names() == std::vector<std::string>{"model.npz", "model.npz.tmp", "victim.txt", "weights.npz",
                                                "weights.npz.tmp"});  // the planted links, untouched
}

// --- the cap -------------------------------------------------------------------------------------
namespace {
// A zip whose one deflated entry "a.npy" declares `usize` bytes uncompressed and holds `csize`
// bytes of (junk) data: a bomb's central directory.
std::string zip_declaring(std::uint32_t usize, std::uint32_t csize) {
  auto put = [](std::string& out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  const std::string name = "a.npy";
  auto fields = [&](std::string& out) {
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, 8, 2);  // deflate
    put(out, 0, 4);
    put(out, 0, 4);  // CRC
    put(out, csize, 4);
    put(out, usize, 4);
    put(out, name.size(), 2);
    put(out, 0, 2);
  };
  std::string out;
  put(out, 0x04034b50, 4);
  fields(out);
  out += name;
  out += std::string(csize, '\0');
  const std::uint64_t cd = out.size();
  std::string central;
  put(central, 0x02014b50, 4);
  put(central, 20, 2);
  fields(central);
  put(central, 0, 2);
  put(central, 0, 2);
  put(central, 0, 2);
  put(central, 0, 4);
  put(central, 0, 4);  // local header at 0
  central += name;
  out += central;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, 1, 2);
  put(out, 1, 2);
  put(out, central.size(), 4);
  put(out, cd, 4);
  put(out, 0, 2);
  return out;
}
}  // namespace

TEST_CASE("npz: an entry declaring more than the cap is refused before anything is inflated") {
  CHECK(utils::get_max_npz_bytes() == (std::int64_t{2} << 30));
  // 3 GiB declared by 3.1 MB of data (deflate's 1032:1 at most)
  const std::string bomb = zip_declaring(3u << 30, (3u << 30) / 1000);
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { utils::parse_npz(bomb, "bomb.npz"); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "error: bomb.npz: entry 'a.npy' declares 3221225472 bytes uncompressed"));
  CHECK(dzt::has(run.outcome, "cap of 2147483648 bytes"));
  CHECK(dzt::has(run.outcome, "utils::set_max_npz_bytes"));
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb >= 0);
  CHECK(run.grew_kb < 64 * 1024);  // before the cap: 3 GiB

  // a lower cap: the entries' sizes add up, and the file's own size counts
  utils::set_max_npz_bytes(100);
  const std::string fixture = data_path("mlp_weights.npz");
  const std::string e = dzt::thrown<IOError>([&] { utils::load_npz(fixture); });
  const std::string e2 = dzt::thrown<IOError>([&] { utils::parse_npz(dzt::read_bytes(fixture), "w"); });
  utils::set_max_npz_bytes(std::int64_t{2} << 30);
  INFO(e);
  CHECK(dzt::has(e, "more than the cap of 100 bytes"));
  CHECK(dzt::has(e, "set_max_npz_bytes"));
  INFO(e2);
  CHECK(dzt::has(e2, "passes the cap of 100 bytes"));
  CHECK(utils::load_npz(fixture).size() == 4);
  CHECK_THROWS_AS(utils::set_max_npz_bytes(0), ValueError);
}

TEST_CASE("npz: get_array looks an array up by its key, and a missing key names the ones there are") {
  dzt::TempDir dir;
  const std::string path = (dir.path / "w.npz").string();
  const Tensor w = random::randn({3, 2}, float32);
  utils::save_npz(path, {{"l0/W", w}, {"l0/b", zeros({2}, float32)}});
  const Tensor got = utils::get_array(utils::load_npz(path), "l0/W");  // the handle outlives the list
  CHECK(utils::array_equal(got, w));
  const utils::NamedTensors arrays{{"a", w}};
  CHECK(utils::get_array(arrays, "a").is_same(w));  // a handle to the same tensor, not a copy
  const std::string msg = dzt::thrown<ValueError>([&] { utils::get_array(utils::load_npz(path), "l1/W"); });
  CHECK_MESSAGE(dzt::has(msg, "'l1/W'"), msg);
  CHECK_MESSAGE(dzt::has(msg, "'l0/W', 'l0/b'"), msg);
}

// --- what a file may make the reader allocate (issue 43, items 5, 6 and 8) -------------------------
namespace {
// The .npy header (version 1.0) of a C-order array of NumPy type `descr` and shape (n,).
std::string npy_header(const std::string& descr, std::uint64_t n) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  const std::size_t total = 10 + dict.size() + 1, padded = (total + 63) / 64 * 64;
  dict += std::string(padded - total, ' ') + "\n";
  std::string h("\x93NUMPY\x01\x00", 8);
  h.push_back(static_cast<char>(dict.size() & 0xff));
  h.push_back(static_cast<char>(dict.size() >> 8));
  return h + dict;
}

// A zip of deflated entries (name, stream): what np.savez_compressed writes, without zip64.
std::string zip_of(const std::vector<std::pair<std::string, dzt::DeflatedZeros>>& entries) {
  auto put = [](std::string& out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string out, central;
  for (const auto& [name, d] : entries) {
    auto fields = [&, &name = name, &d = d](std::string& o) {
      put(o, 20, 2);
      put(o, 0, 2);
      put(o, 8, 2);  // deflate
      put(o, 0, 4);
      put(o, d.crc, 4);
      put(o, d.raw.size(), 4);
      put(o, d.size, 4);
      put(o, name.size(), 2);
      put(o, 0, 2);
    };
    const std::uint64_t local = out.size();
    put(out, 0x04034b50, 4);
    fields(out);
    out += name + d.raw;
    put(central, 0x02014b50, 4);
    put(central, 20, 2);
    fields(central);
    put(central, 0, 6);
    put(central, 0, 4);
    put(central, local, 4);
    central += name;
  }
  const std::uint64_t cd = out.size();
  out += central;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, entries.size(), 2);
  put(out, entries.size(), 2);
  put(out, central.size(), 4);
  put(out, cd, 4);
  put(out, 0, 2);
  return out;
}

struct CapGuard {
  explicit CapGuard(std::int64_t cap) { utils::set_max_npz_bytes(cap); }
  ~CapGuard() { utils::set_max_npz_bytes(std::int64_t{2} << 30); }
};
}  // namespace

TEST_CASE("npz: a narrow-integer entry counts the tensor it widens to against the cap, before inflating it") {
  // 2 MB of deflate declaring 2 GiB - 1 of '|u1': 8 GiB as int32. An IOError, not std::bad_alloc,
  // and nothing of that size is allocated (the header is read from the stream's first bytes).
  const std::uint64_t n = (std::uint64_t{2} << 30) - 1 - 128;
  const std::string bomb = zip_of({{"a.npy", dzt::deflate_zeros(npy_header("|u1", n), n)}});
  CHECK(bomb.size() < 3u << 20);
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { utils::parse_npz(bomb, "bomb.npz"); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "error: bomb.npz: entry 'a.npy': its (" + std::to_string(n) + ",) array of 'u1' would take " +
                                  std::to_string(4 * n) + " bytes in memory as int32"));
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb < 64 * 1024);

  // Under a lower cap, one that fits as bytes but not widened (40 MiB of u1 -> 160 MiB).
  CapGuard cap(64 << 20);
  const std::uint64_t m = 40u << 20;
  const std::string npz = zip_of({{"b.npy", dzt::deflate_zeros(npy_header("|u1", m), m)}});
  const std::string e = dzt::thrown<IOError>([&] { utils::parse_npz(npz, "w.npz"); });
  CHECK_MESSAGE(dzt::has(e, "would take 167772160 bytes in memory as int32 (and 41943168 inflated bytes"), e);
  // ... and one that fits: loads, widened, zeros.
  const std::uint64_t k = 1u << 20;
  const utils::NamedTensors ok = utils::parse_npz(zip_of({{"c.npy", dzt::deflate_zeros(npy_header("<u2", k), 2 * k)}}));
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].second.dtype() == int32);
  CHECK(ok[0].second.shape() == Shape{static_cast<std::int64_t>(k)});
  CHECK(ok[0].second.sum().item<double>() == 0.0);
}

TEST_CASE("npz: the entries' sizes are added up before the first is inflated") {
  CapGuard cap(64 << 20);
  const std::uint64_t n = 10u << 20;  // 40 MiB of float32 each: the second passes the cap
  const dzt::DeflatedZeros one = dzt::deflate_zeros(npy_header("<f4", n), 4 * n);
  const std::string npz = zip_of({{"a.npy", one}, {"b.npy", one}});
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { utils::parse_npz(npz, "two.npz"); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "error: two.npz: entry 'b.npy' declares"));
  CHECK(dzt::has(run.outcome, "passes the cap of 67108864 bytes"));
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb < 16 * 1024);  // the first entry's 40 MiB were never inflated
  // One of them alone loads, inflated straight into its tensor.
  const utils::NamedTensors ok = utils::parse_npz(zip_of({{"a.npy", one}}), "one.npz");
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].second.shape() == Shape{static_cast<std::int64_t>(n)});
  CHECK(ok[0].second.sum().item<double>() == 0.0);
  // A flipped byte in the data is still a CRC mismatch on that path.
  dzt::DeflatedZeros bad = dzt::deflate_zeros(npy_header("<f4", 1024), 4096);
  bad.crc ^= 1;
  CHECK(dzt::has(dzt::thrown<IOError>([&] { utils::parse_npz(zip_of({{"a.npy", bad}}), "crc.npz"); }), "CRC mismatch"));
}

TEST_CASE("npz: a FIFO or a device at the path is refused, never waited on") {
  dzt::TempDir dir;
  const std::string fifo = (dir.path / "w.npz").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { utils::load_npz(fifo); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "is not a regular file"));
  CHECK(dzt::has(dzt::thrown<IOError>([&] { utils::load_npz("/dev/zero"); }), "is not a regular file"));
}
