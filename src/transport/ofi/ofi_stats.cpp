// OfiTransport's counters, printed at finalize (TSU_STATS).
#include <cstdio>

#include "transport/ofi/ofi_transport.hpp"

namespace tsu::transport::ofi {

void OfiTransport::print_stats(std::FILE* f) const noexcept {
  std::fprintf(f,
               "tsunagi[%u] ofi stats: provider=%s sent=%llu injected=%llu received=%llu "
               "dropped=%llu eagain=%llu errors=%llu held_early=%llu rma_ops=%llu "
               "rma_fallbacks=%llu rma_injected=%llu posted_with_more=%llu batch_flushes=%llu "
               "av_inserts=%llu staged_rma_refused=%llu pings=%llu pongs=%llu silent_lost=%llu "
               "watched=%u watch_ends=%llu bundled=%llu nic_atomics=%llu nic_atomics_refused=%llu "
               "served_unseen=%llu lost_notices=%llu lost_by_notice=%llu bulk_sends=%llu "
               "bulk_recvs=%llu bulk_cancels=%llu held_refusals=%llu\n",
               rank_, provider_name(), static_cast<unsigned long long>(sent_.load()),
               static_cast<unsigned long long>(injected_.load()),
               static_cast<unsigned long long>(received_.load()),
               static_cast<unsigned long long>(dropped_.load()),
               static_cast<unsigned long long>(eagain_.load()),
               static_cast<unsigned long long>(errors_.load()),
               static_cast<unsigned long long>(held_count_.load()),
               static_cast<unsigned long long>(rma_ops_.load()),
               static_cast<unsigned long long>(rma_fallbacks_.load()),
               static_cast<unsigned long long>(rma_injected_.load()),
               static_cast<unsigned long long>(posted_more_.load()),
               static_cast<unsigned long long>(flushes_.load()),
               static_cast<unsigned long long>(av_inserts_.load()),
               static_cast<unsigned long long>(staged_refused_.load()),
               static_cast<unsigned long long>(pings_.load()),
               static_cast<unsigned long long>(pongs_.load()),
               static_cast<unsigned long long>(silent_lost_.load()),
               watched_now_.load(), static_cast<unsigned long long>(watch_ends_.load()),
               static_cast<unsigned long long>(bundled_.load()),
               static_cast<unsigned long long>(atomics_.load()),
               static_cast<unsigned long long>(atomic_refused_.load()),
               static_cast<unsigned long long>(served_unseen_.load()),
               static_cast<unsigned long long>(lost_notices_.load()),
               static_cast<unsigned long long>(lost_by_notice_.load()),
               static_cast<unsigned long long>(bulk_sends_.load()),
               static_cast<unsigned long long>(bulk_recvs_.load()),
               static_cast<unsigned long long>(bulk_cancels_.load()),
               static_cast<unsigned long long>(doubtful_held_.load()));
}

}  // namespace tsu::transport::ofi
