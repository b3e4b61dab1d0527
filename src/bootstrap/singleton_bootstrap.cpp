// Bootstrap of a job with one rank (no launcher): the key-value store is a
// local map and a barrier has nobody to wait for.
#include "bootstrap/local/local_bootstrap.hpp"

namespace tsu::bootstrap {

tsu_status_t SingletonBootstrap::put(std::string_view key, std::span<const std::byte> value) {
  std::lock_guard lock(mu_);
  kv_.insert_or_assign(std::string(key), std::vector<std::byte>(value.begin(), value.end()));
  return TSU_OK;
}

tsu_status_t SingletonBootstrap::get(std::string_view key, std::vector<std::byte>& value) {
  std::lock_guard lock(mu_);
  const auto it = kv_.find(key);
  if (it == kv_.end()) {
    last_error_ = "bootstrap get: key '" + std::string(key) +
                  "' was never published (singleton job: no other rank can publish it)";
    return TSU_ERR_BOOTSTRAP;
  }
  value = it->second;
  return TSU_OK;
}

}  // namespace tsu::bootstrap
