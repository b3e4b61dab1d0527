/* Errors a user can act on (issue 45): `bad_input CASE` makes one bad call
 * on the last PE while the others wait in a barrier (a collective routine:
 * on every PE, as a program calls it).  The library must print a message
 * naming the function and end the whole job with a non-zero status; the
 * test (expect_fail.sh) checks both.  A bad call that returns makes this
 * program exit with 3 and say so. */
#include "shmem_test.h"

static long static_word;

static void returned(const char *what) {
  fprintf(stderr, "bad_input: %s returned instead of ending the job\n", what);
  fflush(stderr);
  exit(3);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (strcmp(c, "uninit") == 0) {
    shmem_long_p(&static_word, 1, 0);  /* before shmem_init */
    returned("shmem_long_p before shmem_init");
  }
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long *heap = shmem_calloc(64, sizeof(long));
  shmem_barrier_all();
  /* Collective routines with a bad argument, on every PE. */
  if (strcmp(c, "free_foreign") == 0) {
    shmem_free(malloc(64));
    returned(c);
  } else if (strcmp(c, "free_interior") == 0) {
    shmem_free(heap + 1);
    returned(c);
  } else if (strcmp(c, "bad_team") == 0) {
    int v = 1;
    const int rc = shmem_int_sum_reduce(SHMEM_TEAM_INVALID, (int *)heap, &v, 1);
    fprintf(stderr, "bad_input: shmem_int_sum_reduce returned %d\n", rc);
    returned(c);
  } else if (strcmp(c, "bad_team_sync") == 0) {
    shmem_team_sync(SHMEM_TEAM_INVALID);
    returned(c);
  }
  if (me != n - 1) {
    /* global_exit: the others wait on a flag that never comes. */
    if (strcmp(c, "global_exit") == 0) shmem_long_wait_until(&static_word, SHMEM_CMP_EQ, 1);
    shmem_barrier_all();
    fprintf(stderr, "bad_input: PE %d left the barrier\n", me);
    return 4;
  }
  const int right = (me + 1) % n;
  long stack_word = 0, buf[8] = {0};
  if (strcmp(c, "nonsym_put") == 0) {
    shmem_putmem(&stack_word, buf, sizeof buf[0], right);
  } else if (strcmp(c, "nonsym_get") == 0) {
    shmem_long_get(buf, &stack_word, 1, right);
  } else if (strcmp(c, "malloc_ptr") == 0) {
    int *p = malloc(64);
    shmem_int_p(p, 1, right);
  } else if (strcmp(c, "pe_range") == 0) {
    shmem_long_p(heap, 1, n);
  } else if (strcmp(c, "pe_negative") == 0) {
    shmem_int_atomic_fetch_add((int *)heap, 1, -1);
  } else if (strcmp(c, "put_overflow") == 0) {
    /* Runs past the end of the symmetric heap (and of the source). */
    shmem_putmem(heap, heap, (size_t)1 << 40, right);
  } else if (strcmp(c, "ctx_invalid") == 0) {
    shmem_ctx_putmem(SHMEM_CTX_INVALID, heap, buf, 8, right);
  } else if (strcmp(c, "lock_nonsym") == 0) {
    shmem_set_lock(&stack_word);
  } else if (strcmp(c, "wait_nonsym") == 0) {
    shmem_long_wait_until(&stack_word, SHMEM_CMP_EQ, 0);  /* caught with SHMEM_DEBUG=1 */
  } else if (strcmp(c, "global_exit") == 0) {
    shmem_global_exit(7);
  } else {
    fprintf(stderr, "bad_input: unknown case '%s'\n", c);
    exit(2);
  }
  returned(c);
  return 3;
}
