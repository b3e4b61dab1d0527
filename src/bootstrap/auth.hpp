// The job secret and the bootstrap handshake's proofs (docs/tsurun.md,
// "Bootstrap protocol").  Shared by the rank-side client and tsurun's
// server; the MACs and the constant-time compares are libsodium's.
//
// The job secret is 128 random bits drawn by tsurun.  A rank gets it out of
// band: TSU_JOB_SECRET_FD=N names a descriptor (a pipe from tsurun, or the
// rank's stdin under --spawn) holding one line of 32 hex digits, read once
// and closed (stdin is left at its end).  TSU_JOB_SECRET=HEX is accepted
// for custom launchers but tsurun never sets it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tsu::bootstrap::auth {

inline constexpr std::size_t kSecretBytes = 16;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;

using Secret = std::array<uint8_t, kSecretBytes>;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Initialises libsodium (idempotent, thread-safe); false if it cannot.
bool init() noexcept;

// 32 hex digits -> 16 bytes; false on anything else.
bool parse_hex(std::string_view text, Secret& out) noexcept;
std::string to_hex(const Secret& s);

// The job secret of this process, read once from the environment (see
// above) and cached.  nullopt with `error` empty: none was given (a job of
// one needs none); nullopt with `error` set: one was given but unusable.
std::optional<Secret> job_secret(std::string& error);

// Fills `out` with random bytes (libsodium's CSPRNG); false if libsodium
// cannot be initialised.
bool random_nonce(Nonce& out) noexcept;

// Who proves: the rank to the service, or the service to the rank.  Each
// proof is HMAC-SHA-256 under a key derived from the secret (BLAKE2b,
// "tsu-boot"), over the role, both nonces, the rank, the size and the job id,
// so a proof is bound to one handshake and cannot be reflected.
enum class Role : uint8_t { kRank = 1, kService = 2 };
Proof proof(const Secret& secret, Role role, const Nonce& client_nonce, const Nonce& server_nonce,
            uint32_t rank, uint32_t size, std::string_view job_id) noexcept;
// Constant-time comparison of two proofs.
bool proofs_equal(const Proof& a, const Proof& b) noexcept;

// A 32-byte key for another purpose ("udp-payload", ...), derived from the
// secret with keyed BLAKE2b, so no two uses share a key.
std::array<uint8_t, 32> derive_key(const Secret& secret, std::string_view purpose) noexcept;

}  // namespace tsu::bootstrap::auth
