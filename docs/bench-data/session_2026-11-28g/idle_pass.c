/* idle_pass: rank 0 times 10^6 idle tsu_progress() calls (manual progress),
   3 times; the other ranks wait in tsu_barrier.  docs/benchmarks.md. */
#include <stdio.h>
#include <time.h>
#include <tsunagi/tsunagi.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(void){
  tsu_init(NULL); uint32_t me; tsu_rank(&me);
  if(me==0){ for(int r=0;r<3;r++){ double t0=now(); for(int i=0;i<1000000;i++) tsu_progress(); printf("idle tsu_progress: %.1f ns/call\n",(now()-t0)/1e6);} }
  tsu_barrier(); tsu_finalize(); return 0;}
