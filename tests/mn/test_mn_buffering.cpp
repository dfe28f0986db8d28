// tests/mn/test_mn_buffering.cpp - double buffering (MultiNodeOptimizerOptions::double_buffering,
// ChainerMN's double_buffering), under mpirun -np 1 and -np 2: the k-th update applies the mean of
// the (k-1)-th step's gradients, equal to a one-process reference that applies its gradients one
// step late (SGD, MomentumSGD, Adam + WeightDecay; float64 to 1e-12; naive and flat, float32 and
// bfloat16 on the wire), the first update only starts an averaging, lazy parameters cost one more
// skipped step, every rank ends with the same parameters, and pure_nccl is refused before any
// collective.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dezero/mn/detail.hpp"
#include "mn/mn_support.hpp"

using namespace dezero;
using namespace mnt;
namespace L = dezero::L;
namespace O = dezero::optimizers;

namespace {

std::unique_ptr<O::Optimizer> make_rule(int rule) {
  if (rule == 0) return std::make_unique<O::SGD>(0.5);
  if (rule == 1) return std::make_unique<O::MomentumSGD>(0.5, 0.9);
  return std::make_unique<O::Adam>(0.05);
}

}  // namespace

TEST_CASE("mn double buffering: the k-th update applies step k-1's mean gradient (one step stale)") {
  REQUIRE(mn::detail::mpi_thread_multiple());  // Open MPI grants it to mn::Environment
  for (const std::string name : {"naive", "flat"}) {
    for (auto wire : {mn::GradWireDtype::same, mn::GradWireDtype::bfloat16}) {
      for (int rule = 0; rule < 3; ++rule) {
        CAPTURE(name);
        CAPTURE(rule);
        CAPTURE(mn::grad_wire_dtype_name(wire));
        mn::CommunicatorOptions comm_options;
        comm_options.allreduce_grad_dtype = wire;
        auto comm = mn::create_communicator(name, comm_options);
        const std::int64_t B = 4, N = comm->size();
        random::seed(3);  // the same data and initial weights on every rank
        Net model, reference;
        copy_weights(model, reference);
        auto opt = make_rule(rule), ref_opt = make_rule(rule);
        opt->setup(model);
        ref_opt->setup(reference);
        if (rule == 2) {
          opt->add_hook(O::WeightDecay(1e-2));
          ref_opt->add_hook(O::WeightDecay(1e-2));
        }
        mn::MultiNodeOptimizerOptions options;
        options.double_buffering = true;
        auto mopt = mn::create_multi_node_optimizer(*opt, comm, options);
        CHECK(mopt.double_buffering());
        // The reference: one process with the whole batch, whose gradients wait one step. With a
        // 16-bit wire the reference's pending gradients are the ranks' mean as that wire gives it,
        // taken from a blocking average of the same gradients on a communicator of the same kind.
        auto blocking = mn::create_communicator(name, comm_options);
        std::vector<Tensor> pending;
        for (int step = 0; step < 6; ++step) {
          Tensor x = random::randn({B * N, 3}), t = random::randn({B * N, 2});
          const Tensor xs = x[Slice(comm->rank() * B, (comm->rank() + 1) * B)];
          const Tensor ts = t[Slice(comm->rank() * B, (comm->rank() + 1) * B)];
          backprop(model, xs, ts);
          CHECK(mopt.update() == (step > 0));
          if (wire == mn::GradWireDtype::same) backprop(reference, x, t);
          else {
            backprop(reference, xs, ts);
            blocking->multi_node_mean_grad(reference);
          }
          std::vector<Tensor> now;
          for (auto& p : reference.params()) now.push_back(p.grad().data().copy());
          if (!pending.empty()) {
            auto ps = reference.params();
            for (std::size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(Variable(pending[i]));
            ref_opt->update();
          }
          pending = std::move(now);
        }
        auto got = model.params(), want = reference.params();
        for (std::size_t i = 0; i < got.size(); ++i)
          CHECK(utils::array_allclose(got[i].data(), want[i].data(), 0.0, 1e-12));
        CHECK(opt->t() == 5);
        CHECK(same_as_rank0(*comm, model));
      }
    }
  }
}

TEST_CASE("mn double buffering: lazy parameters, and what is refused") {
  auto comm = mn::create_communicator("flat");
  random::seed(30 + static_cast<std::uint64_t>(comm->rank()));  // rank-dependent weights and data
  models::MLP model({6, 2});                                      // lazy: shapes from the first batch
  O::SGD sgd(0.1);
  sgd.setup(model);
  mn::MultiNodeOptimizerOptions options;
  options.double_buffering = true;
  mn::MultiNodeOptimizer mopt(sgd, comm, options);
  int skipped = 0;
  for (int step = 0; step < 5; ++step) {
    Tensor x = random::randn({5, 3}), t = random::randn({5, 2});
    Variable loss = F::mean_squared_error(model(x), t);
    model.cleargrads();
    loss.backward();
    if (!mopt.update()) ++skipped;
  }
  CHECK(skipped == 2);  // the broadcast of the lazy weights, then the first averaging
  CHECK(sgd.t() == 3);
  CHECK(same_as_rank0(*comm, model));

  O::SGD other(0.1);
  Net net;
  other.setup(net);
  std::shared_ptr<mn::Communicator> nccl;
  try {
    nccl = mn::create_communicator("pure_nccl");  // made lazily: no GPU is needed until its first collective
  } catch (const Error& e) {
    MESSAGE("pure_nccl is not in this build: ", std::string(e.what()));
  }
  if (nccl) CHECK_THROWS_AS(mn::MultiNodeOptimizer(other, nccl, options), NotImplementedError);
  mn::MultiNodeOptimizer plain(other, comm);
  CHECK_FALSE(plain.double_buffering());
}

// --- overlap ----------------------------------------------------------------------------------------

namespace {

// 3 -> 8 -> 8 -> 2 (tanh): six parameters, enough for several small buckets.
class DeepNet : public Model {
 public:
  DeepNet() {
    l1 = register_layer("l1", std::make_shared<L::Linear>(8, sized(3)));
    l2 = register_layer("l2", std::make_shared<L::Linear>(8, sized(8)));
    l3 = register_layer("l3", std::make_shared<L::Linear>(2, sized(8)));
  }
  Variable forward(const Variable& x) override { return l3(F::tanh(l2(F::tanh(l1(x))))); }
  L::LayerRef<L::Linear> l1, l2, l3;
};

}  // namespace

TEST_CASE("mn overlap: buckets averaged during backward give the blocking path's parameters bit for bit") {
  for (const std::string name : {"naive", "flat"}) {
    for (std::int64_t bucket : {std::int64_t{64}, std::int64_t{25} << 20}) {  // many buckets, and one
      for (int rule = 0; rule < 3; ++rule) {
        CAPTURE(name);
        CAPTURE(bucket);
        CAPTURE(rule);
        auto comm = mn::create_communicator(name), comm2 = mn::create_communicator(name);
        random::seed(5);
        DeepNet model, reference;
        copy_weights(model, reference);
        auto opt = make_rule(rule), ref_opt = make_rule(rule);
        opt->setup(model);
        ref_opt->setup(reference);
        mn::MultiNodeOptimizerOptions options;
        options.overlap = true;
        options.bucket_bytes = bucket;
        options.first_bucket_bytes = bucket / 2;
        mn::MultiNodeOptimizer mopt(*opt, comm, options), ref_mopt(*ref_opt, comm2);
        CHECK(mopt.overlap());
        CHECK_FALSE(mopt.double_buffering());
        random::seed(40 + static_cast<std::uint64_t>(comm->rank()));  // each rank its own data
        for (int step = 0; step < 4; ++step) {
          Tensor x = random::randn({5, 3}), t = random::randn({5, 2});
          backprop(model, x, t);
          CHECK(mopt.update());
          backprop(reference, x, t);
          CHECK(ref_mopt.update());
        }
        auto got = model.params(), want = reference.params();
        bool equal = true;
        for (std::size_t i = 0; i < got.size(); ++i) equal = equal && utils::array_equal(got[i].data(), want[i].data());
        if (comm->size() <= 2) CHECK(equal);
        CHECK(same_as_rank0(*comm, model));
      }
    }
  }
}

TEST_CASE("mn overlap: a parameter without a gradient on some ranks, changed gradients, a second backward") {
  auto comm = mn::create_communicator("flat"), comm2 = mn::create_communicator("flat");
  random::seed(6);
  DeepNet model, reference;
  copy_weights(model, reference);
  O::SGD sgd(0.1), ref_sgd(0.1);
  sgd.setup(model);
  ref_sgd.setup(reference);
  mn::MultiNodeOptimizerOptions options;
  options.overlap = true;
  options.bucket_bytes = 100;
  options.first_bucket_bytes = 50;
  mn::MultiNodeOptimizer mopt(sgd, comm, options), ref_mopt(ref_sgd, comm2);
  // Rank 1 (of 2) skips l2: its l2.W and l2.b have no gradient there, and zero_fill averages zeros.
  auto step = [&](DeepNet& net, const Tensor& x, const Tensor& t) {
    Variable h = F::tanh(net.l1(x));
    if (comm->rank() == 0) h = F::tanh(net.l2(h));
    Variable loss = F::mean_squared_error(net.l3(h), t);
    net.cleargrads();
    loss.backward();
  };
  for (int k = 0; k < 4; ++k) {
    Tensor x = random::randn({5, 3}), t = random::randn({5, 2});
    step(model, x, t);
    CHECK(mopt.update());
    step(reference, x, t);
    CHECK(ref_mopt.update());
  }
  auto got = model.params(), want = reference.params();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(utils::array_equal(got[i].data(), want[i].data()));
  CHECK(same_as_rank0(*comm, model));

  // A gradient cleared after backward() had sent it: a ValueError in update(), then training goes on.
  Tensor x = random::randn({5, 3}), t = random::randn({5, 2});
  backprop(model, x, t);
  model.l3->b.cleargrad();
  CHECK_THROWS_AS(mopt.update(), ValueError);
  backprop(model, x, t);
  CHECK(mopt.update());
  // Gradient accumulation over two passes is refused by the second pass's hook; the update() after
  // it applies the first pass's averages, and training goes on.
  backprop(model, x, t);
  Variable loss = F::mean_squared_error(model(x), t);
  CHECK_THROWS_AS(loss.backward(), ValueError);
  CHECK(mopt.update());
  backprop(model, x, t);
  CHECK(mopt.update());
  CHECK(same_as_rank0(*comm, model));
}

// --- loss scaling through the MultiNodeOptimizer (issue 31) -----------------------------------------
TEST_CASE("mn loss scaling: a non-finite gradient on one rank skips the step on every rank") {
  // Rank 1 (rank 0 with one process) feeds an inf at step 1: its gradients are not finite, their
  // averages on every rank neither, so every rank skips that step and halves the scale, and the
  // parameters stay equal everywhere. With double buffering the skip comes one update later, and the
  // update after it applies step 2's gradients (scaled by 65536 in backward) at the halved scale:
  // rescaled, they are the plain mean, as a blocking reference computes it.
  auto comm = mn::create_communicator("flat");
  const int P = comm->size(), rank = comm->rank();
  const Tensor x = random::Generator(5).randn({4 * P, 3}, float64), t = random::Generator(6).randn({4 * P, 2}, float64);
  for (int mode = 0; mode < 3; ++mode) {  // blocking, overlap, double buffering
    CAPTURE(mode);
    Net net;
    Net reference;
    copy_weights(net, reference);
    O::SGD sgd(0.5);
    sgd.setup(net);
    mn::MultiNodeOptimizerOptions options;
    options.overlap = mode == 1;
    options.double_buffering = mode == 2;
    mn::MultiNodeOptimizer opt(sgd, comm, options);
    CHECK(&opt.loss_scaling() == &opt);
    CHECK(opt.loss_scale() == 65536.0);
    const int skip_at = mode == 2 ? 2 : 1;  // the update that meets the inf
    std::vector<bool> changed;
    for (int step = 0; step < 4; ++step) {
      Tensor xs = rows(x, 4 * rank, 4).copy();
      if (step == 1 && rank == P - 1) xs.data<double>()[0] = std::numeric_limits<double>::infinity();
      if (step == 2 && mode == 2) {  // the reference: step 2's mean gradient from the same weights, blocking
        copy_weights(net, reference);
        O::SGD ref_sgd(0.5);
        ref_sgd.setup(reference);
        mn::MultiNodeOptimizer ref(ref_sgd, comm);
        backprop(reference, xs, rows(t, 4 * rank, 4));
        CHECK(ref.update());
      }
      Variable loss = F::mean_squared_error(net(xs), rows(t, 4 * rank, 4));
      net.cleargrads();
      opt.backward(loss);
      const bool did = opt.update();
      changed.push_back(did);
      CHECK(opt.last_step_skipped() == (step == skip_at));
      CHECK(same_as_rank0(*comm, net));
    }
    if (mode != 2) {
      CHECK(changed == std::vector<bool>{true, false, true, true});
    } else {
      CHECK(changed == std::vector<bool>{false, true, false, true});
    }
    CHECK(opt.loss_scale() == 32768.0);  // halved once, on every rank
    CHECK(ranks_failing(*comm, opt.loss_scale() == 32768.0) == 0);
    if (mode == 2) {  // update 3 applied step 2's gradients, scaled by 65536, at the scale 32768
      auto a = net.params(), b = reference.params();
      for (std::size_t i = 0; i < a.size(); ++i) CHECK(utils::array_allclose(a[i].data(), b[i].data(), 1e-12, 1e-12));
    }
  }
}
