#include "reference/reference_programs.h"

#include "hash/program_hashes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sodium/crypto_hash_sha256.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "reference/reference_ring.h"

namespace chash::reference {
namespace {

uint32_t Rotl32(uint32_t x, int r) { return r == 0 ? x : (x << r) | (x >> (32 - r)); }
uint64_t Rotl64(uint64_t x, int r) { return r == 0 ? x : (x << r) | (x >> (64 - r)); }

// A byte read through `char` on x86-64 (signed), widened: the hashkit
// functions' reads.
uint32_t CharByte(char c) {
  return static_cast<uint32_t>(static_cast<int>(static_cast<signed char>(c)));
}
uint32_t Byte(char c) { return static_cast<unsigned char>(c); }

uint32_t LittleEndian32(std::string_view s, size_t at, size_t count) {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i) value |= Byte(s[at + i]) << (8 * i);
  return value;
}

}  // namespace

// ---- HAProxy: src/hash.c, include/haproxy/intops.h ----------------------------------

uint32_t RefSdbm(std::string_view key) {
  uint32_t hash = 0;
  for (const char c : key) hash = Byte(c) + (hash << 6) + (hash << 16) - hash;
  return hash;
}

uint32_t RefDjb2(std::string_view key) {
  uint32_t hash = 5381;
  for (const char c : key) hash = ((hash << 5) + hash) + Byte(c);
  return hash;
}

uint32_t RefWt6(std::string_view key) {
  uint32_t h0 = 0xa53c965au, h1 = 0x5ca6953au, step0 = 6, step1 = 18;
  for (const char c : key) {
    const uint32_t t0 = Byte(c);
    h0 = ~(h0 ^ t0);
    h1 = ~(h1 + t0);
    const uint32_t t1 = Rotl32(h1, static_cast<int>(step0));
    h1 = Rotl32(h0, static_cast<int>(step1));
    h0 = t1;
    const uint32_t t2 = ((h0 >> 16) ^ h1) & 0xffff;
    step0 = t2 & 0x1F;
    step1 = t2 >> 11;
  }
  return h0 ^ h1;
}

// ---- hashkit: libmemcached's libhashkit, twemproxy's src/hashkit --------------------

uint32_t RefOneAtATime(std::string_view key) {
  uint32_t value = 0;
  for (const char c : key) {
    value += CharByte(c);
    value += (value << 10);
    value ^= (value >> 6);
  }
  value += (value << 3);
  value ^= (value >> 11);
  value += (value << 15);
  return value;
}

uint32_t RefFnv1a64(std::string_view key) {
  const uint64_t init = 0xcbf29ce484222325u, prime = 0x100000001b3u;
  uint32_t hash = static_cast<uint32_t>(init);
  for (const char c : key) {
    hash ^= CharByte(c);
    hash *= static_cast<uint32_t>(prime);
  }
  return hash;
}

uint32_t RefFnv1_64(std::string_view key) {
  uint64_t hash = 0xcbf29ce484222325u;
  for (const char c : key) {
    hash *= 0x100000001b3u;
    hash ^= static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(c)));
  }
  return static_cast<uint32_t>(hash);
}

uint32_t RefFnv1_32(std::string_view key) {
  uint32_t hash = 2166136261u;
  for (const char c : key) {
    hash *= 16777619u;
    hash ^= CharByte(c);
  }
  return hash;
}

uint32_t RefFnv1a32(std::string_view key) {
  uint32_t hash = 2166136261u;
  for (const char c : key) {
    hash ^= CharByte(c);
    hash *= 16777619u;
  }
  return hash;
}

uint32_t RefCrc32(std::string_view key) { return BitwiseCrc32(0, key.data(), key.size()); }

uint32_t RefCrc32Bits15(std::string_view key) { return (RefCrc32(key) >> 16) & 0x7fff; }

// twemproxy 0.5: crc = (crc << 8) ^ T[((crc >> 8) ^ byte) & 0xff] in 32
// bits, T[x] the CRC-16/XMODEM remainder of x << 8, computed here bit by bit.
uint32_t RefCrc16(std::string_view key) {
  uint32_t crc = 0;
  for (const char c : key) {
    uint32_t t = (((crc >> 8) ^ Byte(c)) & 0xff) << 8;
    for (int bit = 0; bit < 8; ++bit) t = (t & 0x8000) ? ((t << 1) ^ 0x1021u) & 0xffff : t << 1;
    crc = (crc << 8) ^ t;
  }
  return crc;
}

// ---- Digests -------------------------------------------------------------------------

void RefMd5(std::string_view data, uint8_t digest[16]) {
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_md5(), nullptr);
}

uint32_t RefSha256Last4(std::string_view data) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return uint32_t{digest[28]} | uint32_t{digest[29]} << 8 | uint32_t{digest[30]} << 16 |
         uint32_t{digest[31]} << 24;
}

uint64_t RefXxh64(std::string_view data, uint64_t seed) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87u, kP2 = 0xC2B2AE3D27D4EB4Fu,
                     kP3 = 0x165667B19E3779F9u, kP4 = 0x85EBCA77C2B2AE63u,
                     kP5 = 0x27D4EB2F165667C5u;
  const auto read64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{Byte(data[at + i])} << (8 * i);
    return v;
  };
  const auto round = [](uint64_t acc, uint64_t input) {
    return Rotl64(acc + input * kP2, 31) * kP1;
  };
  const auto merge = [&](uint64_t acc, uint64_t value) {
    return (acc ^ round(0, value)) * kP1 + kP4;
  };
  size_t at = 0;
  const size_t len = data.size();
  uint64_t h;
  if (len >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; len - at >= 32; at += 32) {
      v1 = round(v1, read64(at));
      v2 = round(v2, read64(at + 8));
      v3 = round(v3, read64(at + 16));
      v4 = round(v4, read64(at + 24));
    }
    h = Rotl64(v1, 1) + Rotl64(v2, 7) + Rotl64(v3, 12) + Rotl64(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + kP5;
  }
  h += len;
  for (; len - at >= 8; at += 8) {
    h ^= round(0, read64(at));
    h = Rotl64(h, 27) * kP1 + kP4;
  }
  if (len - at >= 4) {
    h ^= uint64_t{LittleEndian32(data, at, 4)} * kP1;
    h = Rotl64(h, 23) * kP2 + kP3;
    at += 4;
  }
  for (; at < len; ++at) {
    h ^= uint64_t{Byte(data[at])} * kP5;
    h = Rotl64(h, 11) * kP1;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t RefMurmur2Std(std::string_view data) {
  return std::hash<std::string>{}(std::string(data));
}

namespace {

uint32_t RefMd5Le32(std::string_view data) {
  uint8_t d[16];
  RefMd5(data, d);
  return uint32_t{d[0]} | uint32_t{d[1]} << 8 | uint32_t{d[2]} << 16 | uint32_t{d[3]} << 24;
}

// The KetamaKeyHash a ketama ring hashes keys (and libmemcached's
// unweighted ring its points) with.
KetamaKeyHash KetamaHashOf(const KetamaOptions& ketama) {
  if (ketama.key_hash != KetamaKeyHash::kDefault) return ketama.key_hash;
  if (ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
      ketama.variant == KetamaVariant::kLibmemcachedSpy ||
      ketama.variant == KetamaVariant::kLibmemcachedSpyWeighted) {
    return KetamaKeyHash::kOneAtATime;
  }
  if (ketama.variant == KetamaVariant::kTwemproxy) return KetamaKeyHash::kFnv1a64;
  return KetamaKeyHash::kMd5;
}

uint32_t KetamaHash(KetamaKeyHash hash, std::string_view key) {
  switch (hash) {
    case KetamaKeyHash::kDefault:
    case KetamaKeyHash::kMd5:
      return RefMd5Le32(key);
    case KetamaKeyHash::kOneAtATime:
      return RefOneAtATime(key);
    case KetamaKeyHash::kFnv1a64:
      return RefFnv1a64(key);
    case KetamaKeyHash::kFnv1_64:
      return RefFnv1_64(key);
    case KetamaKeyHash::kFnv1_32:
      return RefFnv1_32(key);
    case KetamaKeyHash::kFnv1a32:
      return RefFnv1a32(key);
    case KetamaKeyHash::kCrc32a:
      return RefCrc32(key);
    case KetamaKeyHash::kCrc32:
      return RefCrc32Bits15(key);
    case KetamaKeyHash::kCrc16:
      return RefCrc16(key);
    case KetamaKeyHash::kHsieh:
      return internal::HsiehHashkit(key.data(), key.size());
    case KetamaKeyHash::kMurmur:
      return internal::MurmurHashkit(key.data(), key.size());
    case KetamaKeyHash::kJenkins:
      return internal::JenkinsHashLittle(key.data(), key.size(), 13);
    case KetamaKeyHash::kMurmur3:
      return internal::Murmur3Hashkit(key.data(), key.size());
  }
  return 0;
}

}  // namespace

uint64_t RefKeyHash(const RingOptions& options, size_t weighted_servers, std::string_view key) {
  switch (options.flavor) {
    case Flavor::kHaproxy: {
      if (weighted_servers == 1) return 0;  // one usable server: no hash
      uint32_t h = 0;
      switch (options.haproxy.hash_function) {
        case HaproxyHash::kSdbm:
          h = RefSdbm(key);
          break;
        case HaproxyHash::kDjb2:
          h = RefDjb2(key);
          break;
        case HaproxyHash::kWt6:
          h = RefWt6(key);
          break;
        case HaproxyHash::kCrc32:
          h = RefCrc32(key);
          break;
      }
      return options.haproxy.avalanche ? internal::HaproxyFullHash(h) : h;
    }
    case Flavor::kKetamaMd5: {
      const KetamaVariant variant = options.ketama.variant;
      if (variant != KetamaVariant::kLibketama && weighted_servers == 1) return 0;
      if (variant == KetamaVariant::kTwemproxy && key.empty()) return 0;
      const std::array<char, 2> tag = options.ketama.hash_tag;
      if (tag[0] != '\0') {
        // twemproxy: the bytes strictly between the first tag[0] and the
        // next tag[1], when there is at least one.
        for (size_t open = 0; open < key.size(); ++open) {
          if (key[open] != tag[0]) continue;
          for (size_t close = open + 1; close < key.size(); ++close) {
            if (key[close] != tag[1]) continue;
            if (close > open + 1) key = key.substr(open + 1, close - open - 1);
            break;
          }
          break;
        }
      }
      return KetamaHash(KetamaHashOf(options.ketama), key);
    }
    case Flavor::kVarnishShard:
      return RefSha256Last4(key);
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      return RefXxh64(key, 0);
    default:
      return RefCrc32(key);
  }
}

// ---- Building --------------------------------------------------------------------------

namespace {

Status Error(StatusCode code, std::string why) { return Status(code, std::move(why)); }

bool Prime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

// 1..4096 bytes; strict: no byte <= ' ' and no DEL; nul: no NUL.
bool TextOk(std::string_view text, bool strict, bool nul) {
  if (text.empty() || text.size() > 4096) return false;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (strict && (b <= 0x20 || b == 0x7F)) return false;
    if (nul && b == 0) return false;
  }
  return true;
}

// libmemcached's and twemproxy's server text: host, port text ("" if none)
// and port number; false if the text is not HOST[:PORT] / [V6][:PORT].
bool SplitServer(std::string_view text, std::string& host, std::string& port_text, uint32_t& port) {
  if (!TextOk(text, true, true)) return false;
  std::string_view h, p;
  bool has_port = false;
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return false;
    h = text.substr(1, close - 1);
    const std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return false;
      p = after.substr(1);
      has_port = true;
    }
  } else {
    const size_t first = text.find(':');
    const size_t last = text.rfind(':');
    if (first != last) return false;
    if (last == std::string_view::npos) {
      h = text;
    } else {
      h = text.substr(0, last);
      p = text.substr(last + 1);
      has_port = true;
    }
  }
  if (h.empty() || (has_port && p.empty())) return false;
  if (has_port) {
    uint64_t value = 0;
    for (const char c : p) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + static_cast<uint64_t>(c - '0');
      if (value > 65535) return false;
    }
    if (value == 0) return false;
    port = static_cast<uint32_t>(value);
  }
  host.assign(h);
  port_text.assign(p);
  return true;
}

// Envoy's Address::Instance::asString() for the IP and port in `text`
// (source/common/network/address_impl.cc): inet_ntop's text of the address,
// an IPv6 one in brackets with "%SCOPE" when its scope id is not 0, then
// ":PORT". What Envoy hashes for a host without a hash key or a hostname.
// A text that is not a numeric IP (IPv6 in brackets) and a port 0..65535,
// or whose scope is not a number that fits 32 bits, is hashed as written.
std::string EnvoyAsString(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (text.find('\0') != std::string::npos || colon == std::string::npos) return text;
  const std::string digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos || std::stoul(digits) > 65535) {
    return text;
  }
  const std::string port = ":" + std::to_string(std::stoul(digits));
  std::string host = text.substr(0, colon);
  char printed[INET6_ADDRSTRLEN] = {};
  if (host.size() < 2 || host.front() != '[' || host.back() != ']') {
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) != 1) return text;
    return inet_ntop(AF_INET, &v4, printed, sizeof printed) + port;
  }
  host = host.substr(1, host.size() - 2);
  std::string scope;
  if (const size_t percent = host.find('%'); percent != std::string::npos) {
    scope = host.substr(percent + 1);
    host.resize(percent);
    if (scope.empty() || scope.size() > 10 ||
        scope.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(scope) > UINT32_MAX) {
      return text;
    }
    scope = std::stoull(scope) == 0 ? "" : "%" + std::to_string(std::stoull(scope));
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return text;
  return "[" + std::string(inet_ntop(AF_INET6, &v6, printed, sizeof printed)) + scope + "]" + port;
}

// The bytes a server's points are made from (the engine's NodeAddress::host).
struct ParsedServer {
  std::string label;
};

Result<ParsedServer> ParseServer(const RingOptions& options, const ProgramServer& server) {
  const Flavor flavor = options.flavor;
  const bool twemproxy =
      flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy;
  if (server.server_id != 0 && flavor != Flavor::kHaproxy) {
    return Error(StatusCode::kBadArgument, "server id on another flavor");
  }
  if (!server.name.empty() && !twemproxy) return Error(StatusCode::kBadArgument, "name");
  ParsedServer out;
  switch (flavor) {
    case Flavor::kHaproxy:
      if (server.weight > 256) return Error(StatusCode::kBadWeight, "haproxy weight");
      if (server.server_id > 0x7FFFFFFFu) return Error(StatusCode::kBadArgument, "haproxy id");
      if (!TextOk(server.address, true, true)) return Error(StatusCode::kBadAddress, "text");
      out.label = server.address;
      return out;
    case Flavor::kKetamaMd5: {
      const KetamaVariant variant = options.ketama.variant;
      const bool spy = variant == KetamaVariant::kLibmemcachedSpy ||
                       variant == KetamaVariant::kLibmemcachedSpyWeighted;
      if ((variant == KetamaVariant::kLibmemcachedUnweighted ||
           variant == KetamaVariant::kLibmemcachedSpy) &&
          server.weight > 1) {
        return Error(StatusCode::kBadWeight, "unweighted");
      }
      if (variant == KetamaVariant::kLibketama) {
        if (!TextOk(server.address, true, true) || server.address.size() > 21) {
          return Error(StatusCode::kBadAddress, "libketama addr[22]");
        }
        out.label = server.address;
        return out;
      }
      std::string host, port_text;
      uint32_t port = options.ketama.default_port;
      if (!SplitServer(server.address, host, port_text, port)) {
        return Error(StatusCode::kBadAddress, "host[:port]");
      }
      if (twemproxy && !server.name.empty()) {
        if (!TextOk(server.name, true, true)) return Error(StatusCode::kBadAddress, "name");
        out.label = server.name;
        return out;
      }
      if (spy) {
        out.label = "/" + host + ":" + std::to_string(port);
        return out;
      }
      // libmemcached: "%s:%u", twemproxy: the text cut from the line; the
      // port left out when it is the default port.
      out.label = host;
      if (!port_text.empty() && port != options.ketama.default_port) {
        out.label += ":" + (twemproxy ? port_text : std::to_string(port));
      }
      return out;
    }
    case Flavor::kVarnishShard:
      if (!TextOk(server.address, false, true)) return Error(StatusCode::kBadAddress, "ident");
      out.label = server.address;
      return out;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      if (!TextOk(server.address, false, false)) return Error(StatusCode::kBadAddress, "key");
      out.label = EnvoyAsString(server.address);
      return out;
    default:
      return Error(StatusCode::kBadArgument, "not a program flavor");
  }
}

Status CheckOptions(const RingOptions& options) {
  const Flavor f = options.flavor;
  const auto other = [&](bool changed, Flavor owner) { return changed && f != owner; };
  if (other(!(options.haproxy == HaproxyOptions{}), Flavor::kHaproxy) ||
      other(!(options.ketama == KetamaOptions{}), Flavor::kKetamaMd5) ||
      other(!(options.varnish == VarnishOptions{}), Flavor::kVarnishShard) ||
      other(!(options.envoy_ring == EnvoyRingOptions{}), Flavor::kEnvoyRing) ||
      other(!(options.maglev == MaglevOptions{}), Flavor::kEnvoyMaglev)) {
    return Error(StatusCode::kBadArgument, "another flavor's options");
  }
  if (options.point_multiple == 0 || options.point_multiple != 160) {
    return Error(StatusCode::kBadMultiple, "multiple");
  }
  switch (f) {
    case Flavor::kHaproxy:
      if (static_cast<int>(options.haproxy.hash_function) > 3 ||
          static_cast<int>(options.haproxy.server_key) > 1) {
        return Error(StatusCode::kBadArgument, "haproxy option");
      }
      break;
    case Flavor::kKetamaMd5: {
      const KetamaOptions& k = options.ketama;
      if (static_cast<int>(k.variant) > 5 || static_cast<int>(k.key_hash) > 13 ||
          k.default_port == 0 || k.default_port > 65535) {
        return Error(StatusCode::kBadArgument, "ketama option");
      }
      const bool libmemcached =
          k.variant != KetamaVariant::kTwemproxy && k.variant != KetamaVariant::kLibketama;
      if ((k.variant == KetamaVariant::kTwemproxy && k.key_hash == KetamaKeyHash::kMurmur3) ||
          (k.variant == KetamaVariant::kLibketama && k.key_hash != KetamaKeyHash::kDefault &&
           k.key_hash != KetamaKeyHash::kMd5) ||
          (libmemcached &&
           (k.key_hash == KetamaKeyHash::kCrc16 || k.key_hash == KetamaKeyHash::kCrc32a))) {
        return Error(StatusCode::kBadArgument, "the program has no such key hash");
      }
      const bool tag0 = k.hash_tag[0] != '\0', tag1 = k.hash_tag[1] != '\0';
      if ((tag0 || tag1) && (k.variant != KetamaVariant::kTwemproxy || !tag0 || !tag1)) {
        return Error(StatusCode::kBadArgument, "hash_tag");
      }
      break;
    }
    case Flavor::kVarnishShard:
      if (options.varnish.replicas == 0) return Error(StatusCode::kBadArgument, "replicas");
      break;
    case Flavor::kEnvoyRing: {
      const EnvoyRingOptions& r = options.envoy_ring;
      if (r.minimum_ring_size == 0 || r.minimum_ring_size > 8388608 ||
          r.maximum_ring_size > 8388608 || r.minimum_ring_size > r.maximum_ring_size ||
          static_cast<int>(r.hash_function) > 1) {
        return Error(StatusCode::kBadArgument, "ring sizes");
      }
      break;
    }
    case Flavor::kEnvoyMaglev:
      if (!Prime(options.maglev.table_size) || options.maglev.table_size > 5000011) {
        return Error(StatusCode::kBadArgument, "table size");
      }
      break;
    default:
      return Error(StatusCode::kBadArgument, "not a program flavor");
  }
  if (options.max_points == 0 || options.max_points > kHardMaxPoints) {
    return Error(StatusCode::kBadArgument, "max_points");
  }
  return Status();
}

// Points a server of this weight makes as far as it alone says (the
// builder's check at Add).
uint64_t PointsAlone(const RingOptions& options, uint32_t weight) {
  switch (options.flavor) {
    case Flavor::kHaproxy:
      return uint64_t{weight} * 16;
    case Flavor::kVarnishShard:
      return uint64_t{weight} * options.varnish.replicas;
    case Flavor::kKetamaMd5:
      return options.ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
                     options.ketama.variant == KetamaVariant::kLibmemcachedSpy
                 ? weight * 100ull
                 : 0;
    default:
      return 0;
  }
}

}  // namespace

Result<ProgramRing> ProgramRing::Build(const RingOptions& options,
                                       const std::vector<ProgramServer>& servers) {
  if (Status status = CheckOptions(options); !status.ok()) return status;
  ProgramRing ring;
  ring.options_ = options;
  std::vector<std::string> labels;
  std::set<std::string> seen_labels;
  std::set<uint32_t> seen_ids;
  uint64_t running = 0;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i >= 65536) return Error(StatusCode::kTooManyNodes, "nodes");
    Result<ParsedServer> parsed = ParseServer(options, servers[i]);
    if (!parsed.ok()) return parsed.status();
    if (servers[i].server_id != 0 && !seen_ids.insert(servers[i].server_id).second) {
      return Error(StatusCode::kDuplicateNode, "id twice");
    }
    if (!seen_labels.insert(parsed.value().label).second) {
      return Error(StatusCode::kDuplicateNode, "label twice");
    }
    const uint64_t alone = PointsAlone(options, servers[i].weight);
    if (alone > 0xFFFFFFFFu) return Error(StatusCode::kTooManyPoints, "overflow");
    running += alone;
    if (running > options.max_points) return Error(StatusCode::kTooManyPoints, "cap");
    labels.push_back(parsed.value().label);
  }
  ring.servers_ = servers;
  ring.original_.resize(servers.size());
  for (uint32_t i = 0; i < servers.size(); ++i) ring.original_[i] = i;

  // HAProxy's check_config_validity: ids for the servers without one.
  if (options.flavor == Flavor::kHaproxy) {
    uint64_t next_id = 1;
    for (ProgramServer& server : ring.servers_) {
      if (server.server_id == 0) {
        while (seen_ids.count(static_cast<uint32_t>(next_id)) != 0) ++next_id;
        server.server_id = static_cast<uint32_t>(next_id);
        seen_ids.insert(server.server_id);
      }
      ++next_id;
    }
  }
  uint64_t total_weight = 0;
  size_t live = 0;
  for (const ProgramServer& server : servers) {
    total_weight += server.weight;
    live += server.weight > 0 ? 1 : 0;
  }
  ring.weighted_ = live;
  if ((options.flavor == Flavor::kEnvoyRing || options.flavor == Flavor::kEnvoyMaglev ||
       (options.flavor == Flavor::kKetamaMd5 &&
        options.ketama.variant == KetamaVariant::kTwemproxy)) &&
      total_weight > 0xFFFFFFFFu) {
    return Error(StatusCode::kBadWeight, "weight total");
  }

  // Each server's points, in the program's order of generation.
  std::vector<Point>& points = ring.points_;
  std::vector<uint64_t> counts(servers.size(), 0);
  const Flavor flavor = options.flavor;
  if (flavor == Flavor::kHaproxy) {
    for (uint32_t s = 0; s < servers.size(); ++s) counts[s] = uint64_t{servers[s].weight} * 16;
  } else if (flavor == Flavor::kKetamaMd5) {
    const KetamaVariant variant = options.ketama.variant;
    for (uint32_t s = 0; s < servers.size(); ++s) {
      const uint32_t w = servers[s].weight;
      if (w == 0) continue;
      if (variant == KetamaVariant::kLibmemcachedUnweighted ||
          variant == KetamaVariant::kLibmemcachedSpy) {
        counts[s] = 100;
      } else if (variant == KetamaVariant::kLibmemcachedWeighted ||
                 variant == KetamaVariant::kLibmemcachedSpyWeighted) {
        float pct = (float)w / (float)total_weight;
        counts[s] =
            (uint64_t)(std::floor((float)(pct * 160 / 4 * (float)live + 0.0000000001F))) * 4;
      } else if (variant == KetamaVariant::kTwemproxy) {
        float pct = (float)w / (float)(uint32_t)total_weight;
        counts[s] = (uint64_t)(std::floor((float)(pct * 160 / 4 * (float)live + 0.0000000001))) * 4;
      } else {
        float pct = (float)w / (float)total_weight;
        counts[s] = (uint64_t)std::floor((float)(pct * 40.0 * (float)live)) * 4;
      }
    }
  } else if (flavor == Flavor::kVarnishShard) {
    const uint64_t rmax = live == 0 ? 0 : (0xFFFFFFFFull - 1) / live;
    for (uint32_t s = 0; s < servers.size(); ++s) {
      counts[s] = std::min<uint64_t>(uint64_t{servers[s].weight} * options.varnish.replicas, rmax);
    }
  } else if (flavor == Flavor::kEnvoyRing && total_weight > 0) {
    double min_w = 1.0;
    for (const ProgramServer& server : servers) {
      if (server.weight > 0) min_w = std::min(min_w, server.weight * 1.0 / total_weight);
    }
    const double scale = std::min(std::ceil(min_w * options.envoy_ring.minimum_ring_size) / min_w,
                                  static_cast<double>(options.envoy_ring.maximum_ring_size));
    double current = 0.0, target = 0.0;
    for (uint32_t s = 0; s < servers.size(); ++s) {
      if (servers[s].weight == 0) continue;
      const double product = scale * (servers[s].weight * 1.0 / total_weight);
      target += product;
      while (current < target) {
        ++counts[s];
        ++current;
      }
    }
  }
  uint64_t total = 0;
  for (const uint64_t c : counts) total += c;
  if (flavor == Flavor::kEnvoyMaglev) total = live == 0 ? 0 : options.maglev.table_size;
  if (total > options.max_points) return Error(StatusCode::kTooManyPoints, "ring cap");
  if (flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy) {
    for (uint32_t s = 0; s < servers.size(); ++s) {
      if (counts[s] >= 4 && labels[s].size() + 1 + std::to_string(counts[s] / 4 - 1).size() > 85) {
        return Error(StatusCode::kBadAddress, "twemproxy label");
      }
    }
  }

  for (uint32_t s = 0; s < servers.size(); ++s) {
    const std::string& label = labels[s];
    if (flavor == Flavor::kHaproxy) {
      const uint32_t id = ring.servers_[s].server_id;
      for (uint32_t j = 0; j < counts[s]; ++j) {
        const uint32_t node_key = options.haproxy.server_key == HaproxyServerKey::kIdUnfixed30
                                      ? internal::HaproxyFullHash(id) + j
                                      : id * 4096u + j;
        points.push_back({internal::HaproxyFullHash(node_key), s});
      }
    } else if (flavor == Flavor::kKetamaMd5) {
      if (options.ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
          options.ketama.variant == KetamaVariant::kLibmemcachedSpy) {
        for (uint64_t k = 0; k < counts[s]; ++k) {
          const std::string text = label + "-" + std::to_string(k);
          points.push_back({KetamaHash(KetamaHashOf(options.ketama), text), s});
        }
      } else {
        for (uint64_t k = 0; k < counts[s] / 4; ++k) {
          uint8_t d[16];
          RefMd5(label + "-" + std::to_string(k), d);
          for (int a = 0; a < 4; ++a) {
            points.push_back({uint32_t{d[4 * a]} | uint32_t{d[4 * a + 1]} << 8 |
                                  uint32_t{d[4 * a + 2]} << 16 | uint32_t{d[4 * a + 3]} << 24,
                              s});
          }
        }
      }
    } else if (flavor == Flavor::kVarnishShard) {
      for (uint64_t j = 0; j < counts[s]; ++j) {
        points.push_back({RefSha256Last4(label + std::to_string(j)), s});
      }
    } else if (flavor == Flavor::kEnvoyRing) {
      for (uint64_t i = 0; i < counts[s]; ++i) {
        const std::string text = label + "_" + std::to_string(i);
        const uint64_t h = options.envoy_ring.hash_function == EnvoyHash::kMurmurHash2
                               ? RefMurmur2Std(text)
                               : RefXxh64(text, 0);
        points.push_back({h, s});
      }
    }
  }
  // The sorts: libmemcached by (value, server index); the others by value,
  // a tie kept in generation order (glibc's merge-sort qsort; Envoy's
  // std::sort leaves it unspecified: chash's rule).
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.hash < b.hash; });

  if (flavor == Flavor::kEnvoyMaglev && live > 0) {
    // Envoy's OriginalMaglevTable: hosts by key, each with its permutation.
    struct Host {
      std::string key;
      uint32_t node;
      double weight;
      uint64_t offset, skip, next = 0;
      double target = 0;
    };
    std::vector<Host> hosts;
    double max_w = 0.0;
    for (uint32_t s = 0; s < servers.size(); ++s) {
      if (servers[s].weight == 0) continue;
      const double w = servers[s].weight * 1.0 / total_weight;
      max_w = std::max(max_w, w);
      const uint64_t m = options.maglev.table_size;
      hosts.push_back(
          {labels[s], s, w, RefXxh64(labels[s], 0) % m, RefXxh64(labels[s], 1) % (m - 1) + 1});
    }
    std::sort(hosts.begin(), hosts.end(),
              [](const Host& a, const Host& b) { return a.key < b.key; });
    const uint64_t m = options.maglev.table_size;
    std::vector<int64_t> table(m, -1);
    uint64_t filled = 0;
    for (uint32_t iteration = 1; filled < m; ++iteration) {
      for (Host& host : hosts) {
        if (filled == m) break;
        if (iteration * host.weight < host.target) continue;
        host.target += max_w;
        uint64_t c = (host.offset + host.skip * host.next) % m;
        while (table[c] >= 0) c = (host.offset + host.skip * ++host.next) % m;
        table[c] = host.node;
        ++host.next;
        ++filled;
      }
    }
    for (uint64_t i = 0; i < m; ++i) points.push_back({0, static_cast<uint32_t>(table[i])});
  }
  return ring;
}

uint64_t ProgramRing::KeyHash(std::string_view key) const {
  return RefKeyHash(options_, weighted_, key);
}

namespace {

// Envoy's and libketama's bisection (ketama_get_server): signed bounds;
// the entry whose hash is >= h and whose predecessor's is < h (0 before
// the first), else entry 0.
size_t KetamaBisection(const std::vector<ProgramRing::Point>& p, uint64_t h) {
  int64_t low = 0, high = static_cast<int64_t>(p.size());
  while (true) {
    const int64_t mid = (low + high) / 2;
    if (mid == static_cast<int64_t>(p.size())) return 0;
    const uint64_t value = p[mid].hash;
    const uint64_t before = mid == 0 ? 0 : p[mid - 1].hash;
    if (h <= value && h > before) return static_cast<size_t>(mid);
    if (value < h) {
      low = mid + 1;
    } else {
      high = mid - 1;
    }
    if (low > high) return 0;
  }
}

// Varnish's shard_lookup: the probe equal to the key, else the last index
// if a probe reaches it, else the first point >= key past a smaller one.
size_t VarnishBisection(const std::vector<ProgramRing::Point>& p, uint64_t key) {
  const size_t n = p.size();
  size_t low = 0, high = n;
  while (true) {
    const size_t i = (high + low) / 2;
    if (p[i].hash == key) return i;
    if (i == n - 1) return n - 1;
    if (p[i].hash < key && p[i + 1].hash >= key) return i + 1;
    if (p[i].hash > key) {
      if (i == 0) return 0;
      high = i;
    } else {
      low = i;
    }
  }
}

}  // namespace

size_t ProgramRing::StartIndex(uint64_t hash) const {
  const size_t n = points_.size();
  switch (options_.flavor) {
    case Flavor::kHaproxy: {
      // eb32_lookup_ge (the oldest of equal keys), its predecessor (the
      // newest of the keys before), the nearer one, the one before on a tie.
      size_t next = static_cast<size_t>(
          std::lower_bound(points_.begin(), points_.end(), hash,
                           [](const Point& p, uint64_t h) { return p.hash < h; }) -
          points_.begin());
      const size_t prev = next == 0 ? n - 1 : next - 1;
      if (next == n) next = 0;
      const uint32_t h = static_cast<uint32_t>(hash);
      const uint32_t dp = h - static_cast<uint32_t>(points_[prev].hash);
      const uint32_t dn = static_cast<uint32_t>(points_[next].hash) - h;
      return dp <= dn ? prev : next;
    }
    case Flavor::kVarnishShard:
      return VarnishBisection(points_, hash);
    case Flavor::kEnvoyRing:
      return KetamaBisection(points_, hash);
    case Flavor::kEnvoyMaglev:
      return static_cast<size_t>(hash % n);
    case Flavor::kKetamaMd5:
      if (options_.ketama.variant == KetamaVariant::kLibketama)
        return KetamaBisection(points_, hash);
      [[fallthrough]];
    default: {
      // libmemcached's and twemproxy's dispatch: the first >= h, else 0.
      size_t left = 0, right = n;
      while (left < right) {
        const size_t middle = left + (right - left) / 2;
        if (points_[middle].hash < hash) {
          left = middle + 1;
        } else {
          right = middle;
        }
      }
      return right == n ? 0 : right;
    }
  }
}

uint32_t ProgramRing::Lookup(uint64_t hash) const {
  if (points_.empty()) return kNoNode;
  const bool wide =
      options_.flavor == Flavor::kEnvoyRing || options_.flavor == Flavor::kEnvoyMaglev;
  if (!wide && hash > 0xFFFFFFFFu) return kNoNode;
  return original_[points_[StartIndex(hash)].node];
}

uint32_t ProgramRing::FindNode(std::string_view key) const { return Lookup(KeyHash(key)); }

uint32_t ProgramRing::Attempt(uint64_t hash, uint32_t attempt) const {
  if (points_.empty()) return kNoNode;
  if (options_.flavor == Flavor::kEnvoyMaglev) {
    if (attempt > 0) hash ^= ~0ull - attempt + 1;
    return original_[points_[hash % points_.size()].node];
  }
  const std::vector<uint32_t> walk = Walk(hash, attempt + 1);
  return walk.empty() ? kNoNode : walk.back();
}

std::vector<uint32_t> ProgramRing::Walk(uint64_t hash, size_t count) const {
  std::vector<uint32_t> nodes;
  if (points_.empty()) return nodes;
  const bool wide =
      options_.flavor == Flavor::kEnvoyRing || options_.flavor == Flavor::kEnvoyMaglev;
  if (!wide && hash > 0xFFFFFFFFu) return nodes;
  size_t index = StartIndex(hash);
  for (size_t i = 0; i < count; ++i) {
    nodes.push_back(original_[points_[index].node]);
    index = (index + 1) % points_.size();
  }
  return nodes;
}

std::vector<uint32_t> ProgramRing::DistinctWalk(uint64_t hash) const {
  std::vector<uint32_t> distinct;
  std::set<uint32_t> seen;
  for (const uint32_t node : Walk(hash, points_.size())) {
    if (seen.insert(node).second) distinct.push_back(node);
  }
  return distinct;
}

ProgramRing ProgramRing::Subset(const std::vector<bool>& up) const {
  std::vector<ProgramServer> servers;
  std::vector<uint32_t> original;
  for (uint32_t s = 0; s < servers_.size(); ++s) {
    if (s < up.size() && up[s] && servers_[s].weight > 0) {
      servers.push_back(servers_[s]);  // haproxy: with its assigned id
      original.push_back(original_[s]);
    }
  }
  RingOptions options = options_;
  options.max_points = kHardMaxPoints;
  Result<ProgramRing> subset = Build(options, servers);
  if (!subset.ok()) return ProgramRing();
  ProgramRing ring = std::move(subset).value();
  ring.original_ = std::move(original);
  return ring;
}

}  // namespace chash::reference
