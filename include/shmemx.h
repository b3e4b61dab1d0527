/* tsunagi-shmem extensions beyond OpenSHMEM 1.5 (none are needed by
 * standard programs; the header exists because programs include it). */
#ifndef TSUNAGI_SHMEMX_H
#define TSUNAGI_SHMEMX_H
#include <shmem.h>
#endif
