/* SHMEM_SYMMETRIC_SIZE is honoured: `symmetric_size BYTES` is run with
 * SHMEM_SYMMETRIC_SIZE set to BYTES in one of the specification's spellings
 * (a number with an optional K, M or G suffix).  Three quarters of it can be
 * allocated and used, more than all of it cannot (NULL on every PE). */
#include "shmem_test.h"

int main(int argc, char **argv) {
  shmem_init();
  CHECK(argc == 2, "usage: symmetric_size BYTES");
  const size_t size = strtoull(argv[1], NULL, 10);
  const int me = shmem_my_pe(), n = shmem_n_pes();
  char *big = shmem_malloc(size / 4 * 3);
  CHECK(big != NULL, "malloc of 3/4 of SHMEM_SYMMETRIC_SIZE (%zu bytes)", size / 4 * 3);
  /* All of it is really there: written at both ends by a neighbour. */
  const char mark = (char)('a' + me % 26);
  shmem_putmem(big, &mark, 1, (me + 1) % n);
  shmem_putmem(big + size / 4 * 3 - 1, &mark, 1, (me + 1) % n);
  shmem_barrier_all();
  const char left = (char)('a' + (me + n - 1) % n % 26);
  CHECK(big[0] == left && big[size / 4 * 3 - 1] == left, "ends of the block: %c %c", big[0],
        big[size / 4 * 3 - 1]);
  CHECK(shmem_malloc(size / 2) == NULL, "malloc beyond SHMEM_SYMMETRIC_SIZE succeeded");
  shmem_free(big);
  CHECK(shmem_malloc(size + 1) == NULL, "malloc(SHMEM_SYMMETRIC_SIZE + 1) succeeded");
  big = shmem_malloc(size / 2);
  CHECK(big != NULL, "malloc of half after the free");
  shmem_free(big);
  shmem_barrier_all();
  TEST_DONE("symmetric_size");
  shmem_finalize();
  return 0;
}
