// tests/test_isa.cpp - one library for every x86-64 CPU (issue 48): the instruction-set level the host
// kernels run at (dezero::cpu_info(), DEZERO_CPU_ISA), every level's copy of the GEMM computing the same
// products, autocast's rounded operands on the float32 kernels, the thread pool, the cgroup quota.
//
// CTest runs this file, and the other kernel suites, once per level (kernels_sse2, kernels_avx2,
// kernels_avx512: DEZERO_CPU_ISA set to each); a level above what the CPU runs reports itself as skipped.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <dezero/dezero.hpp>

#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/isa.hpp"
#include "dezero/cpu/parallel.hpp"
#include "support/test_util.hpp"

namespace cpu = dezero::detail::cpu;
using cpu::IsaLevel;
using i64 = std::int64_t;

namespace {

const char* env_isa() {
  const char* v = std::getenv("DEZERO_CPU_ISA");
  return v && *v ? v : nullptr;
}

bool known_level(const std::string& s, IsaLevel* out) {
  const std::pair<const char*, IsaLevel> names[] = {
      {"sse2", IsaLevel::sse2},         {"baseline", IsaLevel::sse2},   {"x86-64", IsaLevel::sse2},
      {"avx2", IsaLevel::avx2},         {"x86-64-v3", IsaLevel::avx2},  {"avx512", IsaLevel::avx512},
      {"x86-64-v4", IsaLevel::avx512},  {"avx512_bf16", IsaLevel::avx512_bf16}, {"amx", IsaLevel::amx}};
  for (const auto& [name, level] : names)
    if (s == name) {
      *out = level;
      return true;
    }
  return false;
}

std::vector<float> randv(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// The levels this CPU runs whose copies differ: sse2, avx2, avx512 (at most the best).
std::vector<IsaLevel> copies() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::sse2, IsaLevel::avx2, IsaLevel::avx512})
    if (cpu::kernel_table_for(l)) out.push_back(l);
  return out;
}

// C = op(A) op(B) in float64, from float32 operands stored as sgemm reads them.
std::vector<double> reference(bool ta, bool tb, i64 m, i64 n, i64 k, const std::vector<float>& a, i64 lda,
                              const std::vector<float>& b, i64 ldb) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double s = 0;
      for (i64 p = 0; p < k; ++p) s += double(ta ? a[p * lda + i] : a[i * lda + p]) * double(tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * n + j] = s;
    }
  return c;
}

float bf16_round(float x) { return static_cast<float>(dezero::bfloat16_t(x)); }
float fp16_round(float x) { return static_cast<float>(dezero::float16_t(x)); }

}  // namespace

TEST_CASE("isa: cpu_info names the level in use, and DEZERO_CPU_ISA caps it") {
  const char* env = env_isa();
  IsaLevel requested = IsaLevel::amx;
  if (env && !known_level(env, &requested)) {  // CTest's isa_env_unknown: a name that is no level
    CHECK_THROWS_WITH_AS(dezero::cpu_info(), doctest::Contains("not an instruction-set level"), dezero::ValueError);
    return;
  }
  const dezero::CpuInfo info = dezero::cpu_info();
  MESSAGE(info.summary());
  CHECK_FALSE(info.model.empty());
  CHECK(info.threads >= 1);
  CHECK_FALSE(info.threads_from.empty());
  CHECK(info.summary().find(info.isa) != std::string::npos);
  IsaLevel best, used;
  REQUIRE(known_level(info.best_isa, &best));
  REQUIRE(known_level(info.isa, &used));
  CHECK(best == cpu::cpu_best_isa());
  CHECK(used == cpu::cpu_isa());
  if (env) {
    // The cap, or the CPU's best when the cap is above it.
    const IsaLevel want = static_cast<int>(requested) < static_cast<int>(best) ? requested : best;
    CHECK(used == want);
    CHECK(info.isa_cap.empty() == (want == best));
    if (static_cast<int>(requested) > static_cast<int>(best))
      MESSAGE("skipped: DEZERO_CPU_ISA=" << env << " is above this CPU's best level, " << info.best_isa);
  } else {
    CHECK(used == best);
    CHECK(info.isa_cap.empty());
  }
  // The copy in use was built for the level (avx512_bf16 and amx run the avx512 copy).
  const IsaLevel copy = static_cast<int>(used) >= static_cast<int>(IsaLevel::avx512) ? IsaLevel::avx512 : used;
  CHECK(cpu::kernel_table().level == copy);
  CHECK(cpu::sgemm_available() == (copy != IsaLevel::sse2));
  // bfloat16 products run on a bfloat16 kernel only where the level has its instructions.
  if (static_cast<int>(used) < static_cast<int>(IsaLevel::avx512_bf16)) CHECK_FALSE(info.bf16);
}

TEST_CASE("isa: every level's GEMM computes the same products (float32, float64 reference)") {
  struct Shape {
    i64 m, n, k;
  };
  // W1's and inference's products, the edge panels of both tile sizes, tiny ones, one over KC and NC.
  const Shape shapes[] = {{100, 100, 784}, {1, 100, 784}, {100, 10, 100}, {7, 9, 13},    {6, 16, 8},
                          {13, 33, 257},   {100, 20, 31}, {50, 300, 600}, {100, 1, 10}, {2, 10, 100}};
  const auto levels = copies();
  MESSAGE("levels this CPU runs: " << levels.size());
  for (const Shape& s : shapes)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(ta);
      CAPTURE(tb);
      const i64 lda = (ta ? s.m : s.k) + 3, ldb = (tb ? s.k : s.n) + 5;  // padded rows
      const auto a = randv(static_cast<std::size_t>((ta ? s.k : s.m) * lda), 1);
      const auto b = randv(static_cast<std::size_t>((tb ? s.n : s.k) * ldb), 2);
      const auto bias = randv(static_cast<std::size_t>(s.n), 3);
      const auto ref = reference(ta, tb, s.m, s.n, s.k, a, lda, b, ldb);
      std::vector<std::vector<float>> outs;
      for (IsaLevel l : levels) {
        CAPTURE(cpu::isa_name(l));
        const cpu::KernelTable* kt = cpu::kernel_table_for(l);
        REQUIRE(kt);
        std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
        kt->gemm(dezero::DType::Float32, ta, tb, s.m, s.n, s.k, 1.0, a.data(), lda, 0, b.data(), ldb, 0, 0.0, c.data(),
                 s.n, 0, 1);
        double worst = 0;
        for (std::size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::abs(double(c[i]) - ref[i]));
        CHECK(worst <= 2e-6 * double(s.k) + 1e-6);
        // the fused bias: C = op(A) op(B) + bias, where the copy takes it
        std::vector<float> cb(c.size(), std::numeric_limits<float>::quiet_NaN());
        if (kt->gemm_bias(dezero::DType::Float32, ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, bias.data(),
                          cb.data(), s.n)) {
          double wb = 0;
          for (i64 i = 0; i < s.m; ++i)
            for (i64 j = 0; j < s.n; ++j) wb = std::max(wb, std::abs(double(cb[i * s.n + j]) - (ref[i * s.n + j] + bias[j])));
          CHECK(wb <= 2e-6 * double(s.k) + 1e-6);
        }
        outs.push_back(c);
      }
      // the levels agree with each other to float32's rounding of the sums
      for (std::size_t l = 1; l < outs.size(); ++l) {
        double worst = 0;
        for (std::size_t i = 0; i < outs[0].size(); ++i) worst = std::max(worst, std::abs(double(outs[l][i]) - outs[0][i]));
        CHECK(worst <= 2e-6 * double(s.k) + 1e-6);
      }
    }
}

TEST_CASE("isa: autocast's products on the float32 kernels round their operands as astype does") {
  // gemm_lowp of each copy against the same copy's float32 sgemm (or gemm) of operands rounded with
  // half.hpp's conversions: bit for bit where both run the packed kernel (a transposed operand),
  // to float32 rounding otherwise; 16-bit operands give the float32 operands' bits.
  struct Shape {
    i64 m, n, k;
  };
  const Shape shapes[] = {{100, 100, 784}, {16, 40, 300}, {9, 17, 33}, {100, 10, 100}, {3, 5, 7}};
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            1e-40f /* subnormal */, 65520.f /* float16 overflow */, 3.0039062f /* a tie */,
                            -0.0f, 1.00390625f};
  for (IsaLevel l : copies()) {
    const cpu::KernelTable* kt = cpu::kernel_table_for(l);
    CAPTURE(cpu::isa_name(l));
    for (const dezero::DType compute : {dezero::DType::BFloat16, dezero::DType::Float16}) {
      CAPTURE(dezero::dtype_name(compute));
      auto round = compute == dezero::DType::BFloat16 ? bf16_round : fp16_round;
      for (const Shape& s : shapes)
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          CAPTURE(s.m);
          CAPTURE(s.n);
          CAPTURE(s.k);
          CAPTURE(ta);
          CAPTURE(tb);
          const i64 lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
          auto a = randv(static_cast<std::size_t>((ta ? s.k : s.m) * lda), 11);
          auto b = randv(static_cast<std::size_t>((tb ? s.n : s.k) * ldb), 12);
          for (float& x : a) x *= 1.7f;
          // special values in A's last row of op(A) (NaN spreads through its row of C only)
          for (std::size_t i = 0; i < std::size(specials); ++i) {
            const i64 p = static_cast<i64>(i) % s.k, row = s.m - 1;
            a[ta ? p * lda + row : row * lda + p] = specials[i];
          }
          std::vector<float> ra(a.size()), rb(b.size());
          for (std::size_t i = 0; i < a.size(); ++i) ra[i] = round(a[i]);
          for (std::size_t i = 0; i < b.size(); ++i) rb[i] = round(b[i]);
          const std::size_t nc = static_cast<std::size_t>(s.m * s.n);
          std::vector<float> got(nc), want(nc), got16(nc);
          REQUIRE(kt->gemm_lowp(compute, ta, tb, s.m, s.n, s.k, a.data(), dezero::DType::Float32, lda, b.data(),
                                dezero::DType::Float32, ldb, nullptr, got.data(), s.n, false));
          kt->gemm(dezero::DType::Float32, ta, tb, s.m, s.n, s.k, 1.0, ra.data(), lda, 0, rb.data(), ldb, 0, 0.0,
                   want.data(), s.n, 0, 1);
          const bool packed_both = kt->sgemm_available() && (ta || tb) && s.m >= 8 && s.n >= 8 &&
                                   s.m * s.n * s.k > cpu::kGemmSmallMacs;
          bool same = true;
          double worst = 0;
          for (std::size_t i = 0; i < nc; ++i) {
            const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
            if (!both_nan && std::memcmp(&got[i], &want[i], 4) != 0) same = false;
            if (!both_nan && std::isfinite(want[i])) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
            if (!both_nan && !std::isfinite(want[i])) CHECK(got[i] == want[i]);
          }
          if (packed_both) CHECK(same);
          CHECK(worst <= 4e-6 * double(s.k));
          // 16-bit operands: widened exactly, the same bits as the float32 operands rounded
          std::vector<std::uint16_t> a16(a.size()), b16(b.size());
          for (std::size_t i = 0; i < a.size(); ++i) {
            if (compute == dezero::DType::BFloat16) a16[i] = dezero::bfloat16_t(a[i]).bits;
            else a16[i] = dezero::float16_t(a[i]).bits;
          }
          for (std::size_t i = 0; i < b.size(); ++i) {
            if (compute == dezero::DType::BFloat16) b16[i] = dezero::bfloat16_t(b[i]).bits;
            else b16[i] = dezero::float16_t(b[i]).bits;
          }
          REQUIRE(kt->gemm_lowp(compute, ta, tb, s.m, s.n, s.k, a16.data(), compute, lda, b16.data(), compute, ldb,
                                nullptr, got16.data(), s.n, false));
          bool same16 = true;
          for (std::size_t i = 0; i < nc; ++i)
            if (!(std::isnan(got[i]) && std::isnan(got16[i])) && std::memcmp(&got[i], &got16[i], 4) != 0) same16 = false;
          CHECK(same16);
        }
    }
  }
}

TEST_CASE("isa: the pool runs every index once, nested loops inline, exceptions reach the caller") {
  for (int threads : {1, 2, 3, 8})
    for (i64 n : {1, 2, 3, 7, 64, 1000}) {
      CAPTURE(threads);
      CAPTURE(n);
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> nested_inline{0};
      cpu::parallel_items(n, threads, [&](i64 i) {
        hits[static_cast<std::size_t>(i)].fetch_add(1);
        CHECK(cpu::in_parallel() == (threads > 1 && n > 1));
        if (i == 0) {  // a loop inside a loop runs on the thread that reaches it
          const std::thread::id me = std::this_thread::get_id();
          cpu::parallel_items(4, threads, [&](i64) {
            if (std::this_thread::get_id() == me) nested_inline.fetch_add(1);
          });
        }
      });
      int wrong = 0;
      for (auto& h : hits) wrong += h.load() != 1;
      CHECK(wrong == 0);
      // (a loop of one piece, or on one thread, is a plain call: a loop inside it may use the pool)
      if (threads > 1 && n > 1) CHECK(nested_inline.load() == 4);
      CHECK_FALSE(cpu::in_parallel());
    }
  // ranges cover [0, n) exactly, in the pieces pieces_for says
  std::vector<std::atomic<int>> cover(1001);
  cpu::parallel_ranges(1001, 2, [&](i64 lo, i64 hi) {
    for (i64 i = lo; i < hi; ++i) cover[static_cast<std::size_t>(i)].fetch_add(1);
  });
  int wrong = 0;
  for (auto& h : cover) wrong += h.load() != 1;
  CHECK(wrong == 0);
  CHECK(cpu::pieces_for(1001, 2) == 4);
  CHECK(cpu::pieces_for(3, 2) == 3);
  // an exception in a piece: the first one is rethrown, after the other pieces ran
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH_AS(cpu::parallel_items(16, 2,
                                           [&](i64 i) {
                                             ran.fetch_add(1);
                                             if (i == 5) throw std::runtime_error("piece 5 failed");
                                           }),
                       "piece 5 failed", std::runtime_error);
  CHECK(ran.load() == 16);
  // several threads starting loops at once: one has the pool, the others run theirs themselves
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r) {
        std::atomic<int> sum{0};
        cpu::parallel_items(10, 2, [&](i64 i) { sum.fetch_add(static_cast<int>(i)); });
        if (sum.load() != 45) bad.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("isa: the thread count follows the cgroup's CPU quota (v2 and v1)") {
  dzt::TempDir tmp;
  const std::string dir = tmp.str();
  auto write = [&](const std::string& rel, const std::string& text) {
    const std::filesystem::path path = tmp.path / rel;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  };
  // v2: the group allows 1.5 CPUs, its parent 4: the smallest wins
  write("v2/proc", "0::/app/worker");
  write("v2/root/app/worker/cpu.max", "150000 100000");
  write("v2/root/app/cpu.max", "400000 100000");
  write("v2/root/cpu.max", "max 100000");
  CHECK(cpu::cgroup_quota_cpus(dir + "/v2/proc", dir + "/v2/root") == doctest::Approx(1.5));
  // v2 without a quota
  write("v2none/proc", "0::/");
  write("v2none/root/cpu.max", "max 100000");
  CHECK(cpu::cgroup_quota_cpus(dir + "/v2none/proc", dir + "/v2none/root") == 0.0);
  // v1: cpu,cpuacct controller, quota 50 ms of 100 ms
  write("v1/proc", "4:memory:/x\n3:cpu,cpuacct:/jobs/a\n0::/");
  write("v1/root/cpu,cpuacct/jobs/a/cpu.cfs_quota_us", "50000");
  write("v1/root/cpu,cpuacct/jobs/a/cpu.cfs_period_us", "100000");
  write("v1/root/cpu,cpuacct/cpu.cfs_quota_us", "-1");
  write("v1/root/cpu,cpuacct/cpu.cfs_period_us", "100000");
  CHECK(cpu::cgroup_quota_cpus(dir + "/v1/proc", dir + "/v1/root") == doctest::Approx(0.5));
  // no such files: no quota
  CHECK(cpu::cgroup_quota_cpus(dir + "/missing", dir + "/missing") == 0.0);
  // and this process's own: a count of threads that it may use
  CHECK(cpu::max_threads() >= 1);
}
