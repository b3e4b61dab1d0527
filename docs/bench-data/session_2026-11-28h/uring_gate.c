// Can a progress pass learn that a UDP socket has nothing to read without a
// system call?  Compares, on loopback, a pass that calls recvmmsg every time
// (what udp_socket.cpp does) with one that first peeks an io_uring
// multishot-poll completion queue (shared memory) and calls recvmmsg only
// after a completion said the socket was woken (or the last read filled its
// batch).  Prints the idle pass cost and an 8-byte ping-pong's round trip
// (median / mean / p99) for both, the two modes interleaved.
// Build: cc -O2 -o uring_gate uring_gate.c -luring
// Run:   ./uring_gate [iterations]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

typedef struct {
  int fd;
  int gated;  // 0: recvmmsg every pass; 1: multishot poll CQ; 2: + COOP_TASKRUN flag
  struct io_uring ring;
  int maybe_more;  // the last recvmmsg filled its batch: read again
  uint64_t syscalls;
} Rx;

enum { kBatch = 16 };

static void rx_init(Rx* r, int fd, int gated) {
  memset(r, 0, sizeof *r);
  r->fd = fd;
  r->gated = gated;
  r->maybe_more = 1;
  if (!gated) return;
  const unsigned flags = gated == 2 ? IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG : 0;
  if (io_uring_queue_init(64, &r->ring, flags) != 0) {
    perror("io_uring_queue_init");
    exit(1);
  }
  struct io_uring_sqe* sqe = io_uring_get_sqe(&r->ring);
  io_uring_prep_poll_multishot(sqe, fd, POLLIN);
  io_uring_submit(&r->ring);
}

// One pass: returns the datagrams read into buf (the first one's bytes).
static int rx_pass(Rx* r, char* buf, size_t cap) {
  if (r->gated) {
    struct io_uring_cqe* cqes[16];
    unsigned n = io_uring_peek_batch_cqe(&r->ring, cqes, 16);
    for (unsigned i = 0; i < n; ++i) {
      if (!(cqes[i]->flags & IORING_CQE_F_MORE)) {  // re-arm
        struct io_uring_sqe* sqe = io_uring_get_sqe(&r->ring);
        io_uring_prep_poll_multishot(sqe, r->fd, POLLIN);
        io_uring_submit(&r->ring);
      }
    }
    if (n) io_uring_cq_advance(&r->ring, n);
    // COOP_TASKRUN: the wake-up left task work (no IPI) and raised
    // IORING_SQ_TASKRUN; the next system call's return runs it.
    const int woken = r->gated == 2 &&
                      (IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN);
    if (!n && !woken && !r->maybe_more) return 0;
  }
  struct mmsghdr m[kBatch];
  struct iovec iov[kBatch];
  static char bufs[kBatch][64];
  for (int i = 0; i < kBatch; ++i) {
    iov[i].iov_base = i == 0 ? buf : bufs[i];
    iov[i].iov_len = i == 0 ? cap : 64;
    memset(&m[i], 0, sizeof m[i]);
    m[i].msg_hdr.msg_iov = &iov[i];
    m[i].msg_hdr.msg_iovlen = 1;
  }
  ++r->syscalls;
  int got = recvmmsg(r->fd, m, kBatch, MSG_DONTWAIT, NULL);
  r->maybe_more = got == kBatch;
  return got > 0 ? got : 0;
}

static int udp_socket(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr*)&a, sizeof a);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr*)&a, &l);
  *port = ntohs(a.sin_port);
  return fd;
}

static void connect_to(int fd, uint16_t port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  connect(fd, (struct sockaddr*)&a, sizeof a);
}

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}

static int cmp(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 100000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 3;
  for (int round = 0; round < rounds; ++round) {
    for (int gated = 0; gated <= 2; ++gated) {
      uint16_t pa, pb;
      int a = udp_socket(&pa), b = udp_socket(&pb);
      connect_to(a, pb);
      connect_to(b, pa);
      pid_t child = fork();
      if (child == 0) {  // echo server
        pin(1);
        Rx r;
        rx_init(&r, b, gated);
        char buf[64];
        for (;;) {
          int n = rx_pass(&r, buf, sizeof buf);
          for (int i = 0; i < n; ++i) {
            if (buf[0] == 'q') _exit(0);
            send(b, buf, 8, 0);
          }
        }
      }
      pin(0);
      Rx r;
      rx_init(&r, a, gated);
      char buf[64];
      // Idle passes: nothing in flight.
      const int idle = 200000;
      uint64_t t0 = now_ns();
      for (int i = 0; i < idle; ++i) rx_pass(&r, buf, sizeof buf);
      const double idle_ns = (double)(now_ns() - t0) / idle;
      uint64_t* lat = malloc(sizeof(uint64_t) * (size_t)iters);
      for (int i = -1000; i < iters; ++i) {
        memset(buf, 'p', 8);
        uint64_t s = now_ns();
        send(a, buf, 8, 0);
        while (rx_pass(&r, buf, sizeof buf) == 0) {
        }
        if (i >= 0) lat[i] = now_ns() - s;
      }
      qsort(lat, (size_t)iters, sizeof *lat, cmp);
      double mean = 0;
      for (int i = 0; i < iters; ++i) mean += (double)lat[i];
      mean /= iters;
      printf("round %d %-10s idle_pass_ns %7.1f  rtt_us median %6.2f mean %6.2f p99 %7.2f  "
             "recvmmsg_per_rtt %.2f\n",
             round, gated == 2 ? "uring_coop" : gated ? "uring" : "recvmmsg", idle_ns, lat[iters / 2] / 1e3, mean / 1e3,
             lat[(size_t)iters * 99 / 100] / 1e3,
             (double)r.syscalls / (iters + 1000 + idle));
      fflush(stdout);
      send(a, "q", 1, 0);
      waitpid(child, NULL, 0);
      free(lat);
      if (gated) io_uring_queue_exit(&r.ring);
      close(a);
      close(b);
    }
  }
  return 0;
}
