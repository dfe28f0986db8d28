// tests/mn/test_mn.cpp - dezero::mn under mpirun (-np 1 and -np 2; tests/CMakeLists.txt): the
// arithmetic of the mean gradient and zero_fill, ranks whose models differ (an error on every
// rank, not a hang), bcast_data (lazy layers too), the equivalence of N ranks with batch B and one
// process with batch N B (SGD and MomentumSGD to 1e-12 in float64, rtol 1e-5 in float32; Adam's
// averaged gradients), parameters bit-identical on every rank after steps on different data for
// every optimizer, scatter_dataset, BatchNorm's running statistics, and the GPU communicators
// (skipped without a device).
//
// Every test case runs the same collectives in the same order on every rank; the checks compare
// with values every rank can compute itself, or with rank 0's values broadcast.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "mn/mn_support.hpp"

using namespace dezero;
using namespace mnt;
namespace L = dezero::L;
namespace O = dezero::optimizers;

namespace {

const std::vector<std::string> kHostCommunicators = {"naive", "flat"};

}  // namespace

TEST_CASE("mn: the communicator's ranks, and a name that is not one") {
  for (const auto& name : kHostCommunicators) {
    auto comm = mn::create_communicator(name);
    CHECK(comm->name() == name);
    CHECK(comm->size() >= 1);
    CHECK(comm->rank() >= 0);
    CHECK(comm->rank() < comm->size());
    CHECK(comm->intra_size() >= 1);
    CHECK(comm->intra_rank() < comm->intra_size());
    CHECK(comm->supports(mn::Communicator::Capability::comm_thread));  // double buffering and overlap
    CHECK(mn::is_available());
  }
  CHECK_THROWS_WITH_AS(mn::create_communicator("nccl"),
                       doctest::Contains("the communicators are 'naive', 'flat' and 'pure_nccl'"), ValueError);
}

TEST_CASE("mn: allreduce, bcast and allreduce_evaluation") {
  for (const auto& name : kHostCommunicators) {
    auto comm = mn::create_communicator(name);
    const double r = comm->rank(), s = comm->size();
    Tensor t = full({2, 3}, r + 1.0, float64);
    Tensor sum = comm->allreduce(t);
    CHECK(utils::array_equal(sum, full({2, 3}, s * (s + 1) / 2, float64)));
    CHECK(utils::array_equal(t, full({2, 3}, r + 1.0, float64)));  // unchanged
    Tensor from_root = comm->bcast(comm->rank() == 0 ? arange(6.0).reshape({2, 3}) : Tensor(), 0);
    CHECK(utils::array_equal(from_root, arange(6.0).reshape({2, 3})));
    mn::Evaluation e;
    e.add(/*mean_loss=*/r + 1, /*accuracy=*/0.5, /*n=*/10 * (comm->rank() + 1));
    mn::Evaluation all = comm->allreduce_evaluation(e);
    double count = 0, loss = 0;
    for (int k = 1; k <= comm->size(); ++k) {
      count += 10 * k;
      loss += k * 10.0 * k;
    }
    CHECK(all.count == count);
    CHECK(all.loss() == doctest::Approx(loss / count));
    CHECK(all.accuracy() == doctest::Approx(0.5));
    CHECK_THROWS_AS(comm->bcast(t, comm->size()), ValueError);
  }
}

TEST_CASE("mn: gradients set to rank-dependent values average exactly, float64 and float32") {
  for (const auto& name : kHostCommunicators) {
    for (DType dt : {float64, float32}) {
      auto comm = mn::create_communicator(name);
      Net model(dt);
      const double r = comm->rank(), s = comm->size();
      for (auto& p : model.params()) p.set_grad(Variable(full(p.data().shape(), r + 1.0, dt)));
      comm->multi_node_mean_grad(model);
      for (auto& p : model.params()) {
        CHECK(p.grad().data().dtype() == dt);
        CHECK(utils::array_equal(p.grad().data(), full(p.data().shape(), (s + 1) / 2, dt)));
      }
      CHECK(comm->mean_grad_calls() == 1);
    }
  }
}

TEST_CASE("mn: a gradient missing on some ranks takes part as zeros (zero_fill)") {
  for (const auto& name : kHostCommunicators) {
    auto comm = mn::create_communicator(name);
    Net model;
    const double s = comm->size();
    // l1/W has a gradient on rank 0 only; l2/b on no rank; the rest everywhere.
    model.l1->W.set_grad(Variable(full({3, 4}, comm->rank() == 0 ? 6.0 : 1.0)));
    if (comm->rank() != 0) model.l1->W.cleargrad();
    model.l1->b.set_grad(Variable(full({4}, 2.0)));
    model.l2->W.set_grad(Variable(full({4, 2}, 4.0)));
    comm->multi_node_mean_grad(model);
    CHECK(utils::array_equal(model.l1->W.grad().data(), full({3, 4}, 6.0 / s, float64)));
    CHECK(utils::array_equal(model.l1->b.grad().data(), full({4}, 2.0, float64)));
    CHECK_FALSE(model.l2->b.has_grad());
    if (comm->size() > 1) {
      model.l1->W.cleargrad();
      if (comm->rank() == 0) model.l1->W.set_grad(Variable(full({3, 4}, 1.0)));
      CHECK_THROWS_WITH_AS(comm->multi_node_mean_grad(model, /*zero_fill=*/false),
                           doctest::Contains("l1/W has a gradient on some ranks and none on others"), ValueError);
    } else {
      MESSAGE("skipped: zero_fill = false with one rank (no rank lacks a gradient)");
    }
  }
}

TEST_CASE("mn: ranks whose parameters differ get an error on every rank, not a hang") {
  auto comm = mn::create_communicator("flat");
  if (comm->size() < 2) {
    MESSAGE("skipped: needs 2 ranks");
    return;
  }
  // Rank 1's first layer takes 5 inputs, rank 0's 3.
  L::Linear a(4, sized(comm->rank() == 1 ? 5 : 3));
  for (auto& p : a.params()) p.set_grad(Variable(zeros_like(p.data())));
  CHECK_THROWS_WITH_AS(comm->multi_node_mean_grad(a),
                       doctest::Contains("the ranks' parameters differ: rank 1 has W (5, 4) float64 where rank 0 has "
                                         "W (3, 4) float64"),
                       ValueError);
  CHECK_THROWS_WITH_AS(comm->bcast_data(a), doctest::Contains("rank 1 has W (5, 4) float64 where rank 0 has W"),
                       ValueError);
  // Different keys: rank 1 has no bias.
  L::LinearOptions o = sized(3);
  o.nobias = comm->rank() == 1;
  L::Linear b(4, o);
  CHECK_THROWS_WITH_AS(comm->bcast_data(b), doctest::Contains("the ranks' parameter keys differ"), ValueError);
  CHECK_THROWS_AS(comm->allreduce(zeros({static_cast<std::int64_t>(comm->rank()) + 1})), ValueError);
  // And the communicator still works afterwards.
  CHECK(utils::array_equal(comm->allreduce(ones({2})), full({2}, static_cast<double>(comm->size()))));
}

TEST_CASE("mn: bcast_data makes every rank's parameters bit-identical, lazy layers included") {
  for (const auto& name : kHostCommunicators) {
    auto comm = mn::create_communicator(name);
    random::seed(100 + static_cast<std::uint64_t>(comm->rank()));  // different initial weights per rank
    models::MLP model({5, 3});
    model(random::randn({2, 4}));
    const bool same_before = same_as_rank0(*comm, model);
    CHECK(same_before == (comm->size() == 1));
    comm->bcast_data(model);
    CHECK(same_as_rank0(*comm, model));
    // Only rank 0 has run a forward pass: the others' lazy parameters get rank 0's data and shapes.
    random::seed(7 + static_cast<std::uint64_t>(comm->rank()));
    models::MLP lazy({6, 2});
    if (comm->rank() == 0) lazy(random::randn({1, 3}));
    comm->bcast_data(lazy);
    for (const auto& p : lazy.params()) CHECK(p.data().defined());
    CHECK(same_as_rank0(*comm, lazy));
    Variable y = lazy(random::randn({2, 3}));  // usable on every rank
    CHECK(y.shape() == Shape{2, 2});
  }
}

TEST_CASE("mn: SGD and MomentumSGD on N ranks with batch B equal one process with batch N B") {
  for (const auto& name : kHostCommunicators) {
    for (DType dt : {float64, float32}) {
      for (int rule = 0; rule < 2; ++rule) {
        auto comm = mn::create_communicator(name);
        const std::int64_t B = 4, N = comm->size();
        random::seed(3);  // the same data and initial weights on every rank
        Net model(dt), reference(dt);
        copy_weights(model, reference);
        std::unique_ptr<O::Optimizer> opt, ref_opt;
        if (rule == 0) {
          opt = std::make_unique<O::SGD>(0.5);
          ref_opt = std::make_unique<O::SGD>(0.5);
        } else {
          opt = std::make_unique<O::MomentumSGD>(0.5, 0.9);
          ref_opt = std::make_unique<O::MomentumSGD>(0.5, 0.9);
        }
        opt->setup(model);
        ref_opt->setup(reference);
        mn::MultiNodeOptimizer mopt(*opt, comm);  // broadcasts rank 0's weights: nothing is lazy here
        for (int step = 0; step < 5; ++step) {
          Tensor x = random::randn({B * N, 3}, float64).astype(dt), t = random::randn({B * N, 2}, float64).astype(dt);
          backprop(model, rows(x, comm->rank() * B, B), rows(t, comm->rank() * B, B));
          CHECK(mopt.update());
          backprop(reference, x, t);
          ref_opt->update();
        }
        auto got = model.params(), want = reference.params();
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (dt == float64) CHECK(utils::array_allclose(got[i].data(), want[i].data(), 0.0, 1e-12));
          else CHECK(utils::array_allclose(got[i].data(), want[i].data(), 1e-5, 1e-6));
        }
        CHECK(same_as_rank0(*comm, model));
      }
    }
  }
}

TEST_CASE("mn: Adam's averaged gradients are one process's, and the parameters stay equal on every rank") {
  auto comm = mn::create_communicator("flat");
  const std::int64_t B = 3, N = comm->size();
  random::seed(11);
  Net model, reference;
  copy_weights(model, reference);
  O::Adam adam(0.01);
  adam.setup(model);
  auto mopt = mn::create_multi_node_optimizer(adam, comm);  // broadcasts rank 0's weights
  CHECK(&mopt.actual_optimizer() == &adam);
  for (int step = 0; step < 4; ++step) {
    Tensor x = random::randn({B * N, 3}), t = random::randn({B * N, 2});
    backprop(model, rows(x, comm->rank() * B, B), rows(t, comm->rank() * B, B));
    comm->multi_node_mean_grad(model);
    backprop(reference, x, t);
    auto g = model.params(), w = reference.params();
    for (std::size_t i = 0; i < g.size(); ++i)
      CHECK(utils::array_allclose(g[i].grad().data(), w[i].grad().data(), 0.0, 1e-12));
    adam.update();  // the averaged gradients, the wrapped rule
    copy_weights(model, reference);
  }
  CHECK(same_as_rank0(*comm, model));
}

TEST_CASE("mn: after steps on different data every rank's parameters are bit-identical, for every optimizer") {
  for (const auto& name : kHostCommunicators) {
    for (int rule = 0; rule < 5; ++rule) {
      auto comm = mn::create_communicator(name);
      random::seed(20 + static_cast<std::uint64_t>(comm->rank()));  // rank-dependent weights and data
      models::MLP model({6, 2});                                      // lazy: shapes from the first batch
      std::unique_ptr<O::Optimizer> opt;
      switch (rule) {
        case 0: opt = std::make_unique<O::SGD>(0.1); break;
        case 1: opt = std::make_unique<O::MomentumSGD>(0.1); break;
        case 2: opt = std::make_unique<O::AdaGrad>(0.1); break;
        case 3: opt = std::make_unique<O::AdaDelta>(); break;
        default: opt = std::make_unique<O::Adam>(0.01); break;
      }
      opt->setup(model);
      opt->add_hook(O::WeightDecay(1e-3));
      mn::MultiNodeOptimizer mopt(*opt, comm);
      int skipped = 0;
      for (int step = 0; step < 4; ++step) {
        Tensor x = random::randn({5, 3}), t = random::randn({5, 2});
        Variable loss = F::mean_squared_error(model(x), t);
        model.cleargrads();
        loss.backward();
        if (!mopt.update()) ++skipped;
      }
      CHECK(skipped == 1);  // the first update, which broadcast the lazily made weights
      CHECK(opt->t() == 3);
      CHECK(same_as_rank0(*comm, model));
    }
  }
}

TEST_CASE("mn: scatter_dataset gives every rank the same number of samples and covers the dataset") {
  auto comm = mn::create_communicator("naive");
  const std::int64_t N = 7, S = comm->size(), each = (N + S - 1) / S;
  datasets::Dataset data(arange(static_cast<double>(N)).reshape({N, 1}), arange(N, int64));
  for (bool shuffle : {false, true}) {
    mn::SubDataset shard = mn::scatter_dataset(data, *comm, shuffle, /*seed=*/5);
    CHECK(shard.size() == each);
    // Every rank's indices, gathered: rank r's slice of a (S * each) tensor.
    std::vector<std::int64_t> mine(static_cast<std::size_t>(S * each), 0);
    for (std::int64_t k = 0; k < each; ++k)
      mine[static_cast<std::size_t>(comm->rank() * each + k)] = shard.indices()[static_cast<std::size_t>(k)] + 1;
    std::vector<std::int64_t> all =
        comm->allreduce(array(mine, Shape{S * each}, int64)).to_vector<std::int64_t>();
    std::set<std::int64_t> covered;
    for (auto v : all) covered.insert(v - 1);
    CHECK(static_cast<std::int64_t>(covered.size()) == N);  // every sample is somewhere
    // The same order on every rank: the concatenated shares are that order, wrapped around.
    std::vector<std::int64_t> order = shuffle ? random::Generator(5).permutation(N).to_vector<std::int64_t>()
                                              : arange(N, int64).to_vector<std::int64_t>();
    for (std::int64_t k = 0; k < S * each; ++k)
      CHECK(all[static_cast<std::size_t>(k)] - 1 == order[static_cast<std::size_t>(k % N)]);
    // The share reads through to the dataset.
    auto [x, t] = shard.get_batch({0, each - 1});
    CHECK(x.to_vector<double>()[0] == static_cast<double>(shard.indices()[0]));
    CHECK(t.to_vector<std::int64_t>()[1] == shard.indices()[static_cast<std::size_t>(each - 1)]);
    DataLoader loader(shard, 2, false);
    std::int64_t batches = 0;
    for (auto& batch : loader) {
      (void)batch;
      ++batches;
    }
    CHECK(batches == (each + 1) / 2);
  }
  if (comm->size() > 1) {
    datasets::Dataset other(arange(static_cast<double>(N + comm->rank())).reshape({N + comm->rank(), 1}),
                            arange(N + comm->rank(), int64));
    CHECK_THROWS_WITH_AS(mn::scatter_dataset(other, *comm), doctest::Contains("datasets differ in size"), ValueError);
  }
}

TEST_CASE("mn: BatchNorm's running statistics differ after local steps and agree after allreduce_persistent") {
  auto comm = mn::create_communicator("flat");
  random::seed(1);
  L::BatchNorm bn;
  Tensor x = random::randn({8, 3}) + static_cast<double>(comm->rank()) * 10.0;  // rank-dependent data
  for (int i = 0; i < 3; ++i) bn(x);
  Tensor mean_before = bn.avg_mean.data().copy(), var_before = bn.avg_var.data().copy();
  const auto mean_storage = bn.avg_mean.data().storage();
  if (comm->size() > 1) CHECK_FALSE(same_as_rank0(*comm, bn));
  comm->allreduce_persistent(bn);
  CHECK(same_as_rank0(*comm, bn));
  CHECK(bn.avg_mean.data().storage() == mean_storage);  // the same tensors, updated in place
  Tensor want = comm->allreduce(mean_before) * (1.0 / comm->size());
  CHECK(utils::array_allclose(bn.avg_mean.data(), want, 1e-12, 1e-12));
  CHECK(utils::array_allclose(bn.avg_var.data(), comm->allreduce(var_before) * (1.0 / comm->size()), 1e-12, 1e-12));
  CHECK_FALSE(bn.avg_mean.has_grad());
}

TEST_CASE("mn: the GPU communicators (pure_nccl, flat on CUDA tensors)") {
  if (!cuda::is_available()) {
    MESSAGE("skipped: no CUDA device");
    // Without a GPU (or a CUDA build) pure_nccl is a DeviceError on every rank, not a hang.
    CHECK_THROWS_AS(mn::create_communicator("pure_nccl")->allreduce(ones({2})), DeviceError);
    return;
  }
  for (const std::string name : {"flat", "pure_nccl"}) {
    auto comm = mn::create_communicator(name);
    cuda::Device(comm->intra_rank() % cuda::device_count()).use();
    const Device dev = Device::cuda(comm->intra_rank() % cuda::device_count());
    Net model;
    model.to(dev);
    const double r = comm->rank(), s = comm->size();
    for (auto& p : model.params()) p.set_grad(Variable(full(p.data().shape(), r + 1.0, float64, dev)));
    comm->multi_node_mean_grad(model);
    for (auto& p : model.params()) {
      CHECK(p.grad().data().device() == dev);
      CHECK(utils::array_equal(p.grad().data().to_cpu(), full(p.data().shape(), (s + 1) / 2, float64)));
    }
    comm->bcast_data(model);
    CHECK(utils::array_equal(comm->allreduce(full({3}, 1.0, float32, dev)).to_cpu(), full({3}, s, float32)));
  }
}
