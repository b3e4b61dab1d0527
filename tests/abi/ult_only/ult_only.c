/* Built outside the project against the installed <tsunagi/ult.h> and linked
 * with libtsunagi-ult alone: it calls no function of libtsunagi, so (linked
 * --as-needed) libtsunagi is not among its own dependencies and the loader
 * finds it only through libtsunagi-ult's run path.  Local threads, no
 * tsu_init: fork/join recursion in ULTs. */
#include <stdio.h>
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

int main(void) {
  tsu_ult_t t;
  void *v = NULL;
  if (tsu_ult_init(NULL) != TSU_OK) return 1;
  if (tsu_ult_create(&t, NULL, fib, (void *)15L) != TSU_OK || tsu_ult_join(t, &v) != TSU_OK ||
      (long)v != 610) {
    fprintf(stderr, "ult_only: fib failed\n");
    return 1;
  }
  if (tsu_ult_finalize() != TSU_OK) return 1;
  printf("ult_only ok\n");
  return 0;
}
