// tests/mn/abort.cpp - one rank fails while the other waits in a collective: the job must end
// (non-zero, within seconds), not hang. Run by tests/mn/check_abort.cmake under mpirun -np 2:
//   abort_rank caught     rank 1 throws; main's handler catches it (as the examples' mains do)
//   abort_rank uncaught   rank 1 throws and nothing catches it (std::terminate)
//   abort_rank silent     rank 1 stops taking part (sleeps) without failing: rank 0's watchdog
//                         (DEZERO_MN_TIMEOUT, set to a few seconds by the test) ends the job
// Rank 0 meanwhile waits in a barrier that rank 1 never reaches.
#include <dezero/mn.hpp>

#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace {
void run(int argc, char** argv, bool silent) {
  dezero::mn::Environment env(argc, argv);
  auto comm = dezero::mn::create_communicator("naive");
  std::cout << "abort_rank: rank " << comm->rank() << " of " << comm->size() << " started" << std::endl;
  if (comm->rank() == 1 && silent) {
    std::this_thread::sleep_for(std::chrono::seconds(100));  // alive, but never sends again
    return;
  }
  if (comm->rank() == 1) throw std::runtime_error("rank 1 fails on purpose");
  comm->barrier();  // rank 0 waits here for rank 1, which never comes
  std::cout << "abort_rank: rank 0 left the barrier (wrong)" << std::endl;
}
}  // namespace

int main(int argc, char** argv) {
  const bool uncaught = argc > 1 && std::strcmp(argv[1], "uncaught") == 0;
  const bool silent = argc > 1 && std::strcmp(argv[1], "silent") == 0;
  if (uncaught) {
    run(argc, argv, false);
    return 0;
  }
  try {
    run(argc, argv, silent);
    return 0;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "abort_rank: " << e.what() << std::endl;
    return 1;
  }
}
