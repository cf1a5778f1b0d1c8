// sdm pull: an archive from an OCI registry, installed only once it is whole and checked
// (docs/REGISTRY.md, "Pull"): the manifest resolved (by digest: its bytes hashed), the layer
// streamed into a staged file beside the target, its size and digest checked as it arrives, the
// archive checked (install_check.hpp), then renamed over the target.
#include <fmt/format.h>

#include <optional>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "commands.hpp"
#include "install_check.hpp"
#include "overlays.hpp"
#include "pull.hpp"
#include "lock_file.hpp"
#include "oci/artifact.hpp"
#include "oci/registry.hpp"
#include "staged_file.hpp"

namespace sdm::tools {
namespace {

class StagedSink final : public oci::BodySink {
public:
    explicit StagedSink(StagedFile& file) : file_(file) {}
    Result<void> write(Bytes bytes) override { return file_.write(bytes); }

private:
    StagedFile& file_;
};

// -o FILE, else DIR/REPOSITORY-NAME.sdma (the repository's last component: [a-z0-9._-] only).
std::string target_path(const PullOptions& o, const oci::Reference& ref) {
    if (!o.output.empty()) return o.output;
    return (o.into.empty() ? std::string(".") : o.into) + "/" + ref.base_name() + ".sdma";
}

}  // namespace

Result<Pulled> pull_artifact(const PullOptions& o, const oci::Reference& ref, InstallCheck& install_check, const StagedCheck& extra) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    SDM_TRY_GET(fetched, registry->manifest(ref.manifest_key(), oci::kAcceptManifestOrIndex));  // an image variant's index, to be named
    SDM_TRY_GET(artifact, oci::parse_artifact_manifest(fetched->bytes, ref.text()));
    Pulled pulled{target_path(o, ref), fetched->digest, artifact->layer.size};
    SDM_TRY_GET(staged, StagedFile::create(pulled.target));
    StagedSink sink(*staged);
    SDM_TRY(registry->get_blob(artifact->layer.digest, artifact->layer.size, sink));
    SDM_TRY(staged->sync());
    SDM_TRY_GET(map, archive::FileMap::open(staged->path()));
    SDM_TRY_GET(a, archive::Archive::open_memory((*map)->bytes(), ref.text() + "@" + fetched->digest, *map));
    if (extra) SDM_TRY(extra(*a));  // first: a mark is raised only once every check passed
    SDM_TRY(install_check.check(*a, pulled.target));
    SDM_TRY(staged->commit());
    return pulled;
}

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
    if (!o.quiet) fmt::print("{}/{}@{} -> {} ({} bytes)\n", ref->registry, ref->repository, pulled->digest, pulled->target, pulled->size);
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
