#include "session.hpp"

#include <strings.h>

#include <cstdlib>

#include "../common/threads.hpp"

namespace bench {

namespace {

// The same spellings tsu_init accepts; anything else is left to tsu_init to reject.
bool env_is_false(const char* value) {
  if (!value) return false;
  for (const char* f : {"0", "no", "off", "false"})
    if (!strcasecmp(value, f)) return true;
  return false;
}

}  // namespace

std::unique_ptr<TsuSession> TsuSession::start(std::string& error, bool pin_rank) {
  if (pin_rank && pin_rank_from_env() < 0) {
    error = "--pin-ranks: cannot pin this rank to a CPU";
    return nullptr;
  }
  const tsu_status_t st = tsu_init(nullptr);
  if (st != TSU_OK) {
    error = std::string("tsu_init: ") + tsu_strerror(st) + ": " + tsu_last_error();
    return nullptr;
  }
  std::unique_ptr<TsuSession> s(new TsuSession());
  tsu_rank(&s->rank_);
  tsu_size(&s->size_);
  s->mode_ = env_is_false(std::getenv("TSU_BYPASS")) ? "engine" : "bypass";
  const char* progress = std::getenv("TSU_PROGRESS");
  s->manual_progress_ = progress && !strcasecmp(progress, "manual");
  if (s->size_ == 1) {
    s->transport_ = "self";
  } else {
    uint32_t n0 = 0, n1 = 0;
    tsu_node_of(0, &n0);
    tsu_node_of(1, &n1);
    s->transport_ = n0 == n1 ? "shm" : "remote";
  }
  void* base = nullptr;
  tsu_segment_info(TSU_SEG_MAIN, &base, &s->segment_size_);
  return s;
}

TsuSession::~TsuSession() { tsu_finalize(); }

bool TsuSession::fits(int threads, std::size_t region_bytes, std::string& error) const {
  const std::size_t need = static_cast<std::size_t>(threads) * region_bytes;
  if (need <= segment_size_) return true;
  error = "the main segment holds " + std::to_string(segment_size_) + " B but " +
          std::to_string(threads) + " thread(s) need " + std::to_string(need) +
          " B: raise TSU_SEGMENT_SIZE (e.g. TSU_SEGMENT_SIZE=160M)";
  return false;
}

std::size_t region_bytes_for(std::size_t max_size) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (max_size + kPage - 1) / kPage * kPage;
  return rounded < kPage ? kPage : rounded;
}

}  // namespace bench
