/* Library setup, exit and query routines (OpenSHMEM 1.5, chapter 9.1).
 *   setup                  shmem_init, every query, shmem_finalize
 *   setup thread LEVEL     shmem_init_thread(LEVEL): provided and query_thread
 *   setup legacy           start_pes, _my_pe, _num_pes, shmalloc/shfree and
 *                          the _SHMEM_ constants of 1.0-1.3 */
#include "shmem_test.h"

static int global_word;  /* a symmetric data object without allocation */

static void queries(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n >= 1 && me >= 0 && me < n, "my_pe %d n_pes %d", me, n);
  CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe(WORLD) %d",
        shmem_team_my_pe(SHMEM_TEAM_WORLD));
  CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "team_n_pes(WORLD) %d",
        shmem_team_n_pes(SHMEM_TEAM_WORLD));
  for (int pe = 0; pe < n; ++pe) CHECK(shmem_pe_accessible(pe) == 1, "pe_accessible(%d)", pe);
  CHECK(shmem_pe_accessible(n) == 0, "pe_accessible(n_pes) is %d", shmem_pe_accessible(n));
  CHECK(shmem_pe_accessible(-1) == 0, "pe_accessible(-1)");

  int *heap = shmem_malloc(sizeof(int));
  int stack_word = 0;
  int *private_heap = malloc(sizeof(int));
  for (int pe = 0; pe < n; ++pe) {
    CHECK(shmem_addr_accessible(heap, pe) == 1, "heap object on PE %d", pe);
    CHECK(shmem_addr_accessible(&global_word, pe) == 1, "global object on PE %d", pe);
    CHECK(shmem_addr_accessible(&stack_word, pe) == 0, "stack object on PE %d", pe);
    CHECK(shmem_addr_accessible(private_heap, pe) == 0, "malloc'd object on PE %d", pe);
  }
  free(private_heap);
  shmem_free(heap);

  int major = -1, minor = -1;
  shmem_info_get_version(&major, &minor);
  CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version %d.%d", major,
        minor);
  CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
  char name[SHMEM_MAX_NAME_LEN];
  memset(name, 'x', sizeof name);
  shmem_info_get_name(name);
  CHECK(memchr(name, '\0', sizeof name) != NULL, "name not terminated within SHMEM_MAX_NAME_LEN");
  CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name '%s'", name);
  shmem_pcontrol(0);
  shmem_pcontrol(1);
  shmem_pcontrol(2, "any extra argument");
}

static int level_of(const char *text) {
  if (strcmp(text, "SINGLE") == 0) return SHMEM_THREAD_SINGLE;
  if (strcmp(text, "FUNNELED") == 0) return SHMEM_THREAD_FUNNELED;
  if (strcmp(text, "SERIALIZED") == 0) return SHMEM_THREAD_SERIALIZED;
  if (strcmp(text, "MULTIPLE") == 0) return SHMEM_THREAD_MULTIPLE;
  fprintf(stderr, "unknown thread level %s\n", text);
  exit(2);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "plain";
  if (strcmp(mode, "thread") == 0 && argc > 2) {
    const int requested = level_of(argv[2]);
    int provided = -1;
    const int rc = shmem_init_thread(requested, &provided);
    if (rc != 0) {
      fprintf(stderr, "shmem_init_thread(%s) returned %d\n", argv[2], rc);
      return 1;
    }
    /* Every level is supported: provided is at least the level asked for. */
    CHECK(provided >= requested && provided <= SHMEM_THREAD_MULTIPLE, "requested %d provided %d",
          requested, provided);
    int queried = -1;
    shmem_query_thread(&queried);
    CHECK(queried == provided, "query_thread %d, init_thread provided %d", queried, provided);
    queries();
    shmem_barrier_all();
    TEST_DONE("setup thread");
    shmem_finalize();
    return 0;
  }
  if (strcmp(mode, "legacy") == 0) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    start_pes(0);
    CHECK(_my_pe() == shmem_my_pe() && _num_pes() == shmem_n_pes(), "_my_pe %d _num_pes %d",
          _my_pe(), _num_pes());
    CHECK(my_pe() == shmem_my_pe() && num_pes() == shmem_n_pes(), "my_pe %d num_pes %d",
          my_pe(), num_pes());
    long *p = shmalloc(16 * sizeof(long));
    CHECK(p != NULL, "shmalloc");
    for (int i = 0; i < 16; ++i) p[i] = i;
    p = shrealloc(p, 64 * sizeof(long));
    CHECK(p != NULL && p[15] == 15, "shrealloc kept the contents");
    long *q = shmemalign(256, sizeof(long));
    CHECK(q != NULL && ((uintptr_t)q % 256) == 0, "shmemalign %p", (void *)q);
    shfree(q);
    shfree(p);
#pragma GCC diagnostic pop
    CHECK(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_MINOR_VERSION == 5, "_SHMEM_ version");
    CHECK(_SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE && _SHMEM_BCAST_SYNC_SIZE >= 1 &&
              _SHMEM_REDUCE_SYNC_SIZE >= 1 && _SHMEM_BARRIER_SYNC_SIZE >= 1 &&
              _SHMEM_COLLECT_SYNC_SIZE >= 1 && _SHMEM_REDUCE_MIN_WRKDATA_SIZE >= 1 &&
              _SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_GE == SHMEM_CMP_GE,
          "_SHMEM_ constants");
    CHECK(strlen(_SHMEM_VENDOR_STRING) < _SHMEM_MAX_NAME_LEN, "vendor string");
    shmem_barrier_all();
    TEST_DONE("setup legacy");
    /* 1.0 programs often end without shmem_finalize: the library finalizes
     * at exit. */
    return 0;
  }
  shmem_init();
  queries();
  int provided = -1;
  shmem_query_thread(&provided);
  CHECK(provided >= SHMEM_THREAD_SINGLE && provided <= SHMEM_THREAD_MULTIPLE,
        "query_thread after shmem_init: %d", provided);
  shmem_barrier_all();
  TEST_DONE("setup");
  shmem_finalize();
  return 0;
}
