/* Teams (OpenSHMEM 1.5, 9.4): SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED,
 * split_strided, split_2d, translate_pe, get_config, team_sync, destroy, and
 * the -1 answers about SHMEM_TEAM_INVALID.  SHMEM_TEST_NODE_PES (set by the
 * test per route) is how many PEs share each node. */
#include "shmem_test.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();

  CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n,
        "world team");
  CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1,
        "queries of SHMEM_TEAM_INVALID must answer -1");
  CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1 &&
            shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID) == -1,
        "translate_pe with SHMEM_TEAM_INVALID must answer -1");

  /* The node's team: contains me, numbered in world order. */
  const int shared_n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
  const int shared_me = shmem_team_my_pe(SHMEM_TEAM_SHARED);
  CHECK(shared_n >= 1 && shared_me >= 0 && shared_me < shared_n, "shared team %d of %d",
        shared_me, shared_n);
  CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, shared_me, SHMEM_TEAM_WORLD) == me,
        "shared team's me in world");
  const char *node_pes = getenv("SHMEM_TEST_NODE_PES");
  if (node_pes) CHECK(shared_n == atoi(node_pes), "SHMEM_TEAM_SHARED has %d PEs, want %s",
                      shared_n, node_pes);
  int prev = -1;
  for (int i = 0; i < shared_n; ++i) {
    const int w = shmem_team_translate_pe(SHMEM_TEAM_SHARED, i, SHMEM_TEAM_WORLD);
    CHECK(w > prev && w < n, "shared PE %d is world PE %d", i, w);
    prev = w;
  }
  CHECK(shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "team_sync(SHARED)");
  CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "team_sync(WORLD)");

  /* Even and odd PEs, with a configuration. */
  shmem_team_config_t cfg = {.num_contexts = 2};
  shmem_team_t evens = SHMEM_TEAM_INVALID, odds = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg,
                                 SHMEM_TEAM_NUM_CONTEXTS, &evens) == 0,
        "split_strided evens");
  if (n >= 2) {
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odds) == 0,
          "split_strided odds");
  }
  shmem_team_t mine = me % 2 == 0 ? evens : odds, other = me % 2 == 0 ? odds : evens;
  CHECK(mine != SHMEM_TEAM_INVALID && other == SHMEM_TEAM_INVALID, "membership");
  const int tn = me % 2 == 0 ? (n + 1) / 2 : n / 2;
  CHECK(shmem_team_my_pe(mine) == me / 2 && shmem_team_n_pes(mine) == tn, "my team: %d of %d",
        shmem_team_my_pe(mine), shmem_team_n_pes(mine));
  for (int i = 0; i < tn; ++i) {
    CHECK(shmem_team_translate_pe(mine, i, SHMEM_TEAM_WORLD) == 2 * i + me % 2,
          "translate team PE %d", i);
  }
  CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, mine) == me / 2, "translate world me");
  if (n >= 2) {
    const int stranger = (me + 1) % n;  /* of the other parity */
    if (stranger % 2 != me % 2)
      CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, stranger, mine) == -1,
            "a PE outside the team translates to -1");
  }
  CHECK(shmem_team_translate_pe(mine, tn, SHMEM_TEAM_WORLD) == -1, "team PE out of range");
  if (me % 2 == 0) {
    shmem_team_config_t got = {.num_contexts = -1};
    CHECK(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
              got.num_contexts == 2,
          "get_config: num_contexts %d", got.num_contexts);
  }
  CHECK(shmem_team_sync(mine) == 0, "team_sync of my team");

  /* A team split from a team: every other PE of mine. */
  shmem_team_t sub = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(mine, 0, 2, (tn + 1) / 2, NULL, 0, &sub) == 0, "split of a split");
  if ((me / 2) % 2 == 0) {
    CHECK(sub != SHMEM_TEAM_INVALID && shmem_team_my_pe(sub) == me / 4, "sub team me %d",
          shmem_team_my_pe(sub));
    CHECK(shmem_team_translate_pe(sub, shmem_team_my_pe(sub), SHMEM_TEAM_WORLD) == me,
          "sub team to world");
    CHECK(shmem_team_translate_pe(sub, 0, mine) == 0, "sub team to parent");
    shmem_team_sync(sub);
    shmem_team_destroy(sub);
  } else {
    CHECK(sub == SHMEM_TEAM_INVALID, "not a member of the sub team");
  }
  shmem_team_destroy(mine);

  /* split_2d with xrange 2: x teams are pairs of neighbours, y teams
   * columns. */
  shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
  CHECK(xt != SHMEM_TEAM_INVALID && yt != SHMEM_TEAM_INVALID, "split_2d handles");
  const int xn = n < 2 ? n : 2;
  const int last_row = (n - 1) / 2;
  const int want_xn = (me / 2 == last_row && n % 2) ? 1 : xn;
  CHECK(shmem_team_my_pe(xt) == me % 2 && shmem_team_n_pes(xt) == want_xn, "x team %d of %d",
        shmem_team_my_pe(xt), shmem_team_n_pes(xt));
  CHECK(shmem_team_my_pe(yt) == me / 2, "y team me %d", shmem_team_my_pe(yt));
  CHECK(shmem_team_translate_pe(yt, 0, SHMEM_TEAM_WORLD) == me % 2, "y team's first PE");
  CHECK(shmem_team_sync(xt) == 0 && shmem_team_sync(yt) == 0, "syncs of the 2d teams");
  shmem_team_destroy(xt);
  shmem_team_destroy(yt);

  /* Many teams created and destroyed: handles and resources are reused. */
  for (int i = 0; i < 64; ++i) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0, "split %d", i);
    CHECK(shmem_team_n_pes(t) == n, "copy of world");
    shmem_team_sync(t);
    shmem_team_destroy(t);
  }
  shmem_barrier_all();
  TEST_DONE("teams");
  shmem_finalize();
  return 0;
}
