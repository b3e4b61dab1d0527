/* Built outside the project against the installed <tsunagi/ult.h> alone:
 * fork/join recursion in ULTs, and a thread spawned on the next rank with
 * its value sent back. */
#include <stdio.h>
#include <string.h>
#include <tsunagi/ult.h>

static void *fib(void *arg) {
  const long n = (long)arg;
  if (n < 2) return arg;
  tsu_ult_t t;
  void *a = NULL;
  if (tsu_ult_create(&t, NULL, fib, (void *)(n - 1)) != TSU_OK) return NULL;
  const long b = (long)fib((void *)(n - 2));
  tsu_ult_join(t, &a);
  return (void *)((long)a + b);
}

static void twice(const void *arg, size_t len, void *value, size_t *value_len) {
  long x = 0;
  memcpy(&x, arg, len < sizeof x ? len : sizeof x);
  x *= 2;
  memcpy(value, &x, sizeof x);
  *value_len = sizeof x;
}

int main(void) {
  uint32_t me = 0, n = 1;
  if (tsu_init(NULL) != TSU_OK || tsu_ult_init(NULL) != TSU_OK) return 1;
  tsu_rank(&me);
  tsu_size(&n);
  if (tsu_ult_register(1, twice) != TSU_OK) return 1;
  tsu_ult_t t;
  void *v = NULL;
  if (tsu_ult_create(&t, NULL, fib, (void *)20L) != TSU_OK || tsu_ult_join(t, &v) != TSU_OK ||
      (long)v != 6765) {
    fprintf(stderr, "rank %u: fib failed\n", me);
    return 1;
  }
  long x = 21 + (long)me, y = 0;
  if (tsu_ult_spawn(&t, (me + 1) % n, 1, &x, sizeof x, NULL) != TSU_OK ||
      tsu_ult_join_value(t, &y, sizeof y, NULL) != TSU_OK || y != 2 * x) {
    fprintf(stderr, "rank %u: remote spawn failed\n", me);
    return 1;
  }
  if (tsu_ult_finalize() != TSU_OK || tsu_finalize() != TSU_OK) return 1;
  printf("rank %u: ult consumer ok\n", me);
  return 0;
}
