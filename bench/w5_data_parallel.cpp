// bench/w5_data_parallel.cpp - W5: W1 (one epoch of the MNIST MLP 784-1000-1000-10, ReLU, SGD
// 0.01, Fashion-MNIST's 60,000 training images, a total batch of 100; --data DIR as for
// datasets::FashionMNIST, --dataset synthetic for uniform random images with random labels)
// trained data-parallel with dezero::mn:
// with P processes each rank takes 100 / P samples of every global batch and the gradients are
// averaged over the ranks (mn::MultiNodeOptimizer on the "flat" communicator, or --communicator
// naive) before each step, so P = 1 and P = 2 take the same steps.
//
// Run it under mpirun, once per configuration (bench/compare_w5.py alternates them and prints
// the ratios):
//   OMP_NUM_THREADS=2 mpirun -np 1 build/bench/w5_data_parallel     # 1 process x 2 threads
//   OMP_NUM_THREADS=1 mpirun -np 2 build/bench/w5_data_parallel     # 2 processes x 1 thread
// Prints the epoch's seconds (the slowest rank's), the gradient averaging per step, and, in the
// same run, a bare MPI_Allreduce of the same 7.2 MB of float32 (W1's 1,796,010 parameters):
// what MPI itself costs per step, which bench/README.md's budget compares with.
//   --steps N: stop after N steps (on a slow simulated link, tools/netsim.sh); the line "step:"
//   gives the mean step time of the slowest rank either way.
//   --allreduce-grad-dtype same|bfloat16|float16: the gradients' type on the wire
//   (mn::CommunicatorOptions).
//   --model cnn: W2's small CNN (bench/w2_cnn.cpp: conv3x3 1->16, pool, conv3x3 16->32, pool,
//   Linear 1568->10; SGD 0.1) instead of W1's MLP, on the same images as (N, 1, 28, 28).
//   --allreduce-algorithm automatic|mpi|ring: how host buffers are summed
//   (mn::CommunicatorOptions::allreduce_algorithm); --ring-segment-kb N (63): the ring's messages.
//   --double-buffering 1: ChainerMN's double buffering (mn::MultiNodeOptimizerOptions): each update
//   applies the previous step's averages while this step's are averaged on a thread.
//   --overlap 1: DDP's overlap (mn::MultiNodeOptimizerOptions::overlap): buckets of gradients are
//   averaged on a thread while backward still runs; --bucket-mb N (25) and --first-bucket-mb N (1).
//   --breakdown 1: where a step's time goes (computing, waiting for the slower rank, averaging, the
//   optimizer's step), with a barrier before each update() that takes the wait out of the averaging.
#include <mpi.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>
#include <iostream>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

// W2's CNN (bench/w2_cnn.cpp). x: (N, 1, 28, 28) -> (N, 16, 14, 14) -> (N, 32, 7, 7) -> (N, 1568) -> (N, 10)
class Cnn : public Model {
 public:
  Cnn() {
    c1 = register_layer("c1", std::make_shared<L::Conv2d>(16, 3, 1, 1));
    c2 = register_layer("c2", std::make_shared<L::Conv2d>(32, 3, 1, 1));
    l = register_layer("l", std::make_shared<L::Linear>(10));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::pooling(F::relu(c1(x)), 2, 2);
    h = F::pooling(F::relu(c2(h)), 2, 2);
    return l(F::reshape(h, {h.shape()[0], -1}));
  }
  L::LayerRef<L::Conv2d> c1, c2;
  L::LayerRef<L::Linear> l;
};

// This process's CPU time (every thread, user + system), in seconds.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The machine's CPU time from /proc/stat's first line, in clock ticks: {busy, softirq, total}
// (busy: all but idle and iowait; softirq: the kernel's deferred work, which forwards
// tools/netsim.sh's packets through veth, bridge and tc). Not per namespace: the whole machine.
struct MachineTicks {
  double busy = 0, softirq = 0, total = 0;
};
MachineTicks machine_ticks() {
  std::ifstream f("/proc/stat");
  std::string line, cpu;
  std::getline(f, line);
  std::istringstream in(line);
  in >> cpu;
  double v[10] = {0};
  for (double& x : v) in >> x;
  MachineTicks t;
  for (int i = 0; i < 8; ++i) t.total += v[i];  // user nice system idle iowait irq softirq steal
  t.busy = t.total - v[3] - v[4];
  t.softirq = v[6];
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  mn::Environment env(argc, argv);
  const std::string name = bench::arg(argc, argv, "--communicator", "flat");
  const std::string wire = bench::arg(argc, argv, "--allreduce-grad-dtype", "same");
  mn::CommunicatorOptions options;
  options.allreduce_grad_dtype = mn::grad_wire_dtype_from_name(wire);
  options.allreduce_algorithm =
      mn::allreduce_algorithm_from_name(bench::arg(argc, argv, "--allreduce-algorithm", "automatic"));
  options.ring_segment_bytes =
      static_cast<std::int64_t>(std::stod(bench::arg(argc, argv, "--ring-segment-kb", "63")) * 1024);
  auto comm = mn::create_communicator(name, options);
  const std::int64_t N = 60000, D = 784, B = 100, P = comm->size();
  if (B % P != 0) throw ValueError("w5_data_parallel: the total batch 100 must divide among the processes");
  const std::int64_t local = B / P;
  const std::int64_t steps = std::min<std::int64_t>(N / B, std::stoll(bench::arg(argc, argv, "--steps", "600")));
  const std::string dataset = bench::arg(argc, argv, "--dataset", "fashion-mnist");
  random::seed(0);  // the same images, labels and weights on every rank
  Tensor X, T;
  if (dataset == "synthetic") {
    X = random::rand({N, D}, float32);
    T = random::randint(0, 10, {N}, int64);
  } else if (dataset == "fashion-mnist") {
    datasets::FashionMNIST train(true, transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)}),
                                 transforms::Transform{}, bench::arg(argc, argv, "--data", ""));
    X = train.data().reshape({N, D});
    T = train.label();
  } else {
    throw ValueError("--dataset must be fashion-mnist or synthetic, got " + dataset);
  }
  const std::string model_name = bench::arg(argc, argv, "--model", "mlp");
  if (model_name != "mlp" && model_name != "cnn") throw ValueError("--model must be mlp or cnn, got " + model_name);
  const bool cnn = model_name == "cnn";
  if (cnn) X = X.reshape({N, 1, 28, 28});
  std::shared_ptr<Model> net;
  if (cnn) net = std::make_shared<Cnn>();
  else net = std::make_shared<models::MLP>(std::vector<std::int64_t>{1000, 1000, 10}, F::relu);
  Model& model = *net;
  model(X[Slice(0, 1)]);  // create the lazily-initialised weights (the same on every rank: same seed)
  optimizers::SGD sgd(cnn ? 0.1 : 0.01);
  sgd.setup(model);
  mn::MultiNodeOptimizerOptions opt_options;
  opt_options.double_buffering = bench::arg(argc, argv, "--double-buffering", "0") != std::string("0");
  opt_options.overlap = bench::arg(argc, argv, "--overlap", "0") != std::string("0");
  opt_options.bucket_bytes = static_cast<std::int64_t>(std::stod(bench::arg(argc, argv, "--bucket-mb", "25")) * (1 << 20));
  opt_options.first_bucket_bytes =
      static_cast<std::int64_t>(std::stod(bench::arg(argc, argv, "--first-bucket-mb", "1")) * (1 << 20));
  mn::MultiNodeOptimizer opt(sgd, comm, opt_options);
  std::int64_t params = 0;
  for (const auto& p : model.params()) params += p.data().size();

  // --breakdown 1: per step, the computing (forward + backward), the wait for the slower rank (a
  // barrier before update(): it takes that wait out of the averaging), the averaging and the
  // optimizer's step, summed over the steps (rank 0's). The barrier itself costs a few us per step.
  const bool breakdown = bench::arg(argc, argv, "--breakdown", "0") != std::string("0");
  double compute_s = 0, wait_s = 0, update_s = 0, probe_s = 0;
  const bool bare_in_loop = bench::arg(argc, argv, "--bare-in-loop", "0") != std::string("0");
  std::vector<float> probe(bare_in_loop ? static_cast<std::size_t>(params) : 0, 1.0f);
  comm->barrier();
  const MachineTicks m0 = machine_ticks();
  const double c0 = cpu_s();
  const double t0 = bench::now_s();
  Tensor perm = random::permutation(N);
  double last = 0;
  for (std::int64_t i = 0; i < steps; ++i) {
    const double a = breakdown ? bench::now_s() : 0;
    Tensor idx = perm[Slice(i * B + comm->rank() * local, i * B + (comm->rank() + 1) * local)];
    Tensor x = take(X, idx), t = take(T, idx);
    Variable loss = F::softmax_cross_entropy(model(x), t);
    model.cleargrads();
    loss.backward();
    if (breakdown) {
      const double b = bench::now_s();
      MPI_Barrier(MPI_COMM_WORLD);
      if (bare_in_loop) {  // the bare allreduce in the same state of the caches as the averaging
        const double e = bench::now_s();
        MPI_Allreduce(MPI_IN_PLACE, probe.data(), static_cast<int>(probe.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        probe_s += bench::now_s() - e;
        MPI_Barrier(MPI_COMM_WORLD);
      }
      const double c = bench::now_s();
      opt.update();
      const double d = bench::now_s();
      compute_s += b - a;
      wait_s += c - b;
      update_s += d - c;
    } else {
      opt.update();
    }
    if (i == steps - 1) last = loss.data().item<double>();
  }
  double secs = bench::now_s() - t0, slowest = 0;
  double train_cpu = cpu_s() - c0, all_train_cpu = 0;
  const MachineTicks m1 = machine_ticks();
  MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&train_cpu, &all_train_cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  // With double buffering or overlap the averaging runs on the optimizer's own communicator (except
  // overlap's first step): this one counts what it ran.
  const double averaging_ms = 1e3 * comm->mean_grad_seconds() / static_cast<double>(std::max<std::int64_t>(1, comm->mean_grad_calls()));

  // The bare MPI_Allreduce of the same bytes (float32, in place), the median of 21.
  std::vector<float> buf(static_cast<std::size_t>(params), 1.0f);
  std::vector<double> ms;
  MPI_Barrier(MPI_COMM_WORLD);
  const MachineTicks m2 = machine_ticks();
  const double c2 = cpu_s(), t2 = bench::now_s();
  for (int k = 0; k < 24; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double a = bench::now_s();
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (k >= 3) ms.push_back(1e3 * (bench::now_s() - a));
  }
  const double bare_wall = bench::now_s() - t2;
  double bare_cpu = cpu_s() - c2, all_bare_cpu = 0;
  const MachineTicks m3 = machine_ticks();
  MPI_Allreduce(&bare_cpu, &all_bare_cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  std::sort(ms.begin(), ms.end());
  const double bare_ms = P > 1 ? ms[ms.size() / 2] : 0.0;
  // The same bytes through the communicator's own sum (its allreduce_algorithm), the median of 21.
  Tensor whole = zeros(Shape{params}, float32);
  ms.clear();
  for (int k = 0; k < 24; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double a = bench::now_s();
    comm->allreduce(whole);
    if (k >= 3) ms.push_back(1e3 * (bench::now_s() - a));
  }
  std::sort(ms.begin(), ms.end());
  const double comm_ms = P > 1 ? ms[ms.size() / 2] : 0.0;

  if (comm->rank() == 0) {
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::cout << "W5: " << (cnn ? "W2's CNN" : "W1") << " on " << P << " process(es) x " << (threads ? threads : "all the cores'")
              << " thread(s), " << (dataset == "synthetic" ? "synthetic images (random labels), " : "Fashion-MNIST, ")
              << name << " communicator (" << mn::allreduce_algorithm_name(comm->allreduce_algorithm())
              << "), gradients as " << wire << " on the wire"
              << (opt_options.double_buffering ? ", double buffering" : "")
              << (opt_options.overlap ? ", overlapped with backward" : "") << ", batch " << local << " per process (" << B << " in all), "
              << steps << " steps\n"
              << "epoch: " << slowest << " s, last loss " << last << "\n"
              << "step: " << slowest / static_cast<double>(steps) * 1e3 << " ms\n"
              << "gradient averaging: " << averaging_ms << " ms/step (" << params * 4 / 1e6 << " MB of float32)\n"
              << "bare MPI_Allreduce of " << params * 4 / 1e6 << " MB: " << bare_ms << " ms (median of 21)\n"
              << "communicator's allreduce (" << mn::allreduce_algorithm_name(comm->allreduce_algorithm())
              << ") of " << params * 4 / 1e6 << " MB: " << comm_ms << " ms (median of 21)\n"
              << "steps x bare allreduce: " << static_cast<double>(steps) * bare_ms / 1e3 << " s\n";
    // Cores in use: our ranks' CPU seconds (all threads) per second of the phase, and the machine's
    // (every process, and the kernel's softirq share) from /proc/stat.
    const double ncpu = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    auto cores = [&](const MachineTicks& a, const MachineTicks& b, double what) {
      return b.total > a.total ? ncpu * what / (b.total - a.total) : 0.0;
    };
    std::cout << "cpu, training: our ranks " << all_train_cpu / secs << " cores, the machine "
              << cores(m0, m1, m1.busy - m0.busy) << " of " << ncpu << " (softirq " << cores(m0, m1, m1.softirq - m0.softirq)
              << ")\n"
              << "cpu, bare allreduces: our ranks " << all_bare_cpu / bare_wall << " cores, the machine "
              << cores(m2, m3, m3.busy - m2.busy) << " of " << ncpu << " (softirq "
              << cores(m2, m3, m3.softirq - m2.softirq) << ")\n";
    if (breakdown) {
      const double k = 1e3 / static_cast<double>(steps);
      std::cout << "breakdown (rank 0, ms/step): compute " << compute_s * k << ", wait for the slower rank "
                << wait_s * k << ", averaging " << comm->mean_grad_seconds() * k << ", optimizer step "
                << (update_s - comm->mean_grad_seconds()) * k << ", update in all " << update_s * k;
      if (bare_in_loop) std::cout << ", bare allreduce in the loop " << probe_s * k;
      std::cout << "\n";
    }
    std::cout << dezero::cpu_info().summary() << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w5_data_parallel: " << e.what() << "\n";
  return 1;
}
