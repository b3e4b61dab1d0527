/* shmem.h included by a C89 and by a C99 program (compile-only, -Wpedantic
 * -Werror): no type-generic names before C11, every typed name is there. */
#include <shmem.h>

void typed_names(shmem_ctx_t ctx, shmem_team_t team, long *pSync);

void typed_names(shmem_ctx_t ctx, shmem_team_t team, long *pSync) {
  static int i[4];
  static long l[4];
  static double d[4];
  static uint64_t sig;
  static size_t idx[4];
  int v;

  shmem_int_put(i, i + 1, 1, 1);
  shmem_ctx_long_get(ctx, l, l + 1, 1, 1);
  shmem_putmem_nbi(i, l, sizeof i, 1);
  shmem_put128_signal(l, l + 2, 1, &sig, 1, SHMEM_SIGNAL_SET, 1);
  shmem_iget32(i, i, 2, 2, 2, 1);
  shmem_double_p(d, 1.0, 1);
  v = shmem_int_g(i, 1);
  v = shmem_int_atomic_fetch_add(i, v, 1);
  shmem_ctx_uint64_atomic_fetch_xor_nbi(ctx, &sig, &sig, 3, 1);
  shmem_double_atomic_set(d, 2.0, 1);
  shmem_long_wait_until(l, SHMEM_CMP_GE, 1);
  v += (int)shmem_int_wait_until_some(i, 4, idx, NULL, SHMEM_CMP_NE, 0);
  v += shmem_long_test_all_vector(l, 4, NULL, SHMEM_CMP_EQ, l);
  v += shmem_long_sum_reduce(team, l, l + 2, 2);
  v += shmem_double_broadcast(team, d, d + 2, 2, 0);
  v += shmem_team_sync(team);
  shmem_barrier_all();
  (void)shmem_sync(team);
  (void)v;
  (void)pSync;
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
  {
    static long long ll[4];
    static double _Complex z[4];
    shmem_longlong_put(ll, ll + 1, 1, 1);
    (void)shmem_complexd_prod_reduce(team, z, z + 2, 1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    /* The deprecated active-set sync shares the name (C99 and later). */
    shmem_sync(0, 0, 2, pSync);
    shmem_long_sum_to_all(l, l + 2, 2, 0, 0, 2, l, pSync);
#pragma GCC diagnostic pop
  }
#endif
}
