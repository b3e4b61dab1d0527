#include <tsunagi/tsunagi.h>
#include <stdio.h>
#include <unistd.h>
/* Every rank puts 8 B to every other rank (state for every peer), then the
   job idles IDLE seconds (main threads asleep); TSU_STATS shows the pings. */
int main(void) {
  if (tsu_init(NULL) != TSU_OK) return 1;
  uint32_t r, n; tsu_rank(&r); tsu_size(&n);
  for (uint32_t p = 0; p < n; ++p)
    if (p != r) tsu_try_put_nbi(tsu_gaddr(p, TSU_SEG_MAIN, 64 + 8 * r), tsu_laddr(TSU_SEG_MAIN, 0), 8);
  tsu_quiet();
  tsu_barrier();
  sleep(3);
  tsu_barrier();
  return tsu_finalize() == TSU_OK ? 0 : 1;
}
