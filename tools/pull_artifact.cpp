// sdm pull's one archive (docs/REGISTRY.md, "Pull", "Per-target pulls"): the manifest resolved
// (by digest: its bytes hashed; through an index of sdm push --per-target: the whole archive's, or
// with --for-devices a part's), the layer streamed into a staged file beside the target, its size
// and digest checked as it arrives, the archive checked (install_check.hpp), then renamed over the target.
#include "pull_artifact.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <set>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "archive_parts.hpp"
#include "oci/archive_index.hpp"
#include "oci/artifact.hpp"
#include "oci/image_variant.hpp"
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

// The layer of the manifest `fetched` into the target: staged, its size and digest checked as it
// arrives, then (for a part: only images for `part_sm`, archive_parts.hpp) the install check, then renamed.
Result<Pulled> install_artifact(const PullOptions& o, const oci::Reference& ref, oci::Registry& registry, const oci::FetchedManifest& fetched,
                                std::optional<uint16_t> part_sm, InstallCheck& install_check, const StagedCheck& extra) {
    SDM_TRY_GET(artifact, oci::parse_artifact_manifest(fetched.bytes, ref.text()));
    Pulled pulled{target_path(o, ref), fetched.digest, artifact->layer.size, fetched.bytes.size() + artifact->layer.size, {}};
    SDM_TRY_GET(staged, StagedFile::create(pulled.target));
    StagedSink sink(*staged);
    SDM_TRY(registry.get_blob(artifact->layer.digest, artifact->layer.size, sink));
    SDM_TRY(staged->sync());
    SDM_TRY_GET(map, archive::FileMap::open(staged->path()));
    SDM_TRY_GET(a, archive::Archive::open_memory((*map)->bytes(), ref.text() + "@" + fetched.digest, *map));
    if (part_sm) SDM_TRY(check_part(*a, *part_sm));
    if (extra) SDM_TRY(extra(*a));  // before the install check: a mark is raised only once every check passed
    SDM_TRY(install_check.check(*a, pulled.target));
    SDM_TRY(staged->commit());
    return pulled;
}

Result<Pulled> pull_from_index(const PullOptions& o, const oci::Reference& ref, oci::Registry& registry, const oci::FetchedManifest& fetched,
                               InstallCheck& install_check);

// What a node pulls from an index of sdm push --per-target (docs/REGISTRY.md, "Per-target
// pulls"): without --for-devices the whole archive; with it, the part for the one target of this
// machine's GPUs where the index has one, else the whole archive, and why.
struct IndexChoice {
    oci::Descriptor manifest;
    std::optional<uint16_t> part_sm;
    std::string said;  // "part sm_90", "the whole archive: ..."
};

Result<IndexChoice> choose_from_index(const PullOptions& o, const oci::ArchiveIndex& index) {
    if (!o.for_devices) return IndexChoice{index.whole, std::nullopt, "the whole archive"};
    SDM_TRY_GET(targets, device_targets(o));
    if (targets->empty()) return make_error(ErrorCode::not_found, "--for-devices: the driver lists no GPU on this machine");
    if (targets->size() > 1)
        return IndexChoice{index.whole, std::nullopt, fmt::format("the whole archive: this machine's GPUs are of {} targets ({}), a part serves one",
                                                                  targets->size(), fmt::join(*targets, ", "))};
    const std::string& target = *targets->begin();
    const auto part = index.parts.find(target);
    const auto sm = parse_part_target(target);
    if (part == index.parts.end() || !sm) {
        std::vector<std::string> listed;
        for (const auto& [name, d] : index.parts) listed.push_back(name);
        return IndexChoice{index.whole, std::nullopt, fmt::format("the whole archive: the index has no part for {} (parts: {})", target,
                                                                  listed.empty() ? std::string("none") : fmt::format("{}", fmt::join(listed, ", ")))};
    }
    return IndexChoice{part->second, sm, "part " + target};
}

// The index `fetched` (asked for by tag or by digest: then its bytes were hashed) read, the entry
// chosen, its manifest fetched by the digest the index lists (hashed, its size the index's), then
// installed as any artifact; a part's annotation and images must be of the target the index names.
Result<Pulled> pull_from_index(const PullOptions& o, const oci::Reference& ref, oci::Registry& registry, const oci::FetchedManifest& fetched,
                               InstallCheck& install_check) {
    SDM_TRY_GET(index, oci::parse_archive_index(fetched.bytes, ref.text()));
    SDM_TRY_GET(choice, choose_from_index(o, *index));
    SDM_TRY_GET(manifest, registry.manifest(choice->manifest.digest, oci::kManifestMediaType));
    if (manifest->bytes.size() != choice->manifest.size)
        return make_error(ErrorCode::mismatch, fmt::format("registry {}: the manifest {} is {} bytes, its index says {}", registry.name(),
                                                           choice->manifest.digest, manifest->bytes.size(), choice->manifest.size));
    if (choice->part_sm) {
        SDM_TRY_GET(artifact, oci::parse_artifact_manifest(manifest->bytes, ref.text()));
        const auto named = artifact->annotations.find(oci::kPartTargetAnnotation);
        const std::string target = part_target_name(*choice->part_sm);
        if (named == artifact->annotations.end() || named->second != target)
            return make_error(ErrorCode::mismatch, "registry " + registry.name() + ": the manifest " + choice->manifest.digest + " the index lists for " +
                                                       target + " does not say " + oci::kPartTargetAnnotation + " " + target);
    }
    SDM_TRY_GET(pulled, install_artifact(o, ref, registry, *manifest, choice->part_sm, install_check, {}));
    pulled->transferred += fetched.bytes.size();
    pulled->from_index = "index " + fetched.digest + ": " + choice->said;
    return std::move(*pulled);
}

}  // namespace

Result<Pulled> pull_artifact(const PullOptions& o, const oci::Reference& ref, InstallCheck& install_check, const StagedCheck& extra) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    SDM_TRY_GET(fetched, registry->manifest(ref.manifest_key(), oci::kAcceptManifestOrIndex));
    // An index of sdm push --per-target; the image variant's index is refused by the artifact's parse, naming it.
    if (oci::is_image_index(fetched->bytes) && !oci::parse_image_index(fetched->bytes, ref.text()))
        return pull_from_index(o, ref, *registry, *fetched, install_check);
    return install_artifact(o, ref, *registry, *fetched, std::nullopt, install_check, extra);
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

}  // namespace sdm::tools
