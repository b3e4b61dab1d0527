// Copies into a stage with non-temporal stores: the writer's lines go to
// memory instead of into its cache, so the reader on another core takes them
// from memory rather than from the writer's cache, and the writer need not
// first take back ownership of lines the reader pulled last time (no read
// for ownership).  Each stage line then crosses between the cores' caches
// once per use instead of twice, which matters where a line transfer is slow
// (the far vCPU placement: docs/benchmarks-coll.md, docs/messaging.md).
//
// Non-temporal stores are weakly ordered: stream_fence() (sfence) must run
// before the release store that tells readers the data is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define TSU_HAVE_STREAM_STORES 1
#else
#define TSU_HAVE_STREAM_STORES 0
#endif

namespace tsu::coll {

// Copies n bytes; the 16-byte-aligned body of dst with streaming stores, the
// ragged ends with memcpy.  Call stream_fence() before publishing.
inline void stream_copy(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
#if TSU_HAVE_STREAM_STORES
  if (n < 256) {
    std::memcpy(dst, src, n);
    return;
  }
  const std::size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  auto* d = reinterpret_cast<__m128i*>(dst);
  const std::size_t blocks = n / 64;
  for (std::size_t i = 0; i < blocks; ++i, src += 64, d += 4) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(d, src, n % 64);
#else
  std::memcpy(dst, src, n);
#endif
}

// Orders the streaming stores before the stores after it (the release flag).
inline void stream_fence() noexcept {
#if TSU_HAVE_STREAM_STORES
  _mm_sfence();
#endif
}

}  // namespace tsu::coll
