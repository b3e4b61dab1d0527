/* fi-rma-pingpong: the limit for tsunagi's RMA over libfabric.  A minimal
 * raw-libfabric program on the same provider and endpoint type tsunagi uses
 * (FI_EP_RDM, manual progress): 8-byte fi_write (FI_DELIVERY_COMPLETE, as
 * tsunagi's put), fi_read and fi_fetch_atomic (UINT64 SUM) latency, one
 * operation in flight, measured from issue to local completion; then
 * fi_write bandwidth, 8 B to 64 MiB (16 writes in flight).
 *
 *   fi-rma-pingpong -s [-a ADDR] [-p PORT] [-P PROVIDER] [-i IFACE]           (target)
 *   fi-rma-pingpong -c ADDR [-p PORT] [-P PROVIDER] [-i IFACE] [-n ITERS]     (origin)
 *   -w: wait for completions in fi_cq_sread (blocking on the queue's wait
 *       object, as tsunagi's progress thread sleeps) instead of spinning
 *   -L: latency only (origin): skip the bandwidth sweep (bench/guard)
 *   -T MS: measure each operation for at most MS milliseconds (origin; fewer
 *       than -n then count, the JSON line says how many: bench/guard)
 *
 * The target only polls its completion queue (rxm advances RMA and atomics
 * aimed at it only then).  The origin sends its address in a message, the
 * target answers with its buffer's key and address; at the end the origin
 * sends "done".  Output: one JSON line per operation (median, mean, p99 us).
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    int rc_ = (int)(call);                                                            \
    if (rc_) {                                                                        \
      fprintf(stderr, "fi-rma-pingpong: %s: %s\n", #call, fi_strerror(-rc_));         \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_mr *mr;
#define BIG (64u << 20)
#define REGION (BIG + 4096u)
static int blocking; /* -w */
static int latency_only; /* -L */
static double limit_us; /* -T, 0: none */
static uint64_t *buf;      /* REGION bytes: words at 0.., bandwidth area at 4096 */
static char msg[256];      /* receives */
static char outbox[256];   /* sends */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Waits for one completion (busy polling, as tsunagi's engine does). */
static void wait_cq(void) {
  struct fi_cq_entry e;
  for (;;) {
    ssize_t n = blocking ? fi_cq_sread(cq, &e, 1, NULL, 100) : fi_cq_read(cq, &e, 1);
    if (n == 1) return;
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      fi_cq_readerr(cq, &err, 0);
      fprintf(stderr, "fi-rma-pingpong: completion error: %s\n", fi_strerror(err.err));
      exit(1);
    }
    if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT) {
      fprintf(stderr, "fi-rma-pingpong: fi_cq_read: %s\n", fi_strerror((int)-n));
      exit(1);
    }
  }
}

static void post_recv(void) { CHECK(fi_recv(ep, msg, sizeof msg, NULL, FI_ADDR_UNSPEC, NULL)); }
static void send_msg(fi_addr_t to, const void *data, size_t len) {
  ssize_t rc;
  memcpy(outbox, data, len);
  while ((rc = fi_send(ep, outbox, len, NULL, to, NULL)) == -FI_EAGAIN) fi_cq_read(cq, NULL, 0);
  CHECK(rc);
  wait_cq();
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *op, double *t, int n) {
  double sum = 0;
  qsort(t, (size_t)n, sizeof *t, cmp);
  for (int i = 0; i < n; ++i) sum += t[i];
  printf("{\"bench\":\"fi_rma_latency\",\"op\":\"%s\",\"bytes\":8,\"median_us\":%.2f,\"mean_us\":%.2f,"
         "\"p99_us\":%.2f,\"count\":%d}\n",
         op, t[n / 2], sum / n, t[n * 99 / 100], n);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *server = NULL, *addr = NULL, *port = "47592", *prov = "tcp;ofi_rxm", *iface = NULL;
  int is_server = 0, iters = 5000, opt;
  while ((opt = getopt(argc, argv, "wLT:sc:a:p:P:i:n:")) != -1) {
    switch (opt) {
      case 's': is_server = 1; break;
      case 'w': blocking = 1; break;
      case 'L': latency_only = 1; break;
      case 'T': limit_us = atof(optarg) * 1e3; break;
      case 'c': server = optarg; break;
      case 'a': addr = optarg; break;
      case 'p': port = optarg; break;
      case 'P': prov = optarg; break;
      case 'i': iface = optarg; break;
      case 'n': iters = atoi(optarg); break;
      default:
        fprintf(stderr, "usage: fi-rma-pingpong -s [-a ADDR] | -c ADDR  [-p PORT] [-P PROV] [-i IFACE] [-n N] [-w] [-L] [-T MS]\n");
        return 2;
    }
  }
  if (!is_server && !server) return fprintf(stderr, "fi-rma-pingpong: -s or -c ADDR\n"), 2;
  struct fi_info *hints = fi_allocinfo(), *info = NULL;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->fabric_attr->prov_name = strdup(prov);
  if (iface) hints->domain_attr->name = strdup(iface);
  if (is_server)
    CHECK(fi_getinfo(FI_VERSION(1, 17), addr, port, FI_SOURCE, hints, &info));
  else
    CHECK(fi_getinfo(FI_VERSION(1, 17), server, port, 0, hints, &info));
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 64,
                               .wait_obj = blocking ? FI_WAIT_UNSPEC : FI_WAIT_NONE};
  CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
  struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC, .count = 4};
  CHECK(fi_av_open(domain, &av_attr, &av, NULL));
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &av->fid, 0));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));
  buf = calloc(1, REGION);
  CHECK(fi_mr_reg(domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                  0, 1, 0, &mr, NULL));
  fprintf(stderr, "fi-rma-pingpong: provider %s, domain %s\n", info->fabric_attr->prov_name,
          info->domain_attr->name);
  if (is_server) {
    /* The origin's address, then our key and buffer; then serve until "done". */
    post_recv();
    wait_cq();
    fi_addr_t peer;
    if (fi_av_insert(av, msg, 1, &peer, 0, NULL) != 1) return fprintf(stderr, "av_insert\n"), 1;
    post_recv();
    uint64_t kb[2] = {fi_mr_key(mr), (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0};
    send_msg(peer, kb, sizeof kb);
    wait_cq(); /* "done" (RMA aimed at us completes no entry here) */
  } else {
    fi_addr_t peer;
    if (fi_av_insert(av, info->dest_addr, 1, &peer, 0, NULL) != 1) return fprintf(stderr, "av_insert\n"), 1;
    char name[128];
    size_t len = sizeof name;
    CHECK(fi_getname(&ep->fid, name, &len));
    post_recv();
    send_msg(peer, name, len);
    wait_cq();
    uint64_t kb[2];
    memcpy(kb, msg, sizeof kb);
    double *t = malloc(sizeof(double) * (size_t)iters);
    uint64_t local = 7, result = 0;
    static const char *ops[] = {"put", "get", "fetch_add"};
    for (int o = 0; o < 3; ++o) {
      int done = iters;
      const double start = now_us();
      for (int i = -100; i < iters; ++i) {
        if (limit_us > 0 && i > 0 && now_us() - start > limit_us) {
          done = i;
          break;
        }
        double t0 = now_us();
        ssize_t rc;
        for (;;) {
          if (o == 0) {
            struct iovec iov = {&local, 8};
            struct fi_rma_iov riov = {kb[1] + 8, 8, kb[0]};
            struct fi_msg_rma m = {.msg_iov = &iov, .iov_count = 1, .addr = peer,
                                   .rma_iov = &riov, .rma_iov_count = 1};
            rc = fi_writemsg(ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE);
          } else if (o == 1) {
            rc = fi_read(ep, &result, 8, NULL, peer, kb[1] + 16, kb[0], NULL);
          } else {
            rc = fi_fetch_atomic(ep, &local, 1, NULL, &result, NULL, peer, kb[1] + 24, kb[0],
                                 FI_UINT64, FI_SUM, NULL);
          }
          if (rc != -FI_EAGAIN) break;
          fi_cq_read(cq, NULL, 0);
        }
        CHECK(rc);
        wait_cq();
        if (i >= 0) t[i] = now_us() - t0;
      }
      report(ops[o], t, done);
    }
    /* Bandwidth: writes of `size` from our own region's upper part. */
    char *src = (char *)buf + 4096;
    for (size_t size = 8; !latency_only && size <= BIG; size *= 8) {
      size_t total = size * 4 > 64u << 20 ? size * 4 : (size * 4096 < 64u << 20 ? size * 4096 : 64u << 20);
      int n = (int)(total / size), window = 16, inflight = 0;
      double t0 = now_us();
      for (int i = 0; i < n; ++i) {
        if (inflight == window) {
          wait_cq();
          --inflight;
        }
        uint64_t off = ((uint64_t)i * size) % (BIG - size + 1);
        ssize_t rc;
        while ((rc = fi_write(ep, src + off, size, NULL, peer, kb[1] + 4096 + off, kb[0], NULL)) == -FI_EAGAIN) {
          if (inflight) {
            wait_cq();
            --inflight;
          } else {
            fi_cq_read(cq, NULL, 0);
          }
        }
        CHECK(rc);
        ++inflight;
      }
      while (inflight--) wait_cq();
      double us = now_us() - t0;
      printf("{\"bench\":\"fi_write_bw\",\"bytes\":%zu,\"count\":%d,\"MBps\":%.1f}\n", size, n,
             (double)size * n / us);
      fflush(stdout);
    }
    send_msg(peer, "done", 4);
  }
  fi_close(&ep->fid);
  fi_close(&mr->fid);
  fi_close(&av->fid);
  fi_close(&cq->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  return 0;
}
