// Ed25519 key pairs for signed snapshots (libsodium) and their files.
#include <fcntl.h>
#include <sodium/crypto_sign_ed25519.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chash/snapshot.h"
#include "identity/hex.h"
#include "identity/sha256.h"
#include "util/out_of_memory.h"
#include "util/read_file.h"
#include "snapshot/format.h"

namespace chash {
namespace {

constexpr std::string_view kPublicTag = "chash-ed25519-public";
constexpr std::string_view kSecretTag = "chash-ed25519-secret";

std::string Hex(const uint8_t* bytes, size_t size) { return internal::HexOrThrow(bytes, size); }

// "TAG KEYID HEX\n" -> the HEX field after checking the tag.
Result<std::string> KeyField(const std::string& path, std::string_view tag) {
  Result<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status();
  std::string_view line = text.value();
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const size_t first = line.find(' ');
  const size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.substr(0, first) != tag) {
    return Status(StatusCode::kBadArgument,
                  path + ": not a " + std::string(tag) + " key file (expected '" +
                      std::string(tag) + " KEYID HEX')");
  }
  return std::string(line.substr(second + 1));
}

// The key in the file at `path` tagged `tag`: its HEX field as the key's
// bytes, exactly 2 digits a byte.
// (A Status and an out parameter, not a Result<Key>: each Result type
// instantiated here would add a symbol to libchash.so's exports.)
template <typename Key>
Status ReadKeyFile(const std::string& path, std::string_view tag, Key& key) {
  Result<std::string> field = KeyField(path, tag);
  if (!field.ok()) return field.status();
  if (!internal::ParseHex(field.value(), key.bytes.data(), key.bytes.size())) {
    return Status(StatusCode::kBadArgument, path + ": the key is not " +
                                                std::to_string(2 * key.bytes.size()) +
                                                " hex digits");
  }
  return Status();
}

// Creates `path` (refused if it exists) holding `text`; 0 or the errno.
// Allocates nothing; a file it created and could not fill is removed.
int WriteWholeFile(const std::string& path, const std::string& text, mode_t mode) noexcept {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  size_t done = 0;
  int error = 0;
  while (done < text.size() && error == 0) {
    const ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      error = wrote < 0 ? errno : EIO;
    } else {
      done += static_cast<size_t>(wrote);
    }
  }
  if (error == 0 && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error != 0) unlink(path.c_str());
  return error;
}

}  // namespace

std::array<uint8_t, 8> PublicKey::KeyId() const noexcept {
  internal::Sha256Hasher hasher;
  hasher.Update(internal::snapshot::kKeyIdContext.data(),
                internal::snapshot::kKeyIdContext.size());
  hasher.Update(bytes.data(), bytes.size());
  const std::array<uint8_t, 32> digest = hasher.Finish();
  std::array<uint8_t, 8> id;
  std::memcpy(id.data(), digest.data(), id.size());
  return id;
}

std::string PublicKey::KeyIdHex() const {
  const std::array<uint8_t, 8> id = KeyId();
  return Hex(id.data(), id.size());
}

PublicKey SecretKey::public_key() const noexcept {
  PublicKey key;
  std::memcpy(key.bytes.data(), bytes.data() + 32, 32);  // libsodium: seed || public
  return key;
}

Result<SecretKey> GenerateSecretKey() {
  return internal::CatchOutOfMemory("generating a key", "Ed25519", []() -> Result<SecretKey> {
    if (!internal::EnsureSodium()) {
      return Status(StatusCode::kIoError, "libsodium cannot initialize (no random source?)");
    }
    SecretKey secret;
    PublicKey pub;
    if (crypto_sign_ed25519_keypair(pub.bytes.data(), secret.bytes.data()) != 0) {
      return Status(StatusCode::kIoError, "Ed25519 key generation failed");
    }
    return secret;
  });
}

Status WriteKeyFiles(const SecretKey& key, const std::string& base) {
  return internal::CatchOutOfMemory("writing key files", base, [&]() -> Status {
    // Everything that allocates comes first: a failure then leaves no file.
    const PublicKey pub = key.public_key();
    const std::string id = pub.KeyIdHex();
    const std::string secret_text = std::string(kSecretTag) + " " + id + " " +
                                    Hex(key.bytes.data(), key.bytes.size()) + "\n";
    const std::string public_text = std::string(kPublicTag) + " " + id + " " +
                                    Hex(pub.bytes.data(), pub.bytes.size()) + "\n";
    const std::string public_path = base + ".pub";
    // The public key first: a secret key is never left without it. If the
    // secret cannot be written, the public key is removed again, so a retry
    // finds neither file.
    if (const int error = WriteWholeFile(public_path, public_text, 0644); error != 0) {
      return Status(StatusCode::kIoError, public_path + ": " + std::strerror(error));
    }
    if (const int error = WriteWholeFile(base, secret_text, 0600); error != 0) {
      unlink(public_path.c_str());
      return Status(StatusCode::kIoError, base + ": " + std::strerror(error));
    }
    return Status();
  });
}

Result<PublicKey> ReadPublicKeyFile(const std::string& path) {
  return internal::CatchOutOfMemory("reading a public key", path, [&]() -> Result<PublicKey> {
    PublicKey key;
    if (Status read = ReadKeyFile(path, kPublicTag, key); !read.ok()) return read;
    return key;
  });
}

Result<SecretKey> ReadSecretKeyFile(const std::string& path) {
  return internal::CatchOutOfMemory("reading a secret key", path, [&]() -> Result<SecretKey> {
    SecretKey key;
    if (Status read = ReadKeyFile(path, kSecretTag, key); !read.ok()) return read;
    // The public half must be the seed's: a corrupted file would sign with a
    // key nobody trusts.
    internal::EnsureSodium();
    std::array<uint8_t, 32> pub;
    std::array<uint8_t, 64> again;
    crypto_sign_ed25519_seed_keypair(pub.data(), again.data(), key.bytes.data());
    if (again != key.bytes) {
      return Status(StatusCode::kBadArgument, path + ": the secret key is damaged");
    }
    return key;
  });
}

std::string SnapshotInfo::KeyIdHex() const { return Hex(key_id.data(), key_id.size()); }

}  // namespace chash
