// Client of the launcher's PMIx server (pmix_bootstrap.hpp).
#include "bootstrap/pmix/pmix_bootstrap.hpp"

#include <pmix.h>
#include <sodium.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace tsu::bootstrap {

namespace {

// How long a get waits for its owner to publish.  Ranks of one job start
// within seconds of each other; a launcher's own time limit ends a stuck job.
constexpr auto kGetPatience = std::chrono::seconds(120);

// The key under which rank 0 publishes the job secret it drew.
constexpr const char* kSecretKey = "tsu.secret.0";

std::string pmix_text(const char* what, pmix_status_t rc) {
  return std::string(what) + ": " + PMIx_Error_string(rc);
}

pmix_proc_t proc_of(const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t p;
  PMIX_PROC_CONSTRUCT(&p);
  PMIX_LOAD_PROCID(&p, nspace.c_str(), rank);
  return p;
}

// A numeric job-level or process-level value (PMIx returns them in several
// widths depending on the key and the server).
bool get_number(const pmix_proc_t& who, const char* key, uint32_t& out) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(&who, key, nullptr, 0, &v) != PMIX_SUCCESS || v == nullptr) return false;
  bool ok = true;
  switch (v->type) {
    case PMIX_UINT32: out = v->data.uint32; break;
    case PMIX_UINT16: out = v->data.uint16; break;
    case PMIX_PROC_RANK: out = v->data.rank; break;
    case PMIX_UINT64: out = static_cast<uint32_t>(v->data.uint64); break;
    case PMIX_INT: ok = v->data.integer >= 0; out = static_cast<uint32_t>(v->data.integer); break;
    case PMIX_SIZE: out = static_cast<uint32_t>(v->data.size); break;
    default: ok = false;
  }
  PMIX_VALUE_RELEASE(v);
  return ok;
}

}  // namespace

bool PmixBootstrap::available() { return true; }

std::unique_ptr<PmixBootstrap> PmixBootstrap::connect(tsu_status_t& status, std::string& error) {
  status = TSU_ERR_BOOTSTRAP;
  std::unique_ptr<PmixBootstrap> b(new PmixBootstrap());
  pmix_proc_t me;
  PMIX_PROC_CONSTRUCT(&me);
  const pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    error = pmix_text("PMIx_Init (is a PMIx launcher running this job? srun --mpi=pmix, mpirun)", rc);
    return nullptr;
  }
  b->initialized_ = true;
  b->nspace_ = me.nspace;
  b->rank_ = me.rank;
  const pmix_proc_t job = proc_of(b->nspace_, PMIX_RANK_WILDCARD);
  if (!get_number(job, PMIX_JOB_SIZE, b->size_) || b->size_ == 0 || b->rank_ >= b->size_) {
    error = "PMIx: the launcher did not give a job size (PMIX_JOB_SIZE) that holds rank " +
            std::to_string(b->rank_);
    b->finalized_ = true;  // nothing to abort: no peer waits for us yet
    PMIx_Finalize(nullptr, 0);
    b->initialized_ = false;
    return nullptr;
  }
  // The job secret: one given by the user (TSU_JOB_SECRET, exported by the
  // launcher) wins; otherwise rank 0 draws one and publishes it through
  // PMIx, which serves it only to processes of this job (docs/launchers.md).
  std::string given_error;
  b->secret_ = auth::job_secret(given_error);
  if (!b->secret_ && !given_error.empty()) {
    error = given_error;
    status = TSU_ERR_CONFIG;
    return nullptr;  // destructor aborts: the other ranks would wait for us
  }
  if (!b->secret_ && b->rank_ == 0) {
    if (!auth::init()) {
      error = "PMIx bootstrap: libsodium cannot be initialised (no randomness source?)";
      return nullptr;
    }
    auth::Secret s;
    randombytes_buf(s.data(), s.size());
    b->secret_ = s;
    const tsu_status_t st = b->put(kSecretKey, std::as_bytes(std::span(s)));
    if (st != TSU_OK) {
      error = b->last_error_;
      return nullptr;
    }
  }
  status = TSU_OK;
  return b;
}

PmixBootstrap::~PmixBootstrap() {
  if (!initialized_) return;
  if (!finalized_) {
    // tsu_init failed after this rank joined, or the job is torn down
    // without tsu_finalize: peers would wait for us in a fence or a get.
    // Ask the launcher to end the job (as MPI_Abort does).
    const std::string why = "tsunagi: rank " + std::to_string(rank_) +
                            " cannot continue (its tsu_init or tsu_finalize failed" +
                            (last_error_.empty() ? std::string() : ": " + last_error_) +
                            "); aborting the job";
    std::fprintf(stderr, "%s\n", why.c_str());
    PMIx_Abort(1, why.c_str(), nullptr, 0);
  }
  PMIx_Finalize(nullptr, 0);
}

tsu_status_t PmixBootstrap::fail(std::string reason) {
  last_error_ = std::move(reason);
  return TSU_ERR_BOOTSTRAP;
}

tsu_status_t PmixBootstrap::put(std::string_view key, std::span<const std::byte> value) {
  std::lock_guard lock(mu_);
  if (finalized_) return fail("bootstrap already finalized");
  if (key.empty() || key.size() > PMIX_MAX_KEYLEN) return fail("bootstrap put: key empty or too long");
  const std::string k(key);
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  // PMIx_Put copies the value; the cast only satisfies its non-const field.
  v.data.bo.bytes = const_cast<char*>(reinterpret_cast<const char*>(value.data()));
  v.data.bo.size = value.size();
  traffic_.requests += 2;  // put + commit
  traffic_.bytes_out += k.size() + value.size();
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k.c_str(), &v);
  if (rc != PMIX_SUCCESS) return fail(pmix_text(("PMIx_Put of '" + k + "'").c_str(), rc));
  // Commit each put: a peer may look it up at once (no data-collecting fence).
  rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) return fail(pmix_text("PMIx_Commit", rc));
  return TSU_OK;
}

tsu_status_t PmixBootstrap::get_locked(uint32_t owner, const std::string& key,
                                       std::vector<std::byte>& value) {
  const pmix_proc_t who = proc_of(nspace_, owner);
  const auto deadline = std::chrono::steady_clock::now() + kGetPatience;
  auto pause = std::chrono::microseconds(200);
  pmix_info_t refresh;
  PMIX_INFO_CONSTRUCT(&refresh);
  bool yes = true;
  PMIX_INFO_LOAD(&refresh, PMIX_GET_REFRESH_CACHE, &yes, PMIX_BOOL);
  for (bool first = true;; first = false) {
    pmix_value_t* v = nullptr;
    // After a miss, ask the server again rather than the client's cache.
    const pmix_status_t rc = PMIx_Get(&who, key.c_str(), first ? nullptr : &refresh, first ? 0 : 1, &v);
    ++traffic_.requests;
    traffic_.bytes_out += key.size();
    if (rc == PMIX_SUCCESS && v != nullptr) {
      if (v->type == PMIX_BYTE_OBJECT) traffic_.bytes_in += v->data.bo.size;
      const bool ok = v->type == PMIX_BYTE_OBJECT;
      if (ok) {
        const auto* p = reinterpret_cast<const std::byte*>(v->data.bo.bytes);
        value.assign(p, p + v->data.bo.size);
      }
      PMIX_VALUE_RELEASE(v);
      PMIX_INFO_DESTRUCT(&refresh);
      if (!ok) return fail("PMIx_Get of '" + key + "': not a byte object (published by another program?)");
      return TSU_OK;
    }
    if (v != nullptr) PMIX_VALUE_RELEASE(v);
    // Not there yet (the owner has not committed it): wait, bounded.
    const bool missing = rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_PROC_ENTRY_NOT_FOUND;
    if (!missing || std::chrono::steady_clock::now() >= deadline) {
      PMIX_INFO_DESTRUCT(&refresh);
      return fail(pmix_text(("PMIx_Get of '" + key + "' from rank " + std::to_string(owner) +
                             (missing ? " (not published within 120 s)" : ""))
                                .c_str(),
                            rc));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(50'000));
  }
}

tsu_status_t PmixBootstrap::get(std::string_view key, std::vector<std::byte>& value) {
  std::lock_guard lock(mu_);
  if (finalized_) return fail("bootstrap already finalized");
  const auto owner = key_owner(key);
  if (!owner || *owner >= size_ || key.size() > PMIX_MAX_KEYLEN)
    return fail("bootstrap get: key '" + std::string(key) + "' does not end in .<rank> of this job");
  std::vector<std::byte> v;
  const tsu_status_t st = get_locked(*owner, std::string(key), v);
  if (st == TSU_OK) value = std::move(v);  // outputs only on success
  return st;
}

tsu_status_t PmixBootstrap::barrier() {
  std::lock_guard lock(mu_);
  if (finalized_) return fail("bootstrap already finalized");
  // All processes of the namespace; no PMIX_COLLECT_DATA: a pure barrier.
  const pmix_proc_t all = proc_of(nspace_, PMIX_RANK_WILDCARD);
  ++traffic_.requests;
  const pmix_status_t rc = PMIx_Fence(&all, 1, nullptr, 0);
  if (rc != PMIX_SUCCESS) return fail(pmix_text("PMIx_Fence", rc));
  return TSU_OK;
}

tsu_status_t PmixBootstrap::finalize() {
  std::lock_guard lock(mu_);
  if (finalized_) return fail("bootstrap already finalized");
  print_traffic_if_asked(rank_, traffic_);
  finalized_ = true;
  initialized_ = false;
  const pmix_status_t rc = PMIx_Finalize(nullptr, 0);
  if (rc != PMIX_SUCCESS) return fail(pmix_text("PMIx_Finalize", rc));
  return TSU_OK;
}

bool PmixBootstrap::node_layout(std::vector<uint32_t>& node_of) {
  if (placement_from_environment(size_, node_of)) return true;
  const char* renamed = std::getenv("TSU_NODE_ID");
  if (renamed != nullptr && *renamed != '\0') return false;  // only an exchange tells the others
  std::lock_guard lock(mu_);
  std::vector<uint32_t> ids(size_);
  for (uint32_t r = 0; r < size_; ++r)
    if (!get_number(proc_of(nspace_, r), PMIX_NODEID, ids[r])) return false;
  // Dense, in order of first appearance (PMIx node ids may have gaps).
  std::vector<std::pair<uint32_t, uint32_t>> seen;  // (pmix id, dense index)
  node_of.assign(size_, 0);
  for (uint32_t r = 0; r < size_; ++r) {
    uint32_t dense = static_cast<uint32_t>(seen.size());
    for (const auto& [id, d] : seen)
      if (id == ids[r]) dense = d;
    if (dense == seen.size()) seen.emplace_back(ids[r], dense);
    node_of[r] = dense;
  }
  return true;
}

std::optional<auth::Secret> PmixBootstrap::job_secret(std::string& error) {
  std::lock_guard lock(mu_);
  if (secret_) return secret_;
  if (finalized_) {
    error = "bootstrap already finalized";
    return std::nullopt;
  }
  std::vector<std::byte> v;
  if (get_locked(0, kSecretKey, v) != TSU_OK || v.size() != auth::kSecretBytes) {
    error = "PMIx bootstrap: cannot fetch the job secret from rank 0: " + last_error_;
    return std::nullopt;
  }
  auth::Secret s;
  std::memcpy(s.data(), v.data(), s.size());
  sodium_memzero(v.data(), v.size());
  secret_ = s;
  return secret_;
}

}  // namespace tsu::bootstrap
