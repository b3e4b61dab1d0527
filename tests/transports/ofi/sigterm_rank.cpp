// A rank that initializes tsunagi over ofi, says "ready" and then sleeps
// (not calling tsunagi) until a signal ends it: the /dev/shm cleanup test
// (shm_sigterm_test.sh) sends SIGTERM to the job at that point.
//   ofi_sigterm_rank [exit-handler]
// exit-handler: the program installs its own SIGTERM handler after tsu_init
// (replacing any the provider installed) that ends it with exit(0), as
// applications with a graceful shutdown do.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tsunagi/tsunagi.h"

volatile sig_atomic_t g_stop = 0;
extern "C" void on_term(int) { g_stop = 1; }

int main(int argc, char** argv) {
  if (tsu_init(nullptr) != TSU_OK) {
    std::fprintf(stderr, "tsu_init: %s\n", tsu_last_error());
    return 2;
  }
  const bool own_handler = argc > 1 && !std::strcmp(argv[1], "exit-handler");
  if (own_handler) {
    struct sigaction sa {};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, nullptr);
  }
  uint32_t me = 0;
  tsu_rank(&me);
  if (tsu_barrier() != TSU_OK) return 3;
  std::printf("rank %u ready\n", me);
  std::fflush(stdout);
  while (!g_stop) pause();
  std::exit(0);  // without tsu_finalize: what the process's exit closes
}
