// Bootstrap through PMIx (Debian libpmix-dev): the client side of the PMIx
// server that srun --mpi=pmix and Open MPI's mpirun run for every job.
//
//   rank, size      PMIx_Init's process name, PMIX_JOB_SIZE
//   placement       every rank's PMIX_NODEID (node_layout)
//   put             PMIx_Put (global scope) + PMIx_Commit: published once
//   get             PMIx_Get of the owning rank's key (bootstrap.hpp: keys
//                   end in ".<rank>"), fetched when first asked for (the
//                   server's direct modex), retried until the owner commits
//   barrier         PMIx_Fence over the namespace without data collection
//   finalize        PMIx_Finalize
//   fatal errors    a bootstrap destroyed without a clean finalize (tsu_init
//                   failed after it connected) calls PMIx_Abort, so the
//                   launcher ends the job instead of leaving peers waiting.
//
// All methods are thread-safe (one mutex), never throw, and keep the reason
// for the last failure (last_error_: the errors of connect and job_secret
// and the abort message quote it).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace tsu::bootstrap {

class PmixBootstrap final : public Bootstrap {
 public:
  // Whether the environment names a PMIx server (PMIX_NAMESPACE and
  // PMIX_RANK, as srun --mpi=pmix and mpirun set them).
  static bool launched_by_pmix();
  // Whether this build has the PMIx client (libpmix-dev at configure time).
  static bool available();
  // Connects to the launcher's PMIx server.  On failure returns nullptr with
  // TSU_ERR_BOOTSTRAP and the reason in `error`.
  static std::unique_ptr<PmixBootstrap> connect(tsu_status_t& status, std::string& error);
  ~PmixBootstrap() override;
  PmixBootstrap(const PmixBootstrap&) = delete;
  PmixBootstrap& operator=(const PmixBootstrap&) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  tsu_status_t put(std::string_view key, std::span<const std::byte> value) override;
  tsu_status_t get(std::string_view key, std::vector<std::byte>& value) override;
  tsu_status_t barrier() override;
  tsu_status_t finalize() override;
  std::optional<auth::Secret> job_secret(std::string& error) override;
  // TSU_PLACEMENT if set; else, unless TSU_NODE_ID renames this rank's node,
  // PMIX_NODEID of every rank (job data the server handed out at init).
  bool node_layout(std::vector<uint32_t>& node_of) override;
  Traffic traffic() const override {
    std::lock_guard lock(mu_);
    return traffic_;
  }

 private:
  PmixBootstrap() = default;
  tsu_status_t fail(std::string reason);
  // PMIx_Get of `key` published by `owner`, waiting until it appears.
  // Caller holds mu_.
  tsu_status_t get_locked(uint32_t owner, const std::string& key, std::vector<std::byte>& value);

  mutable std::mutex mu_;
  Traffic traffic_;  // PMIx calls that may reach the server
  uint32_t rank_ = 0;
  uint32_t size_ = 0;
  std::string nspace_;
  bool initialized_ = false;  // PMIx_Init succeeded
  bool finalized_ = false;    // finalize() ran: no abort at destruction
  std::optional<auth::Secret> secret_;
  std::string last_error_;
};

}  // namespace tsu::bootstrap
