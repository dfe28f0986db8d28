// tests/test_half.cpp - the 16-bit floats bfloat16 and float16: the element types' conversions at
// their edges (ties to even, NaN, infinity, overflow, subnormals, every float16 bit pattern), the
// bulk converters against the scalar ones, the dtypes' promotion, astype between all six dtypes,
// ops computed in float32 and rounded once, shape ops that move bits, printing, .npz files,
// autograd, and the errors of what has no 16-bit path. The op table (test_op_table.cpp) checks
// every F:: function in these dtypes; this file checks what a table cannot.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

std::uint32_t bits32(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint16_t bf(float f) { return bfloat16_t(f).bits; }
std::uint16_t h16(float f) { return float16_t(f).bits; }
bool f16_is_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool bf16_is_nan(std::uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; }

template <class H>
std::vector<std::uint16_t> bits_of(const Tensor& t) {
  std::vector<std::uint16_t> out;
  for (H h : t.to_vector<H>()) out.push_back(h.bits);
  return out;
}

}  // namespace

// --- the element types ------------------------------------------------------------------------------
TEST_CASE("half: bfloat16_t rounds to nearest even, keeps NaN, overflows to inf, keeps subnormals") {
  CHECK(sizeof(bfloat16_t) == 2);
  CHECK(bf(1.0f) == 0x3F80);
  CHECK(bf(-2.0f) == 0xC000);
  CHECK(bf(from32(0x3F808000u)) == 0x3F80);  // halfway between 0x3F80 and 0x3F81: the even one
  CHECK(bf(from32(0x3F818000u)) == 0x3F82);  // halfway between 0x3F81 and 0x3F82: the even one
  CHECK(bf(from32(0x3F808001u)) == 0x3F81);  // past halfway
  CHECK(bf(from32(0x3F807FFFu)) == 0x3F80);  // below halfway
  CHECK(bf(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(bf(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(bf(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the largest bfloat16
  CHECK(bf(from32(0x7F7F7FFFu)) == 0x7F7F);                 // just below: the largest
  CHECK(bf16_is_nan(bf(std::numeric_limits<float>::quiet_NaN())));
  CHECK(bf16_is_nan(bf(from32(0x7F800001u))));  // a NaN whose payload is in the dropped bits
  CHECK((bf(from32(0xFF800001u)) & 0x8000u) != 0);  // its sign kept
  CHECK(bf(from32(0x00010000u)) == 0x0001);     // the smallest bfloat16 subnormal, exact
  CHECK(bf(from32(0x00008000u)) == 0x0000);     // half of it: ties to even (0)
  CHECK(bf(from32(0x00018000u)) == 0x0002);     // 1.5 of it: ties to even (2)
  CHECK(bf(from32(0x80000001u)) == 0x8000);     // -tiny: -0
  CHECK(static_cast<float>(bfloat16_t::from_bits(0x0001)) == from32(0x00010000u));
  CHECK(static_cast<float>(bfloat16_t::from_bits(0x3F80)) == 1.0f);
}

TEST_CASE("half: float16_t rounds to nearest even, overflows to inf at 65520, keeps subnormals") {
  CHECK(sizeof(float16_t) == 2);
  CHECK(h16(1.0f) == 0x3C00);
  CHECK(h16(-2.0f) == 0xC000);
  CHECK(h16(65504.0f) == 0x7BFF);  // the largest
  CHECK(h16(65519.99f) == 0x7BFF);
  CHECK(h16(65520.0f) == 0x7C00);  // halfway to 2^16: ties to even, which is infinity
  CHECK(h16(-1e6f) == 0xFC00);
  CHECK(h16(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(h16(1.0f + 0x1p-11f) == 0x3C00);      // tie: even
  CHECK(h16(1.0f + 3 * 0x1p-11f) == 0x3C02);  // tie: even (up)
  CHECK(h16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
  CHECK(h16(0x1p-14f) == 0x0400);             // the smallest normal
  CHECK(h16(0x1p-24f) == 0x0001);             // the smallest subnormal
  CHECK(h16(0x1p-25f) == 0x0000);             // half of it: ties to even (0)
  CHECK(h16(3 * 0x1p-25f) == 0x0002);         // 1.5 of it: ties to even (2)
  CHECK(h16(0x1p-25f + 0x1p-35f) == 0x0001);  // past half
  CHECK(h16(1023 * 0x1p-24f) == 0x03FF);      // the largest subnormal
  CHECK(h16(1023.5f * 0x1p-24f) == 0x0400);   // rounds up into the normals
  CHECK(h16(-0x1p-24f) == 0x8001);
  CHECK(f16_is_nan(h16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(f16_is_nan(h16(from32(0x7F800001u))));  // payload only in the dropped bits: still NaN
  CHECK((h16(-std::numeric_limits<float>::quiet_NaN()) & 0x8000u) != 0);
}

TEST_CASE("half: every float16 bit pattern survives float16 -> float -> float16") {
  int nans = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = static_cast<float>(float16_t::from_bits(static_cast<std::uint16_t>(h)));
    const std::uint16_t back = h16(f);
    if (f16_is_nan(static_cast<std::uint16_t>(h))) {
      ++nans;
      CHECK(std::isnan(f));
      CHECK(f16_is_nan(back));
      CHECK((back & 0x8000u) == (h & 0x8000u));
    } else if (back != h) {
      CAPTURE(h);
      CHECK(back == h);
    }
    // bfloat16 from float16: exact where the exponent allows, so float16 -> bfloat16 -> float is
    // float16's value rounded to 8 bits
    const float via_bf = static_cast<float>(bfloat16_t(f));
    if (!std::isnan(f)) CHECK(via_bf == static_cast<float>(bfloat16_t(static_cast<double>(f))));
  }
  CHECK(nans == 2 * 1023);
  // every bfloat16 pattern survives bfloat16 -> float -> bfloat16 too
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = static_cast<float>(bfloat16_t::from_bits(static_cast<std::uint16_t>(h)));
    if (bf16_is_nan(static_cast<std::uint16_t>(h))) continue;
    if (bf(f) != h) {
      CAPTURE(h);
      CHECK(bf(f) == h);
    }
  }
}

TEST_CASE("half: doubles and wide integers are rounded once, not through float32") {
  // 1 + 2^-8 + 2^-40: float32 rounds it to 1 + 2^-8 (bfloat16's tie), which would then go to 1
  CHECK(bfloat16_t(1.0 + 0x1p-8 + 0x1p-40).bits == 0x3F81);
  CHECK(bfloat16_t(1.0 + 0x1p-8).bits == 0x3F80);  // the exact tie: even
  CHECK(float16_t(1.0 + 0x1p-11 + 0x1p-40).bits == 0x3C01);
  CHECK(float16_t(0x1p-25 + 0x1p-60).bits == 0x0001);
  CHECK(float16_t(65519.999999).bits == 0x7BFF);
  CHECK(float16_t(65520.0).bits == 0x7C00);
  // through Tensor::astype: float64 and int64 sources
  Tensor d = array(std::vector<double>{1.0 + 0x1p-8 + 0x1p-40, -(1.0 + 0x1p-8 + 0x1p-40)});
  CHECK(bits_of<bfloat16_t>(d.astype(bfloat16)) == std::vector<std::uint16_t>{0x3F81, 0xBF81});
  // 2^60 + 2^52 + 1: a double rounds it to 2^60 + 2^52 (bfloat16's tie -> 2^60); once: 2^60 + 2^53
  const std::int64_t big = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;
  Tensor i = array(std::vector<std::int64_t>{big, -big});
  std::vector<double> got = i.astype(bfloat16).to_vector<double>();
  CHECK(got[0] == std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  CHECK(got[1] == -(std::ldexp(1.0, 60) + std::ldexp(1.0, 53)));
}

TEST_CASE("half: the bulk converters give the scalar conversions' bits") {
  std::mt19937 rng(7);
  std::vector<float> src;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) src.push_back(static_cast<float>(float16_t::from_bits(static_cast<std::uint16_t>(h))));
  for (int k = 0; k < 100000; ++k) src.push_back(from32(rng()));  // every kind: NaN, inf, subnormals
  for (float f : {65520.0f, 65519.99f, 0x1p-25f, 3 * 0x1p-25f, from32(0x3F808000u), from32(0x7F7FFFFFu)}) src.push_back(f);
  src.push_back(1.0f);  // an odd length: the tails run the portable loop
  const std::size_t n = src.size();
  std::vector<bfloat16_t> b(n);
  std::vector<float16_t> h(n);
  to_bfloat16(src.data(), b.data(), n);
  to_float16(src.data(), h.data(), n);
  std::size_t bad_b = 0, bad_h = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i].bits != bf(src[i])) ++bad_b;
    const std::uint16_t want = h16(src[i]);
    // float16 NaN: the hardware's quiet NaN keeps the payload's top bits, as the scalar one does
    if (h[i].bits != want && !(f16_is_nan(want) && f16_is_nan(h[i].bits))) ++bad_h;
  }
  CHECK(bad_b == 0);
  CHECK(bad_h == 0);
  std::vector<float> back_b(n), back_h(n);
  to_float(b.data(), back_b.data(), n);
  to_float(h.data(), back_h.data(), n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float wb = static_cast<float>(b[i]), wh = static_cast<float>(h[i]);
    if (!(bits32(back_b[i]) == bits32(wb) || (std::isnan(wb) && std::isnan(back_b[i])))) ++bad;
    if (!(bits32(back_h[i]) == bits32(wh) || (std::isnan(wh) && std::isnan(back_h[i])))) ++bad;
  }
  CHECK(bad == 0);
}

// --- the dtypes -------------------------------------------------------------------------------------
TEST_CASE("half: dtype properties, names and codes") {
  CHECK(dtype_size(bfloat16) == 2);
  CHECK(dtype_size(float16) == 2);
  CHECK(is_floating(bfloat16));
  CHECK(is_floating(float16));
  CHECK_FALSE(is_integer(float16));
  CHECK(std::string(dtype_name(bfloat16)) == "bfloat16");
  CHECK(std::string(dtype_name(float16)) == "float16");
  CHECK(dtype_of<bfloat16_t>() == bfloat16);
  CHECK(dtype_of<float16_t>() == float16);
  // the codes are stable: files and the MPI wire carry them
  CHECK(static_cast<int>(float32) == 0);
  CHECK(static_cast<int>(int64) == 3);
  CHECK(static_cast<int>(bfloat16) == 4);
  CHECK(static_cast<int>(float16) == 5);
}

TEST_CASE("half: promotion (PyTorch's for the 16-bit floats)") {
  CHECK(promote_types(bfloat16, float16) == float32);
  CHECK(promote_types(float16, bfloat16) == float32);
  CHECK(promote_types(bfloat16, float32) == float32);
  CHECK(promote_types(float16, float64) == float64);
  CHECK(promote_types(int32, bfloat16) == bfloat16);
  CHECK(promote_types(float16, int64) == float16);
  CHECK(promote_types(float16, float16) == float16);
  // the NumPy rules of the other four are unchanged
  CHECK(promote_types(int32, float32) == float64);
  Tensor h = ones({3}, float16), b = ones({3}, bfloat16);
  CHECK((h + b).dtype() == float32);
  CHECK((h + ones({3}, float32)).dtype() == float32);
  CHECK((h + ones({3}, int64)).dtype() == float16);
  CHECK((h + array(2.0)).dtype() == float16);            // a 0-d float64 does not widen a float16 array
  CHECK((ones({3}, int32) + array(2.0, float16)).dtype() == float16);
  CHECK((h * 2.0).dtype() == float16);
  CHECK((ones({3}, int32) / 2.0).dtype() == float64);    // unchanged
}

TEST_CASE("half: astype between all six dtypes") {
  const std::vector<double> v = {0.0, 1.0, -2.5, 3.75, 1000.0, -7.0, 0.5};  // exact in every dtype but the ints
  const std::vector<double> as_int = {0.0, 1.0, -2.0, 3.0, 1000.0, -7.0, 0.0};  // C++'s truncation
  for (DType from : {float32, float64, int32, int64, bfloat16, float16}) {
    for (DType to : {float32, float64, int32, int64, bfloat16, float16}) {
      CAPTURE(from);
      CAPTURE(to);
      Tensor x = array(is_integer(from) ? as_int : v).astype(from);
      Tensor y = x.astype(to);
      CHECK(y.dtype() == to);
      const std::vector<double> want = is_integer(from) || is_integer(to) ? as_int : v;
      CHECK(y.to_vector<double>() == want);
    }
  }
  // 16-bit -> 16-bit rounds once: float16's 1 + 2^-10 has no bfloat16 (ties to even: 1)
  CHECK(bits_of<bfloat16_t>(array(std::vector<double>{1.0 + 0x1p-10}).astype(float16).astype(bfloat16)) ==
        std::vector<std::uint16_t>{0x3F80});
  // item and to_vector in the element types
  Tensor h = array(std::vector<double>{0.1}).astype(float16);
  CHECK(h.item<float16_t>().bits == float16_t(0.1).bits);
  CHECK(h.data<float16_t>()[0].bits == float16_t(0.1).bits);
  CHECK_THROWS_AS(h.data<bfloat16_t>(), DtypeError);
  Tensor made = array(std::vector<bfloat16_t>{bfloat16_t(1.5f), bfloat16_t(-3.0f)});
  CHECK(made.dtype() == bfloat16);
  CHECK(made.to_vector<double>() == std::vector<double>{1.5, -3.0});
}

// --- ops: computed in float32, rounded once -----------------------------------------------------
TEST_CASE("half: element-wise ops and reductions compute in float32 and round the result once") {
  Tensor one = array(1.0, bfloat16), tiny = array(0x1p-8, bfloat16);
  Tensor s = one + tiny;  // 1 + 2^-8 in float32: bfloat16's tie, rounded to even: 1
  CHECK(s.dtype() == bfloat16);
  CHECK(s.item<double>() == 1.0);
  CHECK((one + tiny + tiny).item<double>() == 1.0);  // each op rounds
  // a sum of 1000 ones: 1000 accumulated in float32 (a bfloat16 accumulator stalls at 256)
  Tensor ones_b = ones({1000}, bfloat16);
  CHECK(ones_b.sum().dtype() == bfloat16);
  CHECK(ones_b.sum().item<double>() == 1000.0);
  CHECK(ones({1000}, float16).mean().item<double>() == 1.0);
  CHECK(sum_to(ones({4, 300}, bfloat16), Shape{300}).to_vector<double>() == std::vector<double>(300, 4.0));
  Tensor h = array(std::vector<double>{-1.0, 0.5, 2.0}).astype(float16);
  CHECK(exp(h).dtype() == float16);
  CHECK(exp(h)[0].item<float16_t>().bits == float16_t(std::exp(-1.0f)).bits);
  CHECK(h.max().item<double>() == 2.0);
  CHECK(h.argmax().item<std::int64_t>() == 2);
  CHECK(where(greater(h, 0.0), h, zeros_like(h)).to_vector<double>() == std::vector<double>{0.0, 0.5, 2.0});
  CHECK((h * 40000.0).to_vector<double>()[2] == std::numeric_limits<double>::infinity());  // float16 overflow
  Tensor hb = h.copy();
  hb += 1.0;
  hb *= 2.0;
  CHECK(hb.to_vector<double>() == std::vector<double>{0.0, 3.0, 6.0});
  CHECK(random::Generator(3).randn({4}, bfloat16).dtype() == bfloat16);
}

TEST_CASE("half: shape, copy and index ops move the 2-byte elements unchanged") {
  // NaN payloads and subnormals would not survive a trip through arithmetic
  std::vector<float16_t> v;
  for (std::uint16_t b : {0x7E01, 0xFD55, 0x0001, 0x83FF, 0x3C00, 0x7BFF}) v.push_back(float16_t::from_bits(b));
  Tensor x = array(v, Shape{2, 3});
  auto b = bits_of<float16_t>;
  CHECK(b(x.transpose()) == std::vector<std::uint16_t>{0x7E01, 0x83FF, 0xFD55, 0x3C00, 0x0001, 0x7BFF});
  CHECK(b(x.reshape({3, 2})) == b(x));
  CHECK(b(concatenate({x, x}, 1))[3] == 0x7E01);
  CHECK(b(broadcast_to(x.reshape({1, 6}), {2, 6}))[6] == 0x7E01);
  CHECK(b(x[Indices{Slice(), 1}]) == std::vector<std::uint16_t>{0xFD55, 0x3C00});
  CHECK(b(take(x, array(std::vector<std::int64_t>{1, 0}))) == std::vector<std::uint16_t>{0x83FF, 0x3C00, 0x7BFF, 0x7E01, 0xFD55, 0x0001});
  CHECK(b(x.copy()) == b(x));
  Tensor y = zeros({2, 3}, float16);
  copyto(y, x);
  CHECK(b(y) == b(x));
}

TEST_CASE("half: printing follows NumPy's float16 (shortest digits that read back)") {
  Tensor h = array(std::vector<double>{0.1, 1.5, -2.0}).astype(float16);
  CHECK(h.repr() == "array([ 0.1,  1.5, -2. ], dtype=float16)");
  CHECK(h.astype(bfloat16).repr() == "array([ 0.1,  1.5, -2. ], dtype=bfloat16)");
  CHECK(array(0.1, float16).str() == "0.1");
  CHECK(array(1.0 / 3.0, float16).str() == "0.3333");    // np.float16(1/3)
  CHECK(array(1.0 / 3.0, bfloat16).str() == "0.334");     // 0.333984375: 3 digits read back
  CHECK(array(std::vector<double>{1, 2, 3}).astype(float16).repr() == "array([1., 2., 3.], dtype=float16)");
}

// --- files --------------------------------------------------------------------------------------------
TEST_CASE("half: .npz round trip; float16 as '<f2', bfloat16 as '<V2'; NumPy's float16 file loads") {
  std::vector<float16_t> hv;
  for (std::uint16_t b : {0x3C00, 0x7E01, 0x0001, 0xFBFF}) hv.push_back(float16_t::from_bits(b));
  Tensor h = array(hv, Shape{2, 2});
  Tensor b = array(std::vector<double>{0.1, -3.0, 1e30}).astype(bfloat16);
  const std::string bytes = utils::serialize_npz({{"h", h}, {"b", b}});
  CHECK(dzt::has(bytes, "'descr': '<f2'"));
  CHECK(dzt::has(bytes, "'descr': '<V2'"));
  utils::NamedTensors back = utils::parse_npz(bytes);
  REQUIRE(back.size() == 2);
  CHECK(back[0].second.dtype() == float16);
  CHECK(back[0].second.shape() == Shape{2, 2});
  CHECK(bits_of<float16_t>(back[0].second) == bits_of<float16_t>(h));
  CHECK(back[1].second.dtype() == bfloat16);
  CHECK(bits_of<bfloat16_t>(back[1].second) == bits_of<bfloat16_t>(b));
  // tools/make_npz_fixtures.py: np.savez(h=np.ones(3, dtype=np.float16))
  utils::NamedTensors numpy = utils::load_npz(std::string(DEZERO_TEST_DATA_DIR) + "/npz_float16.npz");
  REQUIRE(numpy.size() == 1);
  CHECK(numpy[0].second.dtype() == float16);
  CHECK(numpy[0].second.to_vector<double>() == std::vector<double>{1, 1, 1});
  // an unknown descr is a clear error that lists what is read
  std::string npy = utils::serialize_npy(h);
  npy.replace(npy.find("<f2"), 3, "<V3");
  CHECK_THROWS_WITH_AS(utils::parse_npy(npy), doctest::Contains("'<V3'"), DtypeError);
  CHECK_THROWS_WITH_AS(utils::parse_npy(npy), doctest::Contains("bfloat16 ('<V2'"), DtypeError);
}

// --- autograd -----------------------------------------------------------------------------------------
TEST_CASE("half: a Variable of a 16-bit dtype backpropagates, gradients in its dtype") {
  for (DType dt : {bfloat16, float16}) {
    CAPTURE(dt);
    Variable x(array(std::vector<double>{0.5, -1.0, 2.0}).astype(dt));
    Variable y = F::sum(x * x + F::sin(x) + F::exp(x) / 2.0);
    CHECK(y.dtype() == dt);
    y.backward();
    REQUIRE(x.has_grad());
    CHECK(x.grad().dtype() == dt);
    std::vector<double> g = dzt::vals(x.grad());
    const double xs[] = {0.5, -1.0, 2.0};
    const double tol = dt == bfloat16 ? 0x1p-6 : 0x1p-9;
    for (int i = 0; i < 3; ++i)
      CHECK(g[i] == doctest::Approx(2 * xs[i] + std::cos(xs[i]) + std::exp(xs[i]) / 2).epsilon(tol));
    // a loss: softmax cross entropy of 16-bit logits
    Variable logits(array({{1.0, 2.0, 0.5}, {0.0, -1.0, 3.0}}).astype(dt));
    Variable loss = F::softmax_cross_entropy(logits, array(std::vector<std::int64_t>{1, 2}));
    CHECK(loss.dtype() == dt);
    loss.backward();
    CHECK(logits.grad().dtype() == dt);
  }
}

// --- what has no 16-bit path ---------------------------------------------------------------------------
TEST_CASE("half: an op without a 16-bit path is a DtypeError naming the op and the dtype") {
  // optimizers keep float32 master parameters: a 16-bit parameter is refused before any update
  Parameter p(ones({3}, bfloat16));
  p.set_grad(Variable(ones({3}, bfloat16)));
  optimizers::SGD opt(0.1);
  opt.setup(std::vector<Parameter>{p});
  CHECK_THROWS_WITH_AS(opt.update(), doctest::Contains("bfloat16"), DtypeError);
  CHECK(p.data().to_vector<double>() == std::vector<double>{1, 1, 1});  // unchanged
  // (batch normalisation of a 16-bit x takes its composite formula: tests/test_autocast_conv.cpp)
}

// --- the GPU: the same conversions and moves on the device -------------------------------------------
TEST_CASE("half: astype, the float32 route and the element moves on CUDA match the CPU") {
  dzt::on_each_device([](Device dev) {
    if (dev.is_cpu()) return;
    std::vector<double> v = {0.1, -2.5, 65519.0, 65520.0, 1e-7, 3e-8, 1.0 + 0x1p-8 + 0x1p-30};
    Tensor x = array(v);
    for (DType dt : {bfloat16, float16}) {
      CAPTURE(dt);
      Tensor hd = x.to(dev).astype(dt), hc = x.astype(dt);
      CHECK(hd.to_cpu().astype(float64).to_vector<double>() == hc.astype(float64).to_vector<double>());
      CHECK(x.astype(float32).to(dev).astype(dt).to_cpu().astype(float64).to_vector<double>() ==
            x.astype(float32).astype(dt).astype(float64).to_vector<double>());
      CHECK((hd * 3.0 + hd).to_cpu().astype(float64).to_vector<double>() ==
            (hc * 3.0 + hc).astype(float64).to_vector<double>());
      CHECK(hd.sum().to_cpu().item<double>() == doctest::Approx(hc.sum().item<double>()).epsilon(0x1p-7));
      Tensor m = hd.reshape({7, 1});
      CHECK(concatenate({m, m}, 1).transpose().to_cpu().astype(float64).to_vector<double>() ==
            concatenate({hc.reshape({7, 1}), hc.reshape({7, 1})}, 1).transpose().astype(float64).to_vector<double>());
      CHECK(full({5}, 0.1, dt, dev).to_cpu().astype(float64).to_vector<double>() ==
            full({5}, 0.1, dt).astype(float64).to_vector<double>());
    }
  });
}
