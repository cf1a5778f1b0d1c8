// sdm pull: an archive from an OCI registry, installed only once it is whole and checked
// (docs/REGISTRY.md, "Pull"): the manifest resolved (by digest: its bytes hashed), the layer
// streamed into a staged file beside the target, its size and digest checked as it arrives, the
// archive checked (install_check.hpp), then renamed over the target.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "commands.hpp"
#include "install_check.hpp"
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

struct Pulled {
    std::string target;
    std::string digest;  // the manifest's
    uint64_t size{0};
};

Result<Pulled> pull(const PullOptions& o, const oci::Reference& ref, InstallCheck& install_check) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    SDM_TRY_GET(fetched, registry->manifest(ref.manifest_key(), oci::kManifestMediaType));
    SDM_TRY_GET(artifact, oci::parse_artifact_manifest(fetched->bytes, ref.text()));
    Pulled pulled{target_path(o, ref), fetched->digest, artifact->layer.size};
    SDM_TRY_GET(staged, StagedFile::create(pulled.target));
    StagedSink sink(*staged);
    SDM_TRY(registry->get_blob(artifact->layer.digest, artifact->layer.size, sink));
    SDM_TRY(staged->sync());
    SDM_TRY_GET(map, archive::FileMap::open(staged->path()));
    SDM_TRY_GET(a, archive::Archive::open_memory((*map)->bytes(), ref.text() + "@" + fetched->digest, *map));
    SDM_TRY(install_check.check(*a, pulled.target));
    SDM_TRY(staged->commit());
    return pulled;
}

// With --locked: the reference's digest from the lock file (the tag names only the entry).
Result<oci::Reference> locked_reference(const PullOptions& o, oci::Reference ref) {
    if (!ref.digest.empty()) return make_error(ErrorCode::invalid_argument, "reference '" + o.reference + "': --locked looks up a tag, not a digest");
    SDM_TRY_GET(lock, read_lock_file(o.lock_file, false));
    const LockEntry* entry = lock->find(ref.text());
    if (entry == nullptr)
        return make_error(ErrorCode::not_found, "lock file " + o.lock_file + " has no entry for " + ref.text() + " (sdm lock " + ref.text() + " adds it)");
    ref.digest = entry->digest;
    return ref;
}

}  // namespace

int run_pull(const PullOptions& o) {
    auto ref = oci::parse_reference(o.reference);
    if (ref && o.locked) ref = locked_reference(o, *ref);
    if (!ref) {
        fmt::print(stderr, "sdm pull: {}\n", ref.error().message);
        return 2;
    }
    auto install_check = InstallCheck::create(o.trust, "sdm pull");
    if (!install_check) {
        fmt::print(stderr, "sdm pull: {}\n", install_check.error().message);
        return 2;
    }
    auto pulled = pull(o, *ref, *install_check);
    if (!pulled) {
        fmt::print(stderr, "sdm pull: {}: {}; nothing was written\n", ref->text(), pulled.error().message);
        return 1;
    }
    if (!o.quiet) fmt::print("{}/{}@{} -> {} ({} bytes)\n", ref->registry, ref->repository, pulled->digest, pulled->target, pulled->size);
    return 0;
}

}  // namespace sdm::tools
