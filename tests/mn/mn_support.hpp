// tests/mn/mn_support.hpp - what the dezero::mn test files share: a small MLP whose shapes are all
// given, one MSE backward pass, rows of a batch, weights copied between models, and the checks that
// every rank agrees (collectives: call them at the same point on every rank).
#pragma once

#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <memory>
#include <vector>

namespace mnt {

using namespace dezero;

inline L::LinearOptions sized(std::int64_t in_size, DType dtype = float64) {
  L::LinearOptions o;
  o.in_size = in_size;
  o.dtype = dtype;
  return o;
}

// A 2-layer MLP whose shapes are all given (nothing lazy): 3 -> 4 (sigmoid) -> 2.
class Net : public Model {
 public:
  explicit Net(DType dtype = float64) {
    l1 = register_layer("l1", std::make_shared<L::Linear>(4, sized(3, dtype)));
    l2 = register_layer("l2", std::make_shared<L::Linear>(2, sized(4, dtype)));
  }
  Variable forward(const Variable& x) override { return l2(F::sigmoid(l1(x))); }
  L::LayerRef<L::Linear> l1, l2;
};

// The number of ranks on which `ok` is false (0 on every rank when it holds everywhere).
inline std::int64_t ranks_failing(mn::Communicator& comm, bool ok) {
  return comm.allreduce(array(std::vector<std::int64_t>{ok ? 0 : 1}, Shape{1}, int64)).item<std::int64_t>();
}

// Whether every rank's parameters are bit for bit rank 0's.
inline bool same_as_rank0(mn::Communicator& comm, const L::Layer& model) {
  bool ok = true;
  for (const auto& p : model.params()) {
    Tensor r0 = comm.bcast(p.data(), 0);
    ok = ok && utils::array_equal(r0, p.data());
  }
  return ranks_failing(comm, ok) == 0;
}

inline void copy_weights(const L::Layer& from, L::Layer& to) {
  auto a = from.params(), b = to.params();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) b[i].set_data(a[i].data().copy());
}

// One MSE step of `model` on (x, t), gradients left in place.
inline void backprop(Model& model, const Tensor& x, const Tensor& t) {
  Variable loss = F::mean_squared_error(model(x), t);
  model.cleargrads();
  loss.backward();
}

inline Tensor rows(const Tensor& x, std::int64_t from, std::int64_t n) { return x[Slice(from, from + n)]; }

}  // namespace mnt
