// examples/mnist_mn.cpp - data-parallel MNIST across processes: ChainerMN's
// examples/mnist/train_mnist.py in C++ with dezero::mn. Every process (rank) trains the same
// MLP 784-1000-1000-10 (ReLU, Adam) on its share of the training set (mn::scatter_dataset: the
// same number of samples on every rank) with its own batch of --batch-size samples; the
// gradients are averaged over the ranks before each update (mn::MultiNodeOptimizer), so N ranks
// with batch B take the steps one process takes with batch N B. Rank 0 prints the table and
// writes the learning curves (mnist_mn_curves.png and .csv); the test accuracy is that of the
// whole test set, summed over the ranks (mn::Evaluation).
//
//   mpirun -np 2 build/examples/mnist_mn [--communicator naive|flat|pure_nccl] [--device cpu|cuda]
//          [--allreduce-grad-dtype same|bfloat16|float16]
//          [--epochs N] [--batch-size N] [--dataset mnist|fashion-mnist] [--data DIR] [--plot FILE.png]
//          [--out DIR] [--snapshot-every N] [--resume] [--quiet]
//
// Snapshots (--out, --snapshot-every, --resume as in examples/mnist): rank 0 writes them. Every rank
// draws the same random numbers (the same seed) and holds the same weights, optimizer state and
// loader position, so rank 0's snapshot is every rank's state, except the epoch's running
// sums, which every rank contributes to the file (one allreduce at each snapshot). To resume,
// rank 0 picks the newest snapshot that loads, tells the others which, and every rank loads it.
//
// --allreduce-grad-dtype (ChainerMN's allreduce_grad_dtype): the type the gradients travel in between
// the ranks; bfloat16 or float16 halve the bytes (mn::CommunicatorOptions).
//
// (README, "Data-parallel training", has the mpirun line for root on a 2-core machine and for
// several machines.) The ChainerMN Python it mirrors:
//   comm = chainermn.create_communicator(args.communicator)
//   device = comm.intra_rank if args.gpu else -1
//   model = L.Classifier(MLP(args.unit, 10))
//   optimizer = chainermn.create_multi_node_optimizer(chainer.optimizers.Adam(), comm)
//   optimizer.setup(model)
//   train, test = chainer.datasets.get_mnist() if comm.rank == 0 else None, None
//   train = chainermn.scatter_dataset(train, comm, shuffle=True)
//   test = chainermn.scatter_dataset(test, comm, shuffle=True)
//   ... trainer.run()
#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mnist_train.hpp"
#include "common/options.hpp"
#include "common/plot.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

// The samples [rank N / size, (rank + 1) N / size) of `data`: for evaluation, where every sample
// must count once (scatter_dataset's equal shares repeat some); no collective runs inside the
// evaluation loop, so the shares may differ in length by one.
mn::SubDataset slice_for(const datasets::Dataset& data, const mn::Communicator& comm) {
  const std::int64_t n = data.size(), lo = comm.rank() * n / comm.size(), hi = (comm.rank() + 1) * n / comm.size();
  std::vector<std::int64_t> idx;
  for (std::int64_t i = lo; i < hi; ++i) idx.push_back(i);
  return mn::SubDataset(data, std::move(idx));
}

}  // namespace

int main(int argc, char** argv) try {
  mn::Environment env(argc, argv);
  std::string communicator = "flat", wire = "same";
  const mnist_train::Options o = mnist_train::parse(
      argc, argv, "mnist_mn", "mnist_mn_curves.png", [&](const std::string& a, const std::function<std::string()>& value) {
        if (a == "--communicator") communicator = value();
        else if (a == "--allreduce-grad-dtype") wire = value();
        else return false;
        return true;
      });
  mn::CommunicatorOptions comm_options;
  comm_options.allreduce_grad_dtype = mn::grad_wire_dtype_from_name(wire);
  if (!o.save.empty() || !o.load.empty())
    throw ValueError("--save and --load are not supported here; hint: train with examples/mnist for them");
  auto comm = mn::create_communicator(communicator, comm_options);
  const bool root = comm->rank() == 0;

  // device = comm.intra_rank: one GPU per process on a machine.
  Device dev = Device::cpu();
  if (o.device == "cuda" || communicator == "pure_nccl") {
    if (!cuda::is_available())
      throw DeviceError("--device cuda / --communicator pure_nccl: no CUDA device is available on this "
                        "machine; hint: --device cpu with --communicator naive or flat");
    const int id = comm->intra_rank() % cuda::device_count();
    cuda::Device(id).use();
    dev = Device::cuda(id);
  }
  if (root) {
    std::printf("==========================================\n"
                "Num process (COMM_WORLD): %d\nUsing %s communicator\nGradients on the wire: %s\nDevice: %s\nNum unit: 1000\n"
                "Num Minibatch-size: %lld per process (%lld in all)\nNum epoch: %d\n"
                "==========================================\n",
                comm->size(), communicator.c_str(), mn::grad_wire_dtype_name(comm->allreduce_grad_dtype()),
                dev.str().c_str(), static_cast<long long>(o.batch_size),
                static_cast<long long>(o.batch_size * comm->size()), o.epochs);
    std::fflush(stdout);
  }

  // Every rank reads the files (they are local); rank 0 says which data set it is.
  std::streambuf* quiet = root ? nullptr : std::cout.rdbuf(nullptr);
  auto [train_set, test_set] = mnist_train::load_data(o, datasets::MNIST::default_transform());
  if (quiet) std::cout.rdbuf(quiet);
  mn::SubDataset train_shard = mn::scatter_dataset(*train_set, *comm, /*shuffle=*/true, /*seed=*/0);
  mn::SubDataset test_shard = slice_for(*test_set, *comm);

  models::MLP model({1000, 1000, 10}, F::relu);
  model(train_set->get_batch({0}).first);  // the weights now, so that no step is skipped and a snapshot fits
  if (dev.is_cuda()) model.to_gpu(dev.index());
  optimizers::Adam adam;
  adam.setup(model);
  auto optimizer = mn::create_multi_node_optimizer(adam, comm);

  DataLoader train_loader(train_shard, o.batch_size, true);
  DataLoader test_loader(test_shard, o.batch_size, false);
  if (dev.is_cuda()) {
    train_loader.to_gpu(dev.index());
    test_loader.to_gpu(dev.index());
  }
  // The snapshot: rank 0's state is every rank's, but for this epoch's running sums, which each
  // rank puts in its row of `eval_rows` (size x 3: loss_sum, correct, count) before a write.
  mnist_train::Curves curves;
  std::int64_t it = 0;
  int epochs_done = 0;
  std::vector<double> eval_rows(static_cast<std::size_t>(3 * comm->size()), 0.0);
  mn::Evaluation train_eval;
  training::Snapshot snap;
  snap.model(model).optimizer(adam).loader("train", train_loader).value("iteration", it).value("epoch", epochs_done);
  snap.value("epoch_eval_by_rank", eval_rows).value("train_loss", curves.train_loss)
      .value("train_acc", curves.train_acc).value("test_loss", curves.test_loss).value("test_acc", curves.test_acc)
      .value("seconds", curves.seconds);
  std::optional<training::Checkpointer> ckpt;
  if (!o.out.empty()) {
    training::CheckpointOptions co;
    co.every = o.snapshot_every;
    co.quiet = !root;
    ckpt.emplace(o.out, snap, co);
    if (o.resume) {
      std::int64_t chosen = -1;
      if (root) chosen = ckpt->resume().value_or(-1);
      chosen = comm->bcast(array(chosen, int64)).item<std::int64_t>();
      if (!root && chosen >= 0) ckpt->load(ckpt->path_of(chosen));
      const std::size_t r = static_cast<std::size_t>(3 * comm->rank());
      train_eval = mn::Evaluation{eval_rows[r], eval_rows[r + 1], eval_rows[r + 2]};
    }
  }
  // Every rank's running sums into the file's rows (a sum of one rank's values and zeros: exact),
  // then rank 0 writes. A collective: every rank calls it at the same iteration.
  auto save_snapshot = [&] {
    std::vector<double> rows(eval_rows.size(), 0.0);
    const std::size_t r = static_cast<std::size_t>(3 * comm->rank());
    rows[r] = train_eval.loss_sum;
    rows[r + 1] = train_eval.correct;
    rows[r + 2] = train_eval.count;
    eval_rows = comm->allreduce(array(rows, float64)).to_vector<double>();
    if (root) ckpt->save(it);
  };

  if (root) std::printf("epoch  main/loss  validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time\n");
  const double t_start = mnist_train::now_s();
  const std::int64_t per_epoch = train_loader.size();
  training::ProgressOptions po;
  po.quiet = o.quiet || !root;  // rank 0's progress line (its own running loss)
  training::Progress progress(o.epochs * per_epoch, per_epoch, it, po);
  while (epochs_done < o.epochs) {
    const int epoch = epochs_done + 1;
    mn::Evaluation test_eval;
    for (auto& [x, t] : train_loader) {
      Variable y = model(x);
      Variable loss = F::softmax_cross_entropy(y, t);
      Variable acc = F::accuracy(y, t);
      model.cleargrads();
      loss.backward();
      optimizer.update();
      train_eval.add(loss.data().item<double>(), acc.data().item<double>(), t.len());
      ++it;
      if (it % 20 == 0) progress.update(it, train_eval.loss());
      // Due at the epoch's last batch: the epoch-end snapshot below (with the test figures) is that one.
      if (ckpt && ckpt->due(it) && train_loader.iteration() != per_epoch) save_snapshot();
    }
    progress.finish();
    {
      auto g = no_grad();
      for (auto& [x, t] : test_loader) {
        Variable y = model(x);
        test_eval.add(F::softmax_cross_entropy(y, t).data().item<double>(), F::accuracy(y, t).data().item<double>(),
                      t.len());
      }
    }
    const mn::Evaluation tr = comm->allreduce_evaluation(train_eval), te = comm->allreduce_evaluation(test_eval);
    curves.train_loss.push_back(tr.loss());
    curves.train_acc.push_back(tr.accuracy());
    curves.test_loss.push_back(te.loss());
    curves.test_acc.push_back(te.accuracy());
    curves.seconds.push_back(mnist_train::now_s() - t_start);
    if (root) {
      std::printf("%-6d %-10.5f %-21.5f %-14.5f %-25.5f %.2f\n", epoch, tr.loss(), te.loss(), tr.accuracy(),
                  te.accuracy(), curves.seconds.back());
      std::fflush(stdout);
    }
    epochs_done = epoch;
    train_eval = mn::Evaluation{};
    if (ckpt) save_snapshot();
  }
  if (root) {
    std::printf("test samples: %.0f (the whole test set, over %d ranks); gradient averaging: %.1f ms per step\n",
                curves.test_acc.empty() ? 0.0 : static_cast<double>(test_set->size()), comm->size(),
                comm->mean_grad_calls() ? 1e3 * comm->mean_grad_seconds() / static_cast<double>(comm->mean_grad_calls())
                                        : 0.0);
    if (!o.plot.empty() && !curves.train_loss.empty())
      plot::line_chart(o.plot,
                       {{{"train loss", curves.train_loss, {31, 119, 180}}, {"test loss", curves.test_loss, {255, 127, 14}}},
                        {{"train accuracy", curves.train_acc, {31, 119, 180}},
                         {"test accuracy", curves.test_acc, {255, 127, 14}}}},
                       {{"loss", "epoch", "softmax cross entropy"}, {"accuracy", "epoch", "accuracy"}},
                       "MLP(1000, 1000, 10), Adam, " + std::to_string(comm->size()) + " processes (" + communicator +
                           "), batch " + std::to_string(o.batch_size) + " each");
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("mnist_mn", e);
}
