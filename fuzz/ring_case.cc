#include "ring_case.h"

#include <utility>

#include "address_model.h"
#include "fuzz_support.h"
#include "lookup_diff.h"

namespace chash::fuzz {
namespace {

using reference::ReferenceRing;

// An IP node a kIpv4/kIpv6 op generated, so that kRespell can write the same
// address another way.
struct IpNode {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};
  uint16_t port = 0;
  bool with_port = true;
};

uint32_t ReadWeight(FuzzReader& r) {
  const uint8_t w = r.U8();
  switch (w & 3) {
    case 0:
      return 0;
    case 1:
      return 1 + ((w >> 2) & 3);
    case 2:
      return r.U16();
    default:
      return r.U32();
  }
}

std::string Ipv4Text(const IpNode& node, uint8_t variant) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) text += '.';
    if (i == 0 && (variant & 2)) text += '0';
    text += std::to_string(node.bytes[i]);
  }
  if (node.with_port) text += ((variant & 4) ? ":00" : ":") + std::to_string(node.port);
  return text;
}

std::string Ipv6NodeText(const IpNode& node, int form) {
  // (append rather than "[" + ...: GCC 12 warns falsely on that, bug 105329)
  std::string text = "[";
  text += Ipv6Text(node.bytes, form);
  text += "]";
  if (node.with_port) text.append(":").append(std::to_string(node.port));
  return text;
}

// kQuad octet spellings: as is, empty for 0, leading zeros, 3 digits.
std::string QuadOctet(uint8_t value, int spelling) {
  switch (spelling & 3) {
    case 0:
      return std::to_string(value);
    case 1:
      return value == 0 ? "" : std::to_string(value);
    case 2:
      return "000" + std::to_string(value);
    default: {
      std::string text = std::to_string(value);
      return std::string(3 - text.size(), '0') + text;
    }
  }
}

std::string FlavorText(Flavor flavor) { return std::string(FlavorName(flavor)); }

}  // namespace

RingCase DecodeRingCase(const uint8_t* data, size_t size) {
  FuzzReader r(data, size);
  RingCase c;
  c.flavor = static_cast<Flavor>(r.U8() % 4);
  const uint8_t options = r.U8();
  const int multiple_mode = options & 3;
  const int cap_mode = (options >> 2) & 3;
  if (c.flavor == Flavor::kPingoraV2 || c.flavor == Flavor::kResty || multiple_mode == 3) {
    switch (multiple_mode) {
      case 0:
        break;
      case 1:
        c.point_multiple = 1u + r.U8();
        break;
      case 2:
        c.point_multiple = r.U16();
        break;
      default:
        c.point_multiple = r.U32();
    }
  }
  switch (cap_mode) {
    case 0:
      break;
    case 1:
      c.max_points = r.U16();
      break;
    case 2:
      c.max_points = r.U8();
      break;
    default:
      c.max_points = kHardMaxPoints + 1 + r.U8();
  }

  std::vector<IpNode> ip_nodes;
  bool near_max_done = false;
  const uint32_t op_count = r.U8();
  for (uint32_t op_index = 0; op_index < op_count && !r.empty() &&
                              c.servers.size() < (near_max_done ? kMaxServers : kMaxPlainServers);
       ++op_index) {
    const uint8_t op = r.U8();
    const uint8_t variant = op >> 3;
    switch (op & 7) {
      case kText: {
        const std::string text(r.String(64));
        c.servers.push_back({text, ReadWeight(r)});
        break;
      }
      case kIpv4: {
        IpNode node;
        for (int i = 0; i < 4; ++i) node.bytes[i] = r.U8();
        node.port = r.U16();
        node.with_port = !(variant & 1);
        ip_nodes.push_back(node);
        c.servers.push_back({Ipv4Text(node, variant), ReadWeight(r)});
        break;
      }
      case kIpv6: {
        IpNode node;
        node.v6 = true;
        if (variant & 16) {
          node.bytes[10] = node.bytes[11] = 0xFF;
          for (int i = 12; i < 16; ++i) node.bytes[i] = r.U8();
        } else {
          const uint8_t zero_mask = r.U8();
          for (int g = 0; g < 8; ++g) {
            const uint16_t group = (zero_mask >> g) & 1 ? 0 : r.U16();
            node.bytes[2 * g] = static_cast<uint8_t>(group >> 8);
            node.bytes[2 * g + 1] = static_cast<uint8_t>(group);
          }
        }
        node.port = r.U16();
        node.with_port = !(variant & 8);
        ip_nodes.push_back(node);
        c.servers.push_back({Ipv6NodeText(node, variant & 7), ReadWeight(r)});
        break;
      }
      case kName: {
        const uint16_t n = r.U16();
        std::string text = ((variant & 2) ? "N" : "n") + std::to_string(n) +
                           ((variant & 2) ? ".EXAMPLE" : ".example");
        if (variant & 1) text += ":" + std::to_string(r.U16());
        c.servers.push_back({text, ReadWeight(r)});
        break;
      }
      case kUnix: {
        const uint16_t n = r.U16();
        std::string text = ((variant & 1) ? "UNIX:/run/s" : "unix:/run/s") + std::to_string(n);
        if (variant & 2) text += std::string(r.U8(), 'p');
        c.servers.push_back({text + ".sock", ReadWeight(r)});
        break;
      }
      case kRespell: {
        const uint32_t index = r.U8();
        const uint32_t weight = ReadWeight(r);
        if (ip_nodes.empty()) break;
        const IpNode& node = ip_nodes[index % ip_nodes.size()];
        c.servers.push_back(
            {node.v6 ? Ipv6NodeText(node, variant % kIpv6TextForms) : Ipv4Text(node, variant),
             weight});
        break;
      }
      case kBulk: {
        const uint32_t base = r.U16();
        const bool near_max = variant == kBulkNearMaxVariant && !near_max_done;
        near_max_done |= near_max;
        const uint32_t count = near_max ? kMaxNodes - r.U8() : 1 + r.U8() % kMaxBulk;
        const uint32_t weight = ReadWeight(r);
        const size_t limit = near_max ? kMaxServers : kMaxPlainServers;
        for (uint32_t i = 0; i < count && c.servers.size() < limit; ++i) {
          const uint32_t n = base + i;
          c.servers.push_back({"10." + std::to_string((n >> 16) & 255) + "." +
                                   std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255) +
                                   ":443",
                               weight});
        }
        break;
      }
      default: {  // kQuad
        const uint8_t spelling = r.U8();
        std::string text;
        for (int i = 0; i < 4; ++i) {
          if (i > 0) text += '.';
          text += QuadOctet(r.U8(), spelling >> (2 * i));
        }
        if (variant & 1) text += ":" + std::to_string(r.U16());
        c.servers.push_back({text, ReadWeight(r)});
      }
    }
  }
  const uint32_t key_count = r.U8() % 33;
  for (uint32_t i = 0; i < key_count; ++i) c.keys.emplace_back(r.String(48));
  const uint32_t hash_count = r.U8() % 17;
  for (uint32_t i = 0; i < hash_count; ++i) c.hashes.push_back(r.U32());
  c.mask = DecodeMaskCase(r, static_cast<uint32_t>(c.servers.size()));
  return c;
}

std::string RingCase::Describe() const {
  std::string out = "ring case: flavor " + FlavorText(flavor) + ", multiple " +
                    std::to_string(point_multiple) + ", max_points " + std::to_string(max_points) +
                    ", " + std::to_string(servers.size()) + " servers, " +
                    std::to_string(keys.size()) + " keys, " + std::to_string(hashes.size()) +
                    " extra hashes\n";
  out += ElidedLines(servers.size(), 24, [&](size_t i) {
    return "  server " + std::to_string(i) + ": " + Printable(servers[i].address) + " weight " +
           std::to_string(servers[i].weight) + "\n";
  });
  for (size_t i = 0; i < keys.size() && i < 8; ++i) out += "  key " + Printable(keys[i]) + "\n";
  return out + "  " + mask.Describe();
}

RingOutcome RunRingDiff(const RingCase& c) {
  ReachTheSingleLookupWindow();
  const std::string description = c.Describe();
  RingOutcome outcome;

  // The engine, node by node as an embedder adds them.
  RingBuilder builder(
      {.flavor = c.flavor, .point_multiple = c.point_multiple, .max_points = c.max_points});
  Status engine_status;
  size_t failed_at = c.servers.size();
  for (size_t i = 0; i < c.servers.size(); ++i) {
    const uint64_t points_before = builder.points_generated();
    engine_status = builder.Add(c.servers[i].address, c.servers[i].weight);
    if (!engine_status.ok()) {
      failed_at = i;
      if (builder.size() != i || builder.points_generated() != points_before) {
        Fail("a failed Add changed the builder (" + engine_status.ToString() + ")", description);
      }
      break;
    }
  }
  Ring ring;
  if (engine_status.ok()) {
    Result<Ring> built = std::move(builder).Build();
    if (built.ok()) {
      ring = std::move(built).value();
    } else {
      engine_status = built.status();
    }
  }

  const Result<ReferenceRing> ref =
      ReferenceRing::Build(c.flavor, c.point_multiple, c.servers, c.max_points);
  if (engine_status.code() != ref.status().code()) {
    Fail("build status: engine " + engine_status.ToString() + ", reference " +
             ref.status().ToString(),
         description);
  }
  outcome.code = engine_status.code();
  if (!engine_status.ok()) {
    CheckErrorFormat(engine_status, description);
    // Per-node errors name the node (ring.h): "node 12 '10.0.0.1:0': ...".
    const bool option_error = engine_status.code() == StatusCode::kBadMultiple ||
                              engine_status.code() == StatusCode::kBadArgument;
    const std::string label = "node " + std::to_string(failed_at);
    const std::string& message = engine_status.message();
    if (!option_error && failed_at < c.servers.size() &&
        (message.rfind(label, 0) != 0 || message.size() == label.size() ||
         (message[label.size()] != ' ' && message[label.size()] != ':'))) {
      Fail(
          "error does not name node " + std::to_string(failed_at) + ": " + engine_status.ToString(),
          description);
    }
    return outcome;
  }

  // Node table: ids in configuration order, as written, with their weights.
  if (ring.num_nodes() != c.servers.size()) Fail("num_nodes differs", description);
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const NodeInfo& info = ring.node(id);
    if (info.address.written != c.servers[id].address || info.weight != c.servers[id].weight) {
      Fail("node " + std::to_string(id) + " is " + Printable(info.address.written) + " weight " +
               std::to_string(info.weight),
           description);
    }
  }
  if (ring.flavor() != c.flavor || ring.point_multiple() != c.point_multiple ||
      ring.tie_break() != FlavorTieBreak(c.flavor) || ring.is_raw()) {
    Fail("ring options differ from the builder's", description);
  }

  // The oracle of the failover lookups: the same servers with the
  // unavailable ones drained (weight 0 keeps ids and the tie-break order).
  const ReferenceRing* available_ref = &ref.value();
  Result<ReferenceRing> subset = ReferenceRing();
  if (!c.mask.AllAvailable(ring.num_nodes())) {
    std::vector<reference::Server> servers = c.servers;
    for (uint32_t id = 0; id < servers.size(); ++id) {
      if (!c.mask.IsAvailable(id)) servers[id].weight = 0;
    }
    subset = ReferenceRing::Build(c.flavor, c.point_multiple, servers, c.max_points);
    if (!subset.ok()) Fail("the ring of the available nodes failed to build", description);
    available_ref = &subset.value();
  }

  CheckMoves(ring, description);
  outcome.checks = CompareRingWithReference(ring, ref.value(), c.keys, c.hashes, description,
                                            &c.mask, available_ref);
  outcome.points = ring.num_points();
  outcome.collisions = ring.collisions();
  outcome.nodes = ring.num_nodes();
  return outcome;
}

// ---- RingCaseWriter --------------------------------------------------------------

RingCaseWriter::RingCaseWriter(Flavor flavor, Multiple multiple_mode, uint32_t multiple,
                               Cap cap_mode, uint32_t cap) {
  header_.U8(static_cast<uint8_t>(flavor))
      .U8(static_cast<uint8_t>(static_cast<int>(multiple_mode) | static_cast<int>(cap_mode) << 2));
  if (flavor == Flavor::kPingoraV2 || flavor == Flavor::kResty || multiple_mode == Multiple::kU32) {
    switch (multiple_mode) {
      case Multiple::kDefault:
        break;
      case Multiple::kSmall:
        header_.U8(static_cast<uint8_t>(multiple - 1));
        break;
      case Multiple::kU16:
        header_.U16(static_cast<uint16_t>(multiple));
        break;
      case Multiple::kU32:
        header_.U32(multiple);
    }
  }
  // kU8 and kInvalid (a cap past kHardMaxPoints) both write one byte.
  if (cap_mode == Cap::kU16) {
    header_.U16(static_cast<uint16_t>(cap));
  } else if (cap_mode != Cap::kFuzzDefault) {
    header_.U8(static_cast<uint8_t>(cap));
  }
}

void RingCaseWriter::Weight(FuzzWriter& w, uint32_t weight) {
  if (weight == 0) {
    w.U8(0);
  } else if (weight <= 4) {
    w.U8(static_cast<uint8_t>(1 | (weight - 1) << 2));
  } else if (weight <= 0xFFFF) {
    w.U8(2).U16(static_cast<uint16_t>(weight));
  } else {
    w.U8(3).U32(weight);
  }
}

RingCaseWriter& RingCaseWriter::Op(FuzzWriter& w, uint32_t weight) {
  Weight(w, weight);
  ops_.push_back(w.bytes());
  return *this;
}

RingCaseWriter& RingCaseWriter::Text(std::string_view text, uint32_t weight) {
  FuzzWriter w;
  w.U8(kText).String(text);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Ipv4(std::array<uint8_t, 4> octets, uint16_t port, uint32_t weight,
                                     uint8_t variant) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kIpv4 | variant << 3));
  for (const uint8_t octet : octets) w.U8(octet);
  w.U16(port);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Ipv6(std::array<uint16_t, 8> groups, uint16_t port, uint32_t weight,
                                     uint8_t form, bool with_port) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kIpv6 | (form | (with_port ? 0 : 8)) << 3));
  uint8_t zero_mask = 0;
  for (int g = 0; g < 8; ++g) zero_mask |= static_cast<uint8_t>((groups[g] == 0) << g);
  w.U8(zero_mask);
  for (const uint16_t group : groups) {
    if (group != 0) w.U16(group);
  }
  w.U16(port);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Name(uint16_t n, uint32_t weight, uint8_t variant, uint16_t port) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kName | variant << 3)).U16(n);
  if (variant & 1) w.U16(port);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Unix(uint16_t n, uint32_t weight, uint8_t variant, uint8_t extra) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kUnix | variant << 3)).U16(n);
  if (variant & 2) w.U8(extra);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Respell(uint8_t index, uint8_t form, uint32_t weight) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kRespell | form << 3)).U8(index);
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Bulk(uint16_t base, uint8_t count, bool near_max, uint32_t weight) {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>(kBulk | (near_max ? kBulkNearMaxVariant : 0) << 3))
      .U16(base)
      .U8(near_max ? count : static_cast<uint8_t>(count - 1));
  return Op(w, weight);
}

RingCaseWriter& RingCaseWriter::Key(std::string_view key) {
  keys_.emplace_back(key);
  return *this;
}

std::string RingCaseWriter::Bytes() const {
  FuzzWriter w;
  w.Bytes(header_.bytes()).U8(static_cast<uint8_t>(ops_.size()));
  for (const std::string& op : ops_) w.Bytes(op);
  w.U8(static_cast<uint8_t>(keys_.size()));
  for (const std::string& key : keys_) w.String(key);
  return WithProbesAndMask(w);
}

}  // namespace chash::fuzz
