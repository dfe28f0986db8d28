// dezero/mn/naive.cpp - the "naive" communicator (ChainerMN's): one MPI_Allreduce per tensor, GPU
// tensors through host copies. The shared operations (the mean, broadcasts, the checks) are
// Communicator's (communicator.cpp); create_communicator("naive") makes one (factory.cpp).
#include <memory>
#include <vector>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {

class NaiveCommunicator : public Communicator {
 public:
  NaiveCommunicator() : Communicator("naive") {}

 protected:
  void allreduce_sum_inplace(std::vector<Tensor>& tensors) override {
    for (Tensor& t : tensors) {
      unsigned char* p = nullptr;
      std::vector<unsigned char> host;
      if (t.device().is_cpu()) {
        p = static_cast<unsigned char*>(t.raw_data());
      } else {
        host.resize(t.nbytes());
        detail::copy_to_host(t, host.data());
        detail::wait_for_copies({t});
        p = host.data();
      }
      allreduce_host(p, t.size(), t.dtype(), "allreduce");
      if (!t.device().is_cpu()) {
        detail::copy_from_host(host.data(), t);
        detail::wait_for_copies({t});
      }
    }
  }
};

}  // namespace

std::shared_ptr<Communicator> detail::make_naive_communicator() { return std::make_shared<NaiveCommunicator>(); }

}  // namespace dezero::mn
