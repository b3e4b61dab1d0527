/* tsunagi.h compiled alone as strict C11, and used from C. */
#include <tsunagi/tsunagi.h>

#include <stdio.h>
#include <string.h>

static void count(tsu_status_t status, void *arg) {
  if (status == TSU_OK) ++*(int *)arg;
}

#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__,   \
              #cond, tsu_last_error());                                 \
      return 1;                                                         \
    }                                                                   \
  } while (0)

int main(void) {
  uint32_t rank = 0, size = 0;
  EXPECT(tsu_rank(&rank) == TSU_ERR_NOT_INITIALIZED);
  EXPECT(strlen(tsu_strerror(TSU_ERR_OUT_OF_BOUNDS)) > 0);
  EXPECT(tsu_init(NULL) == TSU_OK);
  EXPECT(tsu_rank(&rank) == TSU_OK && tsu_size(&size) == TSU_OK && rank < size);

  void *base = NULL;
  size_t seg_size = 0;
  EXPECT(tsu_segment_info(TSU_SEG_MAIN, &base, &seg_size) == TSU_OK);
  char *mem = (char *)base;
  strcpy(mem, "hello, tsunagi");
  int done = 0;
  /* Copy within my own main segment through the API. */
  EXPECT(tsu_try_put(tsu_gaddr(rank, TSU_SEG_MAIN, 100), tsu_laddr(TSU_SEG_MAIN, 0), 15,
                     tsu_cb(count, &done)) == TSU_OK);
  EXPECT(tsu_quiet() == TSU_OK && done == 1);
  EXPECT(strcmp(mem + 100, "hello, tsunagi") == 0);

  /* tsu_segment_alloc_ex: flags 0 is tsu_segment_alloc; NIC atomics need a
     network transport (none here: every rank on this node). */
  tsu_seg_t seg = 0;
  void *seg_base = NULL;
  tsu_atomic_site_t site = TSU_ATOMIC_SITE_NIC;
  EXPECT(tsu_segment_alloc_ex(4096, 0, &seg, &seg_base) == TSU_OK);
  EXPECT(tsu_segment_atomic_site(seg, &site) == TSU_OK && site == TSU_ATOMIC_SITE_CPU);
  EXPECT(tsu_segment_free(seg) == TSU_OK);
  EXPECT(tsu_segment_alloc_ex(4096, TSU_SEG_NIC_ATOMICS, &seg, &seg_base) == TSU_ERR_UNSUPPORTED);
  EXPECT(tsu_segment_alloc_ex(4096, 0x80u, &seg, &seg_base) == TSU_ERR_INVALID_ARG);

  uint64_t old = 0;
  tsu_counter_t c;
  tsu_counter_init(&c);
  EXPECT(tsu_try_fetch_add_u64(tsu_gaddr(rank, TSU_SEG_MAIN, 512), 5, &old, tsu_counter_cb(&c)) ==
         TSU_OK);
  EXPECT(tsu_counter_wait(&c, 1) == TSU_OK && old == 0);
  EXPECT(tsu_try_put(tsu_gaddr(size, TSU_SEG_MAIN, 0), tsu_laddr(TSU_SEG_MAIN, 0), 1,
                     tsu_cb_none()) == TSU_ERR_BAD_RANK);
  EXPECT(strstr(tsu_last_error(), "tsu_try_put") != NULL);
  EXPECT(tsu_finalize() == TSU_OK);
  EXPECT(tsu_finalize() == TSU_ERR_NOT_INITIALIZED);
  printf("header_c11: OK\n");
  return 0;
}
