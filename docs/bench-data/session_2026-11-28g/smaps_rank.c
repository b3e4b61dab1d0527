/* smaps_rank: after tsu_init, prints rank 1's resident KiB by mapping
   (heap, anonymous, libraries together, other files by name). */
#include <stdio.h>
#include <string.h>
#include <tsunagi/tsunagi.h>
int main(void) {
  if (tsu_init(NULL) != TSU_OK) return 1;
  uint32_t me = 0;
  tsu_rank(&me);
  FILE* f = fopen("/proc/self/smaps", "r");
  char line[1024], name[256] = "";
  long rss[128]; char names[128][200]; int n = 0;
  while (fgets(line, sizeof line, f)) {
    char range[64], perm[8], off[32], dev[32], path[512] = ""; long ino, kb;
    int k = sscanf(line, "%63s %7s %31s %31s %ld %511s", range, perm, off, dev, &ino, path);
    if (k >= 5 && strchr(range, '-') && strlen(perm) == 4) {
      snprintf(name, sizeof name, "%s", k == 6 ? path : "[anon]");
      if (strstr(name, ".so")) strcpy(name, "[libraries]");
      continue;
    }
    if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
      int i; for (i = 0; i < n && strcmp(names[i], name); i++) {}
      if (i == n && n < 128) { snprintf(names[n], 200, "%s", name); rss[n++] = 0; }
      if (i < 128) rss[i] += kb;
    }
  }
  uint32_t size = 0;
  tsu_size(&size);
  if (me == 1 || me + 1 == size)
    for (int i = 0; i < n; i++)
      if (rss[i] >= 32) printf("rank%u of %u: %8ld KiB %s\n", me, size, rss[i], names[i]);
  fflush(stdout);
  tsu_finalize();
  return 0;
}
