// Ed25519 keys for signing ring snapshots (libsodium): a key pair made by
// `chash keygen`, written as BASE (the secret, mode 0600) and BASE.pub; a
// loader trusts the public keys it is given (SnapshotLoadOptions). What a
// key may sign and who holds it: SECURITY.md.
#ifndef CHASH_SNAPSHOT_KEYS_H_
#define CHASH_SNAPSHOT_KEYS_H_

#include <array>
#include <cstdint>
#include <string>

#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)

namespace chash {

struct PublicKey {
  std::array<uint8_t, 32> bytes{};
  // First 8 bytes of SHA-256("chash-key-id" || bytes): names the key in a
  // snapshot's trailer and in `chash inspect`.
  std::array<uint8_t, 8> KeyId() const noexcept;
  // KeyId() as 16 hex digits, for people and key files. May throw
  // std::bad_alloc, and nothing else: 16 characters are one more than
  // std::string holds inline. A display helper like Status::ToString; the
  // key id itself is KeyId(), which allocates nothing.
  std::string KeyIdHex() const;
  friend bool operator==(const PublicKey&, const PublicKey&) = default;
};

// libsodium's 64-byte secret key (the 32-byte seed, then the public key).
struct SecretKey {
  std::array<uint8_t, 64> bytes{};
  PublicKey public_key() const noexcept;
};

// Allocation: every call below that returns a Status or a Result reports
// kOutOfMemory when memory runs out, and then leaves its arguments and files
// as they were (a file being written is removed; a destination is replaced
// only by a complete file). Only the text helpers KeyIdHex and
// SnapshotReloader::last_error may throw std::bad_alloc (see each).

// A fresh key pair from the OS's random source (libsodium).
Result<SecretKey> GenerateSecretKey();

// Key files are one line of text: "chash-ed25519-public KEYID HEX64\n" and
// "chash-ed25519-secret KEYID HEX128\n". WriteKeyFiles writes BASE (mode
// 0600, refused if it exists) and BASE.pub. On any error neither file is
// left behind (a BASE.pub it made is removed), so the call can be retried.
Status WriteKeyFiles(const SecretKey& key, const std::string& base);
Result<PublicKey> ReadPublicKeyFile(const std::string& path);
Result<SecretKey> ReadSecretKeyFile(const std::string& path);

}  // namespace chash

#pragma GCC visibility pop

#endif  // CHASH_SNAPSHOT_KEYS_H_
