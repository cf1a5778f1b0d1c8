// sdm pull: an archive from an OCI registry, installed only once it is whole and checked
// (pull_artifact.hpp), then with --for-devices the overlays for this machine's GPUs (overlays.hpp).
#include <fmt/format.h>

#include <optional>

#include "commands.hpp"
#include "install_check.hpp"
#include "lock_file.hpp"
#include "oci/reference.hpp"
#include "overlays.hpp"
#include "pull_artifact.hpp"

namespace sdm::tools {
namespace {

// With --locked: the lock file's entry for the reference (the tag names only the entry).
Result<LockEntry> locked_entry(const PullOptions& o, const oci::Reference& ref) {
    if (!ref.digest.empty()) return make_error(ErrorCode::invalid_argument, "reference '" + o.reference + "': --locked looks up a tag, not a digest");
    SDM_TRY_GET(lock, read_lock_file(o.lock_file, false));
    const LockEntry* entry = lock->find(ref.text());
    if (entry == nullptr)
        return make_error(ErrorCode::not_found, "lock file " + o.lock_file + " has no entry for " + ref.text() + " (sdm lock " + ref.text() + " adds it)");
    return *entry;
}

// The overlays pinned for this pull: --overlay's digests and, with --locked, the lock's.
Result<std::vector<std::string>> pinned_overlays(const PullOptions& o, const std::optional<LockEntry>& locked) {
    std::vector<std::string> pinned;
    for (const auto& d : o.overlays) {
        if (!oci::is_sha256_digest(d)) return make_error(ErrorCode::invalid_argument, "--overlay '" + d + "' is not sha256: and 64 lower-case hex digits");
        pinned.push_back(d);
    }
    if (locked)
        for (const auto& overlay : locked->overlays) pinned.push_back(overlay.digest);
    return pinned;
}

}  // namespace

int run_pull(const PullOptions& o) {
    auto ref = oci::parse_reference(o.reference);
    std::optional<LockEntry> locked;
    if (ref && o.locked) {
        if (auto entry = locked_entry(o, *ref); entry) {
            ref->digest = entry->digest;
            locked = std::move(*entry);
        } else {
            ref = std::move(entry).error();
        }
    }
    auto pinned = ref ? pinned_overlays(o, locked) : Result<std::vector<std::string>>(std::vector<std::string>{});
    if (!ref || !pinned) {
        fmt::print(stderr, "sdm pull: {}\n", (!ref ? ref.error() : pinned.error()).message);
        return 2;
    }
    auto install_check = InstallCheck::create(o.trust, "sdm pull");
    if (!install_check) {
        fmt::print(stderr, "sdm pull: {}\n", install_check.error().message);
        return 2;
    }
    auto pulled = pull_artifact(o, *ref, *install_check);
    if (!pulled) {
        fmt::print(stderr, "sdm pull: {}: {}; nothing was written\n", ref->text(), pulled.error().message);
        return 1;
    }
    if (!o.quiet)
        fmt::print("{}/{}@{} -> {} ({} bytes{}; {} bytes transferred)\n", ref->registry, ref->repository, pulled->digest, pulled->target, pulled->size,
                   pulled->from_index.empty() ? "" : "; " + pulled->from_index, pulled->transferred);
    if (o.for_devices) {
        auto overlays = pull_overlays(o, *ref, *pulled, *pinned, *install_check);
        if (!overlays) {
            fmt::print(stderr, "sdm pull: {}: the archive was installed, its overlays were not: {}\n", ref->text(), overlays.error().message);
            return 1;
        }
    }
    return 0;
}

}  // namespace sdm::tools
