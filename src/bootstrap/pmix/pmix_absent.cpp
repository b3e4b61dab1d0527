// The PMIx bootstrap in a build without libpmix-dev: a job started by a PMIx
// launcher is refused with a clear reason instead of running as singletons.
#include <cstdlib>

#include "bootstrap/pmix/pmix_bootstrap.hpp"

namespace tsu::bootstrap {

bool PmixBootstrap::available() { return false; }

std::unique_ptr<PmixBootstrap> PmixBootstrap::connect(tsu_status_t& status, std::string& error) {
  status = TSU_ERR_UNSUPPORTED;
  error = "started by a PMIx launcher, but this libtsunagi was built without PMIx "
          "(install libpmix-dev and rebuild), or start the job with tsurun";
  return nullptr;
}

PmixBootstrap::~PmixBootstrap() = default;
tsu_status_t PmixBootstrap::put(std::string_view, std::span<const std::byte>) { return TSU_ERR_UNSUPPORTED; }
tsu_status_t PmixBootstrap::get(std::string_view, std::vector<std::byte>&) { return TSU_ERR_UNSUPPORTED; }
tsu_status_t PmixBootstrap::barrier() { return TSU_ERR_UNSUPPORTED; }
tsu_status_t PmixBootstrap::finalize() { return TSU_ERR_UNSUPPORTED; }
std::optional<auth::Secret> PmixBootstrap::job_secret(std::string&) { return std::nullopt; }
bool PmixBootstrap::node_layout(std::vector<uint32_t>&) { return false; }

}  // namespace tsu::bootstrap
