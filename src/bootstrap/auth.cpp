#include "bootstrap/auth.hpp"

#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tsu::bootstrap::auth {

bool init() noexcept { return sodium_init() >= 0; }

bool parse_hex(std::string_view text, Secret& out) noexcept {
  if (text.size() != 2 * kSecretBytes) return false;
  Secret s{};
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    s[i / 2] = static_cast<uint8_t>((s[i / 2] << 4) | d);
  }
  out = s;
  return true;
}

std::string to_hex(const Secret& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

namespace {

// Reads one line (at most 80 bytes) byte by byte, so nothing after it is
// consumed from a shared descriptor such as stdin.
bool read_line(int fd, std::string& line, std::string& error) {
  line.clear();
  for (;;) {
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read the job secret from descriptor " + std::to_string(fd) + ": " + std::strerror(errno);
      return false;
    }
    if (n == 0 || c == '\n') return true;
    if (line.size() >= 80) {
      error = "the job secret on descriptor " + std::to_string(fd) + " is not one line of 32 hex digits";
      return false;
    }
    line.push_back(c);
  }
}

std::mutex g_mu;
bool g_loaded = false;
std::optional<Secret> g_secret;
std::string g_error;

void load() {
  if (const char* fd_text = std::getenv("TSU_JOB_SECRET_FD"); fd_text != nullptr && *fd_text != '\0') {
    char* end = nullptr;
    errno = 0;
    const long fd = std::strtol(fd_text, &end, 10);
    if (*end != '\0' || errno != 0 || fd < 0 || fd > 65535) {
      g_error = "TSU_JOB_SECRET_FD='" + std::string(fd_text) + "' is not a descriptor number";
      return;
    }
    std::string line;
    if (!read_line(static_cast<int>(fd), line, g_error)) return;
    if (fd != STDIN_FILENO) ::close(static_cast<int>(fd));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Secret s;
    if (!parse_hex(line, s)) {
      g_error = "the job secret on descriptor " + std::to_string(fd) +
                (line.empty() ? " is missing (was it consumed, or stdin redirected?)" : " is not 32 hex digits");
      sodium_memzero(line.data(), line.size());
      return;
    }
    sodium_memzero(line.data(), line.size());
    g_secret = s;
    ::unsetenv("TSU_JOB_SECRET_FD");  // read once: a child of this rank must not try again
    return;
  }
  if (const char* hex = std::getenv("TSU_JOB_SECRET"); hex != nullptr) {
    Secret s;
    if (!parse_hex(hex, s)) {
      g_error = "TSU_JOB_SECRET must be 32 hexadecimal digits";
      return;
    }
    g_secret = s;
  }
}

}  // namespace

std::optional<Secret> job_secret(std::string& error) {
  std::lock_guard lock(g_mu);
  if (!g_loaded) {
    load();
    g_loaded = true;
  }
  if (!g_secret) error = g_error;
  return g_secret;
}

bool random_nonce(Nonce& out) noexcept {
  if (!init()) return false;  // libsodium refuses only without a randomness source
  randombytes_buf(out.data(), out.size());
  return true;
}

std::array<uint8_t, 32> derive_key(const Secret& secret, std::string_view purpose) noexcept {
  init();  // picks libsodium's implementations; the hash works either way
  std::array<uint8_t, 32> k{};
  crypto_generichash(k.data(), k.size(), reinterpret_cast<const unsigned char*>(purpose.data()), purpose.size(),
                     secret.data(), secret.size());
  return k;
}

Proof proof(const Secret& secret, Role role, const Nonce& client_nonce, const Nonce& server_nonce, uint32_t rank,
            uint32_t size, std::string_view job_id) noexcept {
  const auto key = derive_key(secret, "tsu-boot");
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key.data(), key.size());
  unsigned char fixed[1 + 4 + 4 + 4];
  fixed[0] = static_cast<unsigned char>(role);
  for (int i = 0; i < 4; ++i) {
    fixed[1 + i] = static_cast<unsigned char>(rank >> (8 * i));
    fixed[5 + i] = static_cast<unsigned char>(size >> (8 * i));
    fixed[9 + i] = static_cast<unsigned char>(job_id.size() >> (8 * i));
  }
  crypto_auth_hmacsha256_update(&st, fixed, sizeof fixed);
  crypto_auth_hmacsha256_update(&st, client_nonce.data(), client_nonce.size());
  crypto_auth_hmacsha256_update(&st, server_nonce.data(), server_nonce.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(job_id.data()), job_id.size());
  Proof out{};
  crypto_auth_hmacsha256_final(&st, out.data());
  sodium_memzero(&st, sizeof st);
  return out;
}

bool proofs_equal(const Proof& a, const Proof& b) noexcept { return crypto_verify_32(a.data(), b.data()) == 0; }

}  // namespace tsu::bootstrap::auth
