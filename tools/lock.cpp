// sdm lock: each reference resolved to its manifest's digest, checked as sdm's artifact (or its
// image variant's index, sdm push --image, or an index of sdm push --per-target: its digest, which
// pins the manifests it lists), and recorded in the lock file with its content version, for
// `sdm pull --locked`.
#include <fmt/format.h>

#include <charconv>

#include "commands.hpp"
#include "lock_file.hpp"
#include "overlays.hpp"
#include "oci/archive_index.hpp"
#include "oci/artifact.hpp"
#include "oci/image_variant.hpp"
#include "oci/registry.hpp"

namespace sdm::tools {
namespace {

// The annotations of sdm's artifact: a manifest's, its image variant's index's, or those of an
// index of sdm push --per-target (the whole archive's, copied onto it; the lock then records the
// index's digest, and the parts it lists are pinned through it, each fetched by the digest it gives).
Result<std::map<std::string, std::string>> artifact_annotations(Bytes bytes, const std::string& what) {
    if (auto image = oci::parse_image_index(bytes, what)) return image;
    if (oci::is_image_index(bytes)) {
        SDM_TRY_GET(index, oci::parse_archive_index(bytes, what));
        return std::move(index->annotations);
    }
    SDM_TRY_GET(artifact, oci::parse_artifact_manifest(bytes, what));
    return std::move(artifact->annotations);
}

Result<LockEntry> resolve(const LockOptions& o, const oci::Reference& ref) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    SDM_TRY_GET(fetched, registry->manifest(ref.manifest_key(), oci::kAcceptManifestOrIndex));
    SDM_TRY_GET(annotations, artifact_annotations(fetched->bytes, ref.text()));
    const auto version = annotations->find("org.opencontainers.image.version");
    oci::Reference named = ref;
    named.digest.clear();
    LockEntry entry{named.text(), fetched->digest, version == annotations->end() ? std::string() : version->second, std::nullopt, {}};
    if (const auto v = annotations->find("io.sdm.archive-version"); v != annotations->end()) {
        uint64_t number = 0;
        const auto [end, ec] = std::from_chars(v->second.data(), v->second.data() + v->second.size(), number);
        if (ec != std::errc() || end != v->second.data() + v->second.size())
            return make_error(ErrorCode::invalid_argument, ref.text() + ": the registry's io.sdm.archive-version '" + v->second + "' is not a whole number");
        entry.archive_version = number;
    }
    if (o.overlays) {
        SDM_TRY_GET(overlays, listed_overlays(*registry, fetched->digest, ref.text()));
        entry.overlays = std::move(*overlays);
    }
    return entry;
}

}  // namespace

int run_lock(const LockOptions& o) {
    auto lock = read_lock_file(o.lock_file, true);
    if (!lock) {
        fmt::print(stderr, "sdm lock: {}\n", lock.error().message);
        return 1;
    }
    for (const auto& text : o.references) {
        auto ref = oci::parse_reference(text);
        if (ref && ref->tag.empty()) ref = make_error(ErrorCode::invalid_argument, "reference '" + text + "': a lock maps a tag to its digest: name the tag");
        if (!ref) {
            fmt::print(stderr, "sdm lock: {}\n", ref.error().message);
            return 2;
        }
        auto entry = resolve(o, *ref);
        if (!entry) {
            fmt::print(stderr, "sdm lock: {}: {}; {} was not changed\n", text, entry.error().message, o.lock_file);
            return 1;
        }
        if (!o.quiet) fmt::print("{} -> {}{}\n", entry->reference, entry->digest, entry->content_version.empty() ? "" : " (" + entry->content_version + ")");
        if (!o.quiet)
            for (const auto& overlay : entry->overlays) fmt::print("  overlay {} ({})\n", overlay.digest, overlay.targets);
        lock->set(std::move(*entry));
    }
    if (auto written = write_lock_file(o.lock_file, *lock); !written) {
        fmt::print(stderr, "sdm lock: {}\n", written.error().message);
        return 1;
    }
    return 0;
}

}  // namespace sdm::tools
