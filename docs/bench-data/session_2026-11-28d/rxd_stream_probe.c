// 2 ranks on 2 nodes: rank 0 gets LEN bytes from rank 1's allocated (or main) segment, N times.
#include <tsunagi/tsunagi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static volatile int done;
static tsu_status_t last;
static void cb(tsu_status_t st, void* a) { (void)a; last = st; __atomic_add_fetch(&done, 1, __ATOMIC_RELEASE); }
int main(int argc, char** argv) {
  size_t len = argc > 1 ? strtoull(argv[1], 0, 0) : (1 << 20);
  int n = argc > 2 ? atoi(argv[2]) : 1;
  int main_seg = argc > 3 ? atoi(argv[3]) : 0;
  int op = argc > 4 ? atoi(argv[4]) : 0; // 0 get 1 put
  int k = argc > 5 ? atoi(argv[5]) : 1;
  if (tsu_init(NULL) != TSU_OK) { fprintf(stderr, "init: %s\n", tsu_last_error()); return 1; }
  uint32_t me, sz; tsu_rank(&me); tsu_size(&sz);
  tsu_seg_t seg = TSU_SEG_MAIN; void* base = NULL;
  if (!main_seg) { if (tsu_segment_alloc(2 * len + 4096, &seg, &base) != TSU_OK) { fprintf(stderr, "alloc %s\n", tsu_last_error()); return 1; } }
  else { size_t s; tsu_segment_info(TSU_SEG_MAIN, &base, &s); }
  memset(base, (int)(me + 1), 2 * len);
  if (k > 1) len /= k;
  tsu_barrier();
  uint32_t dst = (me + 1) % sz;
  if (getenv("ALL") || me == 0) {
    for (int i = 0; i < n; ++i) {
      struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
      done = 0;
      for (int j = 0; j < k; ++j) {
      size_t o = (size_t)j * len;
      tsu_status_t st = op == 0 ? tsu_try_get(tsu_laddr(seg, k*len + o), tsu_gaddr(dst, seg, o), len, (tsu_cb_t){cb, 0})
                                : tsu_try_put(tsu_gaddr(dst, seg, k*len + o), tsu_laddr(seg, o), len, (tsu_cb_t){cb, 0});
      if (st != TSU_OK) { fprintf(stderr, "issue %d: %s\n", st, tsu_last_error()); return 1; }
      }
      while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < k) {
        tsu_progress();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 10) { fprintf(stderr, "[%u] iteration %d: %d of %d complete after 10 s\n", me, i, done, k); tsu_stats_print(); sleep(3); return 2; }
      }
      clock_gettime(CLOCK_MONOTONIC, &t1);
      if (op == 0 && ((unsigned char*)base)[k*len] != (int)(dst+1)) fprintf(stderr, "iteration %d: byte %d\n", i, ((unsigned char*)base)[k*len]);
      printf("[%u] iter %d: %s %.1f ms\n", me, i, last == TSU_OK ? "ok" : "fail", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    }
  }
  tsu_barrier();
  tsu_finalize();
  return 0;
}
