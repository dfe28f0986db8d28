// tests/consumer/mn.cpp - an installed dezero::mn (libdezero_mn) through find_package(dezero):
// built when the package has it (the target dezero::mn), run as one MPI process (a singleton,
// no mpirun): the environment, a communicator, a sum over the ranks and the mean gradient of a
// model. Exits non-zero on any mismatch.
#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <iostream>

int main(int argc, char** argv) try {
  dezero::mn::Environment env(argc, argv);
  auto comm = dezero::mn::create_communicator("flat");
  dezero::Tensor s = comm->allreduce(dezero::ones({3}));
  dezero::models::MLP model({2});
  model(dezero::ones({1, 4}));
  for (auto& p : model.params()) p.set_grad(dezero::Variable(dezero::full(p.data().shape(), 2.0)));
  comm->multi_node_mean_grad(model);
  const bool ok = dezero::mn::is_available() && dezero::utils::array_equal(s, dezero::full({3}, comm->size())) &&
                  dezero::utils::array_equal(model.params()[0].grad().data(), dezero::full({4, 2}, 2.0));
  if (!ok) {
    std::cerr << "consumer_mn: FAILED\n";
    return 1;
  }
  std::cout << "consumer_mn: all checks passed (" << comm->size() << " process)\n";
  return 0;
} catch (const std::exception& e) {
  std::cout.flush();
  std::cerr << "consumer_mn: " << e.what() << "\n";
  return 1;
}
