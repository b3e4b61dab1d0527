#include <tsunagi/tsunagi.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
/* Puts to the peer, then both ranks idle 2 s (main thread asleep); prints
   the process CPU time used during the idle phase. */
int main(void) {
  if (tsu_init(NULL) != TSU_OK) return 1;
  uint32_t r; tsu_rank(&r);
  uint64_t v = 42;
  for (int i = 0; i < 1000; ++i) {
    (void)v; tsu_try_put_nbi(tsu_gaddr(1 - r, TSU_SEG_MAIN, 64), tsu_laddr(TSU_SEG_MAIN, 0), 8);
    tsu_quiet();
  }
  tsu_barrier();
  struct rusage a, b; getrusage(RUSAGE_SELF, &a);
  sleep(2);
  getrusage(RUSAGE_SELF, &b);
  double cpu = (b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
               (b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6;
  printf("rank %u: cpu during 2 s idle: %.3f s\n", r, cpu);
  tsu_barrier();
  return tsu_finalize() == TSU_OK ? 0 : 1;
}
