#include <shmem.h>
