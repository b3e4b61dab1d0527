// Built outside the project with the installed oshc++ and the CMake package:
// the C++ overloads of <shmem.h> (shmem_put, shmem_atomic_add on long).
#include <shmem.h>

#include <cstdio>

static long counter;

int main() {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* slots = static_cast<long*>(shmem_calloc(static_cast<size_t>(n), sizeof(long)));
  const long mine = me + 1;
  for (int pe = 0; pe < n; ++pe) shmem_put(slots + me, &mine, 1, pe);
  shmem_atomic_add(&counter, 1L, 0);
  shmem_barrier_all();
  bool bad = me == 0 && counter != n;
  for (int pe = 0; pe < n; ++pe) bad |= slots[pe] != pe + 1;
  if (bad) {
    std::fprintf(stderr, "PE %d: wrong results (counter %ld)\n", me, counter);
    shmem_global_exit(1);
  }
  shmem_free(slots);
  if (me == 0) std::printf("shmem C++ consumer: %d PEs ok\n", n);
  shmem_finalize();
  return 0;
}
