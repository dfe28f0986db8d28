// tests/compile/misuse.cpp - compiled (not run) by CTest (tests/CMakeLists.txt), once
// per DEZERO_MISUSE value. With 0 it must compile: the safe forms. With any other value
// it must not, with the message the test expects, because the line it adds is a
// misuse that would otherwise compile and go wrong silently at run time:
//   1: a reference bound to setup() on a temporary optimizer (DeZero's
//      `optimizer = SGD(lr).setup(model)` written with auto&), which dangles at the
//      end of the line;
//   2: L::Linear(10, 784), which would read 784 as the nobias flag (PyTorch's
//      nn.Linear(in, out) order);
//   3: a Pair of three ints (DeZero raises at run time).
#include <dezero/layers.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>

int main() {
  namespace L = dezero::L;
  dezero::models::MLP model({10, 1});
  auto one_line = dezero::optimizers::SGD(0.1).setup(model);  // an SGD, by value
  dezero::optimizers::Adam named;
  auto& same = named.setup(model);  // a reference to the named optimizer
  const auto& extended = dezero::optimizers::MomentumSGD(0.1).setup(model);  // lifetime extended: safe
  L::Linear a(10, true), b(10, false, dezero::float32, 784);
  L::LinearOptions o;
  o.in_size = 784;
  L::Linear c(10, o);
  dezero::Pair pair = {2, 1};
  L::Conv2d conv(4, 3, {2, 1});  // positional stride {2, 1}, not the options
  L::ConvOptions co;
  co.pad = 1;
  L::Conv2d conv2(4, 3, co);
  (void)pair;
  (void)one_line;
  (void)same;
  (void)extended;
#if DEZERO_MISUSE == 1
  auto& dangling = dezero::optimizers::SGD(0.1).setup(model);
  (void)dangling;
#elif DEZERO_MISUSE == 2
  L::Linear d(10, 784);
#elif DEZERO_MISUSE == 3
  dezero::Pair p = {1, 2, 3};
#endif
}
