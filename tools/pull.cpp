// sdm pull: an archive from an OCI registry, installed only once it is whole and checked
// (docs/REGISTRY.md, "Pull"): the manifest resolved (by digest: its bytes hashed), the layer
// streamed into a staged file beside the target, its size and digest checked as it arrives, the
// archive checked (install_check.hpp), then renamed over the target.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "commands.hpp"
#include "install_check.hpp"
#include "lock_file.hpp"
#include "oci/artifact.hpp"
#include "oci/registry.hpp"
#include "runtime/runtime.hpp"
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
    SDM_TRY_GET(fetched, registry->manifest(ref.manifest_key(), oci::kAcceptManifestOrIndex));  // an image variant's index, to be named
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

// The cubin targets of this machine's GPUs ("sm_90"), as a host's runtime sees them.
Result<std::set<std::string>> device_targets(const PullOptions& o) {
    runtime::RuntimeOptions options;
    options.mount_embedded = false;
    options.cuda_driver = o.driver;
    options.log_level = runtime::LogLevel::off;
    runtime::Runtime rt(std::move(options));
    SDM_TRY_GET(count, rt.devices().count());
    std::set<std::string> targets;
    for (int32_t i = 0; i < *count; ++i) {
        SDM_TRY_GET(p, rt.devices().properties(i));
        targets.insert(fmt::format("sm_{}{}", p->capability.major, p->capability.minor));
    }
    return targets;
}

// Whether an overlay's io.sdm.targets ("compute_90,sm_90,sm_100") names one of `targets`.
bool serves_one_of(const std::string& listed, const std::set<std::string>& targets) {
    size_t at = 0;
    while (at <= listed.size()) {
        const size_t comma = std::min(listed.find(',', at), listed.size());
        if (targets.count(listed.substr(at, comma - at)) != 0) return true;
        at = comma + 1;
    }
    return false;
}

// --for-devices: the referrers of the archive just installed (the fallback tag sha256-HEX that
// sdm push --subject maintains) whose targets hold a cubin for a GPU here, each pulled by digest
// with the same checks, beside the archive. Returns how many were installed.
Result<size_t> pull_overlays(const PullOptions& o, const oci::Reference& ref, const Pulled& base, InstallCheck& install_check) {
    SDM_TRY_GET(targets, device_targets(o));
    if (targets->empty()) return make_error(ErrorCode::not_found, "--for-devices: the driver lists no GPU on this machine");
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    auto index = registry->manifest("sha256-" + base.digest.substr(7), oci::kIndexMediaType);
    if (!index) {
        if (index.error().code != ErrorCode::not_found) return std::move(index).error();
        if (!o.quiet) fmt::print("{}: no overlays were pushed for it (no referrers)\n", base.target);
        return size_t{0};
    }
    SDM_TRY_GET(referrers, oci::parse_referrers(index->bytes, ref.text() + " referrers"));
    size_t installed = 0;
    const std::string stem = base.target.substr(0, base.target.size() - (base.target.ends_with(".sdma") ? 5 : 0));
    for (const auto& r : *referrers) {
        const auto listed = r.manifest.annotations.find("io.sdm.targets");
        if (r.artifact_type != oci::kArtifactType || listed == r.manifest.annotations.end() || !serves_one_of(listed->second, *targets)) continue;
        PullOptions one = o;
        one.output = stem + ".overlay-" + r.manifest.digest.substr(7, 12) + ".sdma";  // from the digest's hex only: never a name from the registry
        oci::Reference by_digest = ref;
        by_digest.digest = r.manifest.digest;
        SDM_TRY_GET(pulled, pull(one, by_digest, install_check));
        if (!o.quiet) fmt::print("overlay {}@{} ({}) -> {}\n", ref.repository, pulled->digest, listed->second, pulled->target);
        ++installed;
    }
    if (installed == 0 && !o.quiet)
        fmt::print("{}: no overlay holds a cubin for this machine's GPUs ({})\n", base.target, fmt::join(*targets, ", "));
    return installed;
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
    if (o.for_devices) {
        auto overlays = pull_overlays(o, *ref, *pulled, *install_check);
        if (!overlays) {
            fmt::print(stderr, "sdm pull: {}: the archive was installed, its overlays were not: {}\n", ref->text(), overlays.error().message);
            return 1;
        }
    }
    return 0;
}

}  // namespace sdm::tools
