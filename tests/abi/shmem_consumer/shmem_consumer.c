/* Built outside the project with the installed oshcc (and the CMake package,
 * and pkg-config): a ring of puts into a global variable, a fetch-add on a
 * heap word of PE 0 from every PE, a sum reduction.  Exits non-zero on a
 * wrong result. */
#include <shmem.h>
#include <stdio.h>

static long ring[2];  /* a global: symmetric without any allocation */

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long *count = shmem_calloc(1, sizeof *count);
  int *src = shmem_malloc(sizeof *src), *sum = shmem_malloc(sizeof *sum);
  if (!count || !src || !sum) {
    fprintf(stderr, "PE %d: shmem_malloc failed\n", me);
    shmem_global_exit(1);
  }
  const long mine[2] = {me, 100 + me};
  shmem_long_put(ring, mine, 2, (me + 1) % n);
  shmem_long_atomic_fetch_add(count, 1, 0);
  *src = me + 1;
  shmem_barrier_all();
  shmem_int_sum_reduce(SHMEM_TEAM_WORLD, sum, src, 1);
  const long left = (me + n - 1) % n;
  int bad = ring[0] != left || ring[1] != 100 + left || *sum != n * (n + 1) / 2;
  if (me == 0) bad |= shmem_long_atomic_fetch(count, 0) != n;
  if (bad) {
    fprintf(stderr, "PE %d: wrong results: ring %ld %ld sum %d\n", me, ring[0], ring[1], *sum);
    shmem_global_exit(1);
  }
  shmem_free(sum);
  shmem_free(src);
  shmem_free(count);
  if (me == 0) printf("shmem consumer: %d PEs ok\n", n);
  shmem_finalize();
  return 0;
}
