#include "chash/servers_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "util/out_of_memory.h"
#include "util/read_file.h"
#include "util/text_lines.h"

namespace chash {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string Where(std::string_view source, size_t line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

Result<std::vector<ServerEntry>> ParseServersTextOrThrow(std::string_view text,
                                                         std::string_view source_name) {
  std::vector<ServerEntry> entries;
  TextLines lines(text);
  std::string_view line;
  size_t line_number = 0;
  while (lines.Next(line, line_number)) {
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<std::string_view> fields;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && IsSpace(line[i])) ++i;
      const size_t start = i;
      while (i < line.size() && !IsSpace(line[i])) ++i;
      if (i > start) fields.push_back(line.substr(start, i - start));
    }
    if (fields.empty()) continue;
    if (fields.size() > 2) {
      return Status(StatusCode::kBadArgument,
                    Where(source_name, line_number) + "expected 'ADDR [WEIGHT]', got " +
                        std::to_string(fields.size()) + " fields");
    }
    ServerEntry entry;
    entry.address.assign(fields[0]);
    entry.line = line_number;
    if (fields.size() == 2) {
      // Decimal digits of any count (leading zeros included, as nginx's
      // weight=); the value is checked as it grows so it cannot overflow.
      uint64_t weight = 0;
      bool valid = !fields[1].empty();
      for (const char c : fields[1]) {
        if (c < '0' || c > '9' || weight > UINT32_MAX) {
          valid = false;
          break;
        }
        weight = weight * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!valid || weight > UINT32_MAX) {
        return Status(StatusCode::kBadWeight,
                      Where(source_name, line_number) + "weight '" + std::string(fields[1]) +
                          "' is not an integer 0..4294967295");
      }
      entry.weight = static_cast<uint32_t>(weight);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

}  // namespace

Result<std::string> ReadFileBytes(const std::string& path) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return Status(StatusCode::kIoError, path + ": " + std::strerror(errno));
  }
  std::string bytes;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) bytes.append(buffer, got);
  if (std::ferror(file.get()) != 0) return Status(StatusCode::kIoError, path + ": read error");
  return bytes;
}

Result<std::vector<ServerEntry>> ParseServersText(std::string_view text,
                                                  std::string_view source_name) {
  return internal::CatchOutOfMemory("parsing a servers file",
                                    [&] { return ParseServersTextOrThrow(text, source_name); });
}

Result<std::vector<ServerEntry>> ReadServersFile(const std::string& path) {
  return internal::CatchOutOfMemory(
      "reading a servers file", [&]() -> Result<std::vector<ServerEntry>> {
        Result<std::string> bytes = ReadFileBytes(path);
        if (!bytes.ok()) return Status(bytes.status());
        return ParseServersTextOrThrow(bytes.value(), path);
      });
}

Result<Ring> BuildRingFromServers(const std::vector<ServerEntry>& servers,
                                  const RingOptions& options, std::string_view source_name) {
  RingBuilder builder(options);
  for (const ServerEntry& entry : servers) {
    Status status = builder.Add(entry.address, entry.weight);
    if (!status.ok()) {
      if (status.code() == StatusCode::kOutOfMemory) return status;
      try {
        return Status(status.code(), Where(source_name, entry.line) + status.message());
      } catch (const std::bad_alloc&) {
        return status;  // the error without its line
      }
    }
  }
  return std::move(builder).Build();
}

}  // namespace chash
