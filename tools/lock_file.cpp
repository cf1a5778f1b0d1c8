#include "lock_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sys/stat.h>

#include "archive/file_map.hpp"
#include "oci/reference.hpp"

namespace sdm::tools {
namespace {

constexpr int kLockVersion = 1;
constexpr off_t kMaxLockBytes = 16 << 20;
constexpr size_t kMaxLockedOverlays = 64;  // one per GPU target: far more than a fleet has

Error lock_error(const std::string& path, const std::string& why) {
    return make_error(ErrorCode::invalid_argument, "lock file " + path + ": " + why + " (sdm lock writes it; docs/REGISTRY.md)");
}

Result<LockEntry> read_entry(const nlohmann::json& j, const std::string& path) {
    for (const char* key : {"reference", "digest", "content_version"})
        if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return lock_error(path, std::string("an entry lacks \"") + key + "\"");
    LockEntry e{j["reference"].get<std::string>(), j["digest"].get<std::string>(), j["content_version"].get<std::string>(), std::nullopt, {}};
    if (j.contains("archive_version")) {
        if (!j["archive_version"].is_number_unsigned()) return lock_error(path, "the archive_version of an entry is not a whole number");
        e.archive_version = j["archive_version"].get<uint64_t>();
    }
    if (j.contains("overlays")) {
        if (!j["overlays"].is_array() || j["overlays"].size() > kMaxLockedOverlays)
            return lock_error(path, "the overlays of " + e.reference + " are not a list of at most " + std::to_string(kMaxLockedOverlays));
        for (const auto& o : j["overlays"]) {
            if (!o.is_object() || !o.contains("digest") || !o["digest"].is_string() || !oci::is_sha256_digest(o["digest"].get<std::string>()) ||
                !o.contains("targets") || !o["targets"].is_string())
                return lock_error(path, "an overlay of " + e.reference + " lacks a sha256 \"digest\" or its \"targets\"");
            e.overlays.push_back({o["digest"].get<std::string>(), o["targets"].get<std::string>()});
        }
    }
    auto ref = oci::parse_reference(e.reference);
    if (!ref) return lock_error(path, ref.error().message);
    if (!ref->digest.empty() || ref->text() != e.reference) return lock_error(path, "'" + e.reference + "' is not written as REGISTRY/REPOSITORY:TAG");
    if (!oci::is_sha256_digest(e.digest)) return lock_error(path, "the digest of " + e.reference + " is not sha256: and 64 lower-case hex digits");
    return e;
}

}  // namespace

const LockEntry* LockFile::find(const std::string& reference) const {
    const auto it = std::find_if(entries.begin(), entries.end(), [&](const LockEntry& e) { return e.reference == reference; });
    return it == entries.end() ? nullptr : &*it;
}

void LockFile::set(LockEntry entry) {
    std::erase_if(entries, [&](const LockEntry& e) { return e.reference == entry.reference; });
    entries.push_back(std::move(entry));
    std::sort(entries.begin(), entries.end(), [](const LockEntry& a, const LockEntry& b) { return a.reference < b.reference; });
}

Result<LockFile> read_lock_file(const std::string& path, bool missing_ok) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
        if (missing_ok) return LockFile{};
        return make_error(ErrorCode::io, "lock file " + path + " does not exist (sdm lock REF... writes it)");
    }
    if (!S_ISREG(st.st_mode) || st.st_size > kMaxLockBytes) return lock_error(path, "not a regular file of at most 16 MiB");
    SDM_TRY_GET(bytes, archive::read_file(path));
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes->data()), reinterpret_cast<const char*>(bytes->data()) + bytes->size(),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("lock_version") || j["lock_version"] != kLockVersion || !j.contains("archives") ||
        !j["archives"].is_array())
        return lock_error(path, "not a JSON object with \"lock_version\": 1 and \"archives\"");
    LockFile lock;
    for (const auto& item : j["archives"]) {
        SDM_TRY_GET(entry, read_entry(item, path));
        if (lock.find(entry->reference) != nullptr) return lock_error(path, entry->reference + " is listed twice");
        lock.set(std::move(*entry));
    }
    return lock;
}

Result<void> write_lock_file(const std::string& path, const LockFile& lock) {
    nlohmann::json j{{"lock_version", kLockVersion}, {"archives", nlohmann::json::array()}};
    for (const auto& e : lock.entries) {
        j["archives"].push_back({{"reference", e.reference}, {"digest", e.digest}, {"content_version", e.content_version}});
        if (e.archive_version) j["archives"].back()["archive_version"] = *e.archive_version;
        for (const auto& o : e.overlays) j["archives"].back()["overlays"].push_back({{"digest", o.digest}, {"targets", o.targets}});
    }
    const std::string text = j.dump(2) + "\n";
    return archive::write_file_atomic(path, Bytes(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

}  // namespace sdm::tools
