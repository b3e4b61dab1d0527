// Completion records for requests the executor has started.  The table is
// owned by whoever holds the engine's consumer role (the progress thread or a
// tsu_progress caller), so it needs no lock: a record is taken from a free
// index stack when a command starts, marked finished by the transport (at
// once for memory transports, on acknowledgement for network ones) and
// released by the completer after the callback returns.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_context.hpp"
#include "core/trace.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct CompletionRecord {
  tsu_cb_t cb{};
  ThreadContext* issuer = nullptr;
  tsu_status_t status = TSU_OK;
};

class CompletionTable {
 public:
  explicit CompletionTable(uint32_t capacity) : records_(capacity) {
    free_.reserve(capacity);
    for (uint32_t i = capacity; i-- > 0;) free_.push_back(i);
    finished_.reserve(capacity);
    running_.reserve(capacity);
  }

  uint32_t capacity() const noexcept { return static_cast<uint32_t>(records_.size()); }
  uint32_t free_count() const noexcept { return static_cast<uint32_t>(free_.size()); }
  uint32_t in_use() const noexcept { return capacity() - free_count(); }

  // Returns a record id, or UINT32_MAX when all are in use.
  uint32_t acquire(const tsu_cb_t& cb, ThreadContext* issuer) noexcept {
    if (free_.empty()) return UINT32_MAX;
    const uint32_t id = free_.back();
    free_.pop_back();
    // Field by field: building the record as a temporary and copying it
    // made the compiler reload the temporary with wider loads than its
    // stores (a store-forwarding stall on every request).
    CompletionRecord& r = records_[id];
    r.cb = cb;
    r.issuer = issuer;
    r.status = TSU_OK;
    return id;
  }

  void finish(uint32_t id, tsu_status_t status) noexcept {
    records_[id].status = status;
    finished_.push_back(id);
    TSU_TRACE_ASYNC(trace::kRequestEnd, id, static_cast<int64_t>(status), 0, 0);
  }

  // Completer: runs the callback of every finished record, then releases it.
  // Returns how many ran.
  template <typename OnComplete>
  std::size_t run_finished(OnComplete&& on_complete) {
    std::size_t n = 0;
    // Callbacks may start new commands, which may finish more records: iterate
    // a swapped-out snapshot so the list is not grown while iterated.  Both
    // vectors keep their capacity, so this never allocates.
    while (!finished_.empty()) {
      running_.swap(finished_);
      for (uint32_t id : running_) {
        CompletionRecord rec = records_[id];
        free_.push_back(id);
        on_complete(rec);
        ++n;
      }
      running_.clear();
    }
    return n;
  }

 private:
  std::vector<CompletionRecord> records_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> finished_;
  std::vector<uint32_t> running_;
};

}  // namespace tsu::core
