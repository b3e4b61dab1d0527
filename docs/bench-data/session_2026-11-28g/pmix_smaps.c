/* pmix_smaps: PMIx_Init alone (no tsunagi), then rank 1's and the last
   rank's resident KiB in anonymous mappings and the heap: what the PMIx
   client itself holds, for comparison with smaps_rank.c under mpirun. */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  pmix_proc_t me;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) return 1;
  pmix_value_t* v = NULL;
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  unsigned size = 0;
  if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS) { size = v->data.uint32; PMIX_VALUE_RELEASE(v); }
  FILE* f = fopen("/proc/self/smaps", "r");
  char line[1024], name[64] = "";
  long anon = 0, heap = 0, kb;
  while (fgets(line, sizeof line, f)) {
    char range[64], perm[8], off[32], dev[32], path[512] = "";
    long ino;
    int k = sscanf(line, "%63s %7s %31s %31s %ld %511s", range, perm, off, dev, &ino, path);
    if (k >= 5 && strchr(range, '-') && strlen(perm) == 4) {
      snprintf(name, sizeof name, "%s", k == 6 ? path : "[anon]");
      continue;
    }
    if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
      if (!strcmp(name, "[anon]")) anon += kb;
      if (!strcmp(name, "[heap]")) heap += kb;
    }
  }
  if (me.rank == 1 || me.rank + 1 == size)
    printf("pmix-only rank%u of %u: anon %ld KiB heap %ld KiB\n", me.rank, size, anon, heap);
  fflush(stdout);
  PMIx_Finalize(NULL, 0);
  return 0;
}
