/* Communication contexts (OpenSHMEM 1.5, 9.4): ctx_create with each option,
 * RMA, atomics and waits through a context, ctx_quiet completing that
 * context's _nbi operations, ctx_get_team, contexts of a team
 * (team_create_ctx: PE numbers relative to the team), ctx_destroy; the
 * default context under every name. */
#include "shmem_test.h"

enum { kLen = 1024 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  long *data = shmem_calloc(4 * kLen, sizeof(long));
  long *counter = shmem_calloc(1, sizeof(long));
  long src[kLen];
  for (int i = 0; i < kLen; ++i) src[i] = me * 10000 + i;
  CHECK(data && counter, "allocation");

  shmem_team_t t = SHMEM_TEAM_INVALID;
  CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD,
        "default context's team");

  const long options[] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE,
                          SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE};
  enum { kCtx = sizeof options / sizeof options[0] };
  shmem_ctx_t ctx[kCtx];
  for (int k = 0; k < kCtx; ++k) {
    ctx[k] = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(options[k], &ctx[k]) == 0 && ctx[k] != SHMEM_CTX_INVALID,
          "ctx_create(%ld)", options[k]);
    t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(ctx[k], &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx %d's team", k);
  }
  for (int k = 0; k < kCtx - 1; ++k) CHECK(ctx[k] != ctx[k + 1], "distinct contexts");

  /* Each context but NOSTORE puts a quarter of the data with _nbi; its
   * ctx_quiet completes them. */
  const int putters[4] = {0, 1, 2, 4};
  for (int q = 0; q < 4; ++q) {
    shmem_ctx_t c = ctx[putters[q]];
    for (int i = 0; i < kLen; i += 128)
      shmem_ctx_long_put_nbi(c, &data[q * kLen + i], &src[i], 128, right);
    shmem_ctx_quiet(c);
  }
  shmem_ctx_long_atomic_add(ctx[4], counter, 1, 0);
  shmem_ctx_quiet(ctx[4]);
  shmem_barrier_all();
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < kLen; ++i)
      CHECK(data[q * kLen + i] == left * 10000 + i, "quarter %d [%d]: %ld", q, i,
            data[q * kLen + i]);
  if (me == 0) CHECK(*counter == n, "counter %ld", *counter);
  long got[8];
  shmem_ctx_long_get(ctx[3], got, &data[5], 8, right);
  CHECK(got[0] == me * 10000 + 5, "get through the NOSTORE context (loads only)");
  long fetched = 0;
  shmem_ctx_long_atomic_fetch_nbi(ctx[1], &fetched, &data[7], right);
  shmem_ctx_quiet(ctx[1]);
  CHECK(fetched == me * 10000 + 7, "fetch_nbi on ctx: %ld", fetched);
  shmem_barrier_all();

  /* ctx_quiet of one context, then a flag on another: the data is there. */
  for (int r = 1; r <= 20; ++r) {
    for (int i = 0; i < kLen; ++i) src[i] = r * 1000000 + me * 10000 + i;
    shmem_ctx_long_put_nbi(ctx[0], data, src, kLen, right);
    shmem_ctx_quiet(ctx[0]);
    shmem_ctx_long_atomic_set(ctx[2], counter, r, right);
    shmem_ctx_quiet(ctx[2]);
    shmem_long_wait_until(counter, SHMEM_CMP_EQ, r);
    for (int i = 0; i < kLen; i += 97)
      CHECK(data[i] == r * 1000000 + left * 10000 + i, "round %d [%d]", r, i);
    shmem_barrier_all();
  }

  for (int k = 0; k < kCtx; ++k) shmem_ctx_destroy(ctx[k]);
  shmem_ctx_destroy(SHMEM_CTX_INVALID);  /* no effect, as the specification says */

  /* A context of a team: PE numbers are the team's.  The team of even PEs. */
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
  if (me % 2 == 0) {
    CHECK(evens != SHMEM_TEAM_INVALID, "team of even PEs");
    shmem_ctx_t tc = SHMEM_CTX_INVALID;
    CHECK(shmem_team_create_ctx(evens, 0, &tc) == 0, "team_create_ctx");
    t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(tc, &t) == 0 && t == evens, "team context's team");
    const int tn = shmem_team_n_pes(evens), tme = shmem_team_my_pe(evens);
    CHECK(tme == me / 2, "team_my_pe %d", tme);
    /* Team PE (tme+1)%tn is world PE 2*((tme+1)%tn). */
    const long v = 5000 + me;
    shmem_ctx_long_p(tc, &data[3 * kLen], v, (tme + 1) % tn);
    shmem_ctx_quiet(tc);
    shmem_team_sync(evens);
    const int from = 2 * ((tme + tn - 1) % tn);
    CHECK(data[3 * kLen] == 5000 + from, "put through a team context: %ld", data[3 * kLen]);
    shmem_ctx_destroy(tc);
    shmem_team_destroy(evens);
  } else {
    CHECK(evens == SHMEM_TEAM_INVALID, "odd PE got a handle of the even team");
  }
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(data);
  TEST_DONE("contexts");
  shmem_finalize();
  return 0;
}
