// The C API's snapshot sections (chash_c.h): loading, writing and
// inspecting snapshot files, and the reloader of a watched path.
#include "capi/capi_internal.h"

using namespace chash::capi;  // the helpers of every entry point

// ---- Snapshots ------------------------------------------------------------------

namespace {

constexpr uint32_t kKnownLoadFlags = CHASH_LOAD_SKIP_CHECKSUM | CHASH_LOAD_VERIFY_POINTS_DIGEST;

int SnapshotOptionsFrom(const char* function, const chash_snapshot_options* given,
                        chash::SnapshotLoadOptions* load) {
  chash_snapshot_options options;
  if (const int code = ReadGrowingStruct(function, "options", given, options)) return code;
  if (options.mode > CHASH_LOAD_COPY) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(function) + ": options->mode " +
                                          std::to_string(options.mode) +
                                          " is none of CHASH_LOAD_SEALED, _MAP, _COPY");
  }
  if ((options.flags & ~kKnownLoadFlags) != 0) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(function) + ": options->flags " +
                                          std::to_string(options.flags) +
                                          " holds flags this library does not know");
  }
  load->mode = static_cast<chash::SnapshotLoadMode>(options.mode);
  load->verify_checksum = (options.flags & CHASH_LOAD_SKIP_CHECKSUM) == 0;
  load->verify_points_digest = (options.flags & CHASH_LOAD_VERIFY_POINTS_DIGEST) != 0;
  load->threads = options.threads;
  load->min_config_version = options.min_config_version;
  load->max_file_bytes = options.max_file_bytes;
  if (options.n_trusted_keys > 0 && options.trusted_keys == nullptr) {
    return NullArgument(function, "options->trusted_keys");
  }
  load->trusted_keys.resize(options.n_trusted_keys);
  for (size_t i = 0; i < options.n_trusted_keys; ++i) {
    std::memcpy(load->trusted_keys[i].bytes.data(),
                options.trusted_keys + i * CHASH_PUBLIC_KEY_SIZE, CHASH_PUBLIC_KEY_SIZE);
  }
  return CHASH_OK;
}

int NewSnapshot(chash::Result<std::shared_ptr<const chash::RingSnapshot>> loaded,
                chash_snapshot** out) {
  if (!loaded.ok()) return Fail(loaded.status());
  *out = new chash_snapshot{std::move(loaded).value()};
  return CHASH_OK;
}

// chash_snapshot_load and _load_bytes, which differ only in where the file's
// bytes come from (`source`, checked for NULL): the options read, then
// `load_with` them, the snapshot handed back through `out`.
template <typename LoadWith>
int LoadSnapshotOut(const char* function, Needed source, const chash_snapshot_options* options,
                    chash_snapshot** out, LoadWith&& load_with) noexcept {
  return HandleOut(function, out, {source}, [&] {
    chash::SnapshotLoadOptions load;
    if (const int code = SnapshotOptionsFrom(function, options, &load)) return code;
    return NewSnapshot(load_with(load), out);
  });
}

}  // namespace

extern "C" {

int chash_snapshot_load(const char* path, const chash_snapshot_options* options,
                        chash_snapshot** out) noexcept {
  return LoadSnapshotOut(
      "chash_snapshot_load", {"path", path == nullptr}, options, out,
      [&](const chash::SnapshotLoadOptions& load) { return chash::LoadSnapshot(path, load); });
}

int chash_snapshot_load_bytes(const void* bytes, size_t n, const chash_snapshot_options* options,
                              chash_snapshot** out) noexcept {
  return LoadSnapshotOut("chash_snapshot_load_bytes", {"bytes", bytes == nullptr && n > 0}, options,
                         out, [&](const chash::SnapshotLoadOptions& load) {
                           return chash::LoadSnapshotFromBytes(View(bytes, n), load);
                         });
}

int chash_snapshot_verify(const char* path, const chash_snapshot_options* options) noexcept {
  chash_snapshot* snapshot = nullptr;
  const int code = chash_snapshot_load(path, options, &snapshot);
  chash_snapshot_free(snapshot);
  return code;
}

void chash_snapshot_free(chash_snapshot* snapshot) noexcept { delete snapshot; }

int chash_snapshot_ring(const chash_snapshot* snapshot, chash_ring** out) noexcept {
  return HandleOut("chash_snapshot_ring", out, {{"snapshot", snapshot == nullptr}}, [&] {
    *out = new chash_ring(chash::RingOf(snapshot->snapshot));
    return CHASH_OK;
  });
}

int chash_snapshot_get_info(const chash_snapshot* snapshot, chash_snapshot_info* out) noexcept {
  if (snapshot == nullptr) return NullArgument("chash_snapshot_get_info", "snapshot");
  if (out == nullptr) return NullArgument("chash_snapshot_get_info", "out");
  const chash::SnapshotInfo& info = snapshot->snapshot->info();
  chash_snapshot_info value{};
  value.size = sizeof value;
  value.major_version = info.major_version;
  value.minor_version = info.minor_version;
  value.file_bytes = info.file_bytes;
  value.config_version = info.config_version;
  value.created_unix_seconds = info.created_unix_seconds;
  value.expires_unix_seconds = info.expires_unix_seconds;
  value.flavor = static_cast<uint32_t>(info.flavor);
  value.point_multiple = info.point_multiple;
  value.nodes = info.nodes;
  value.subsets = static_cast<uint32_t>(snapshot->snapshot->subsets().size());
  value.points = info.points;
  value.points_generated = info.points_generated;
  value.is_signed = info.is_signed ? 1 : 0;
  value.mode = static_cast<uint32_t>(snapshot->snapshot->mode());
  std::memcpy(value.key_id, info.key_id.data(), CHASH_KEY_ID_SIZE);
  std::memcpy(value.fingerprint, info.fingerprint.bytes.data(), CHASH_FINGERPRINT_SIZE);
  return WriteGrowingStruct("chash_snapshot_get_info", out, value);
}

const char* chash_snapshot_label(const chash_snapshot* snapshot) noexcept {
  return snapshot == nullptr ? nullptr : snapshot->snapshot->info().label.c_str();
}

const char* chash_snapshot_subset_name(const chash_snapshot* snapshot, uint32_t i) noexcept {
  if (snapshot == nullptr || i >= snapshot->snapshot->subsets().size()) return nullptr;
  return snapshot->snapshot->subsets()[i].name.c_str();
}

int chash_snapshot_subset(const chash_snapshot* snapshot, const char* name,
                          chash_node_mask** out) noexcept {
  constexpr const char* kName = "chash_snapshot_subset";
  return HandleOut(kName, out, {{"snapshot", snapshot == nullptr}, {"name", name == nullptr}}, [&] {
    const chash::NodeMask* found = snapshot->snapshot->FindSubset(name);
    if (found == nullptr) {
      std::string names;
      for (const chash::NamedSubset& subset : snapshot->snapshot->subsets()) {
        names += (names.empty() ? "" : ", ") + subset.name;
      }
      return Fail(CHASH_E_BAD_ARGUMENT,
                  std::string("no subset '") + name + "' in the snapshot" +
                      (names.empty() ? " (it has none)" : " (it has: " + names + ")"));
    }
    auto mask = std::make_unique<chash_node_mask>(chash_node_mask{*found});
    // NodeMask's copy reports running out of memory as an empty mask.
    if (mask->mask.size() != found->size()) throw std::bad_alloc();
    *out = mask.release();
    return CHASH_OK;
  });
}

int chash_public_key_read(const char* path, uint8_t* out) noexcept {
  if (path == nullptr) return NullArgument("chash_public_key_read", "path");
  if (out == nullptr) return NullArgument("chash_public_key_read", "out");
  return Guard([&] {
    chash::Result<chash::PublicKey> key = chash::ReadPublicKeyFile(path);
    if (!key.ok()) return Fail(key.status());
    std::memcpy(out, key.value().bytes.data(), CHASH_PUBLIC_KEY_SIZE);
    return CHASH_OK;
  });
}

// ---- Reloading ----------------------------------------------------------------------

}  // extern "C"

namespace {

constexpr uint32_t kKnownReloadFlags =
    CHASH_RELOAD_NO_SHARE | CHASH_RELOAD_NO_LAST_GOOD | CHASH_RELOAD_NO_WRITE | CHASH_RELOAD_DEFER;

// A candidate as the C struct says it; the snapshot as a new handle.
int WriteResult(const char* function, const chash::ReloadCandidate& candidate,
                chash_reload_result* out) {
  chash_reload_result value{};
  value.size = sizeof value;
  value.outcome = static_cast<uint32_t>(candidate.outcome);
  value.check = static_cast<uint32_t>(candidate.check);
  value.adopted = candidate.adopted ? 1 : 0;
  value.error = candidate.status.ok() ? CHASH_OK : CodeOf(candidate.status.code());
  value.token = candidate.token;
  if (candidate.snapshot) {
    value.config_version = candidate.snapshot->info().config_version;
    value.snapshot = new chash_snapshot{candidate.snapshot};
  }
  CopyMessage(value.message, candidate.status.message());
  const int code = WriteGrowingStruct(function, out, value);
  if (code != CHASH_OK) delete value.snapshot;
  return code;
}

int ResultSizeOk(const char* function, const chash_reload_result* out) {
  if (out->size < offsetof(chash_reload_result, snapshot) + sizeof(chash_snapshot*)) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(function) +
                                          ": out->size must cover the snapshot field (set it to "
                                          "sizeof(chash_reload_result))");
  }
  return CHASH_OK;
}

// chash_reloader_check and _adopt_shared: `next` of the reloader's
// SnapshotReloader (Check or AdoptShared) becomes its last candidate,
// written to `out`.
template <typename Next>
int NextCandidate(const char* function, chash_reloader* reloader, chash_reload_result* out,
                  const Next& next) noexcept {
  if (reloader == nullptr) return NullArgument(function, "reloader");
  if (out == nullptr) return NullArgument(function, "out");
  if (const int code = ResultSizeOk(function, out)) return code;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    reloader->candidate = next(*reloader->reloader);
    return WriteResult(function, reloader->candidate, out);
  });
}

// chash_reloader_accept and _refuse: `body` under the reloader's mutex if
// `candidate` is its last candidate (matched by token).
template <typename Body>
int OnLastCandidate(const char* function, chash_reloader* reloader,
                    const chash_reload_result* candidate, const Body& body) noexcept {
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    if (candidate->token != reloader->candidate.token) {
      return Fail(CHASH_E_BAD_ARGUMENT,
                  std::string(function) + ": not the reloader's last candidate");
    }
    return body();
  });
}

}  // namespace

extern "C" {

int chash_reloader_new(const char* path, const chash_reloader_options* options,
                       chash_reloader** out) noexcept {
  constexpr const char* kName = "chash_reloader_new";
  return HandleOut(kName, out, {{"path", path == nullptr}}, [&] {
    chash_reloader_options given;
    if (const int code = ReadGrowingStruct(kName, "options", options, given)) return code;
    if ((given.flags & ~kKnownReloadFlags) != 0) {
      return Fail(CHASH_E_BAD_ARGUMENT, std::string(kName) + ": options->flags " +
                                            std::to_string(given.flags) +
                                            " holds flags this library does not know");
    }
    chash::ReloadOptions reload;
    if (const int code = SnapshotOptionsFrom(kName, given.load, &reload.load)) return code;
    if (given.state_dir != nullptr) reload.state_dir = given.state_dir;
    if (given.name != nullptr) reload.name = given.name;
    reload.share = (given.flags & CHASH_RELOAD_NO_SHARE) == 0;
    reload.keep_last_good = (given.flags & CHASH_RELOAD_NO_LAST_GOOD) == 0;
    reload.write_state = (given.flags & CHASH_RELOAD_NO_WRITE) == 0;
    reload.defer_first_load = (given.flags & CHASH_RELOAD_DEFER) != 0;
    chash::Result<std::unique_ptr<chash::SnapshotReloader>> created =
        chash::SnapshotReloader::Create(path, std::move(reload));
    if (!created.ok()) return Fail(created.status());
    auto handle = std::make_unique<chash_reloader>();
    handle->reloader = std::move(created).value();
    *out = handle.release();
    return CHASH_OK;
  });
}

void chash_reloader_free(chash_reloader* reloader) noexcept { delete reloader; }

int chash_reloader_current(const chash_reloader* reloader, chash_snapshot** out) noexcept {
  return HandleOut("chash_reloader_current", out, {{"reloader", reloader == nullptr}}, [&] {
    std::shared_ptr<const chash::RingSnapshot> current = reloader->reloader->current();
    if (current) *out = new chash_snapshot{std::move(current)};
    return CHASH_OK;
  });
}

int chash_reloader_check(chash_reloader* reloader, chash_reload_result* out) noexcept {
  return NextCandidate("chash_reloader_check", reloader, out,
                       [](chash::SnapshotReloader& r) { return r.Check(); });
}

int chash_reloader_adopt_shared(chash_reloader* reloader, chash_reload_result* out) noexcept {
  return NextCandidate("chash_reloader_adopt_shared", reloader, out,
                       [](chash::SnapshotReloader& r) { return r.AdoptShared(); });
}

int chash_reloader_accept(chash_reloader* reloader, const chash_reload_result* candidate) noexcept {
  constexpr const char* kName = "chash_reloader_accept";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (candidate == nullptr) return NullArgument(kName, "candidate");
  return OnLastCandidate(kName, reloader, candidate,
                         [&] { return Fail(reloader->reloader->Accept(reloader->candidate)); });
}

int chash_reloader_refuse(chash_reloader* reloader, const chash_reload_result* candidate,
                          uint32_t check, const char* message) noexcept {
  constexpr const char* kName = "chash_reloader_refuse";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (candidate == nullptr) return NullArgument(kName, "candidate");
  if (check >= chash::kSnapshotCheckCount) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(kName) + ": check " + std::to_string(check) +
                                          " is no CHASH_CHECK_* value");
  }
  return OnLastCandidate(kName, reloader, candidate, [&] {
    reloader->reloader->Refuse(reloader->candidate, static_cast<chash::SnapshotCheck>(check),
                               message != nullptr ? message : "");
    return CHASH_OK;
  });
}

int chash_reloader_poll(chash_reloader* reloader) noexcept {
  if (reloader == nullptr) return NullArgument("chash_reloader_poll", "reloader");
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    reloader->candidate = chash::ReloadCandidate();
    return Fail(reloader->reloader->Poll());
  });
}

int chash_reloader_report(const chash_reloader* reloader, chash_reload_report* out) noexcept {
  if (reloader == nullptr) return NullArgument("chash_reloader_report", "reloader");
  if (out == nullptr) return NullArgument("chash_reloader_report", "out");
  return Guard([&] {
    const chash::ReloadReport report = reloader->reloader->report();
    chash_reload_report value{};
    value.size = sizeof value;
    value.last_check = static_cast<uint32_t>(report.last_check);
    value.serving_last_good = report.serving_last_good ? 1 : 0;
    value.state_error = report.state_error.ok() ? 0 : 1;
    value.last_error = report.last_check == chash::SnapshotCheck::kNone
                           ? CHASH_OK
                           : CodeOf(chash::CodeOfSnapshotCheck(report.last_check));
    value.served_version = report.served_version;
    value.highest_version = report.highest_version;
    value.accepted = report.accepted;
    value.adopted = report.adopted;
    value.refused = report.refused;
    value.last_refused_unix_seconds = report.last_refused_unix_seconds;
    value.checking_since_unix_seconds = report.checking_since_unix_seconds;
    CopyMessage(value.last_message, report.last_message);
    CopyMessage(value.state_message, report.state_error.message());
    value.served_expires_unix_seconds = report.served_expires_unix_seconds;
    value.serving_expired = report.serving_expired ? 1 : 0;
    CopyMessage(value.state_file, report.state_file);
    return WriteGrowingStruct("chash_reloader_report", out, value);
  });
}

}  // extern "C"
