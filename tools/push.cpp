// sdm push: an archive, checked as `sdm verify` checks it, to an OCI registry as sdm's artifact
// (docs/REGISTRY.md): the blobs the repository lacks uploaded, then the manifest stored by tag.
// With --image, as sdm's image variant instead (docs/REGISTRY.md, "Pods: the image variant").
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "archive/signature_check.hpp"
#include "archive/verify.hpp"
#include "commands.hpp"
#include "oci/artifact.hpp"
#include "archive/identity.hpp"
#include "oci/image_layer.hpp"
#include "oci/image_variant.hpp"
#include "oci/registry.hpp"
#include "oci/sha256.hpp"
#include "staged_file.hpp"

namespace sdm::tools {
namespace {

// The archive's facts a registry shows without pulling it: content version, kernel ABI, targets, signers.
std::map<std::string, std::string> archive_annotations(const archive::Archive& a) {
    std::map<std::string, std::string> out;
    const auto& h = a.header();
    out["io.sdm.kernel-abi"] = fmt::format("{}.{}", h.kernel_abi_major, h.kernel_abi_minor);
    if (h.archive_version) out["io.sdm.archive-version"] = std::to_string(*h.archive_version);  // format 1.2 (docs/FORMAT.md, section 20)
    if (h.release_line) out["io.sdm.release-line"] = *h.release_line;
    if (h.base) out["io.sdm.base"] = archive::identity_text(*h.base);
    if (auto manifest = a.read_manifest(); manifest && *manifest && !(*manifest)->content_version.empty())
        out["org.opencontainers.image.version"] = (*manifest)->content_version;
    std::set<std::string> targets;
    for (const auto& e : a.entries())
        if (e.kind == archive::Kind::cubin || e.kind == archive::Kind::ptx || e.kind == archive::Kind::ltoir || e.kind == archive::Kind::fatbin)
            targets.insert(e.target());
    std::string list;
    for (const auto& t : targets) list += (list.empty() ? "" : ",") + t;
    if (!list.empty()) out["io.sdm.targets"] = list;
    std::string signers;
    for (const auto& id : archive::signer_ids(a)) signers += (signers.empty() ? "" : ",") + id;
    if (!signers.empty()) out["io.sdm.signers"] = signers;
    return out;
}

Result<void> upload_if_missing(oci::Registry& registry, Bytes bytes, const std::string& digest) {
    SDM_TRY_GET(present, registry.has_blob(digest));
    if (*present) return {};
    return registry.put_blob(bytes, digest);
}

// The subject's descriptor, from its manifest in the same repository (its media type and size).
Result<oci::Descriptor> subject_descriptor(oci::Registry& registry, const std::string& digest) {
    if (!oci::is_sha256_digest(digest))
        return make_error(ErrorCode::invalid_argument, "--subject '" + digest + "' is not sha256: and 64 lower-case hex digits (what sdm push printed)");
    SDM_TRY_GET(m, registry.manifest(digest, oci::kAcceptManifestOrIndex));
    const std::string type = m->media_type.substr(0, m->media_type.find(';'));
    return oci::Descriptor{type.empty() ? oci::kManifestMediaType : type, digest, m->bytes.size(), {}};
}

// Where the registry does not index referrers itself (no OCI-Subject answer), the fallback tag
// schema: the index tagged sha256-HEX of the subject lists this manifest too.
Result<void> index_referrer(oci::Registry& registry, const std::string& subject, const oci::Descriptor& pushed,
                            const std::map<std::string, std::string>& annotations) {
    const std::string tag = "sha256-" + subject.substr(7);
    std::string existing;
    auto old = registry.manifest(tag, oci::kIndexMediaType);
    if (old) existing.assign(reinterpret_cast<const char*>(old->bytes.data()), old->bytes.size());
    else if (old.error().code != ErrorCode::not_found) return old.error();
    const std::string index = oci::index_json(existing, pushed, oci::kArtifactType, annotations);
    SDM_TRY(registry.put_manifest(tag, Bytes(reinterpret_cast<const std::byte*>(index.data()), index.size()), oci::kIndexMediaType));
    return {};
}

// The image variant's layer, spooled to a file in $TMPDIR (an archive may be 16 GiB: the tool never
// holds a second copy in memory) and hashed as it is written; the file is gone when this returns,
// its mapping stays.
class SpoolSink final : public oci::BodySink {
public:
    explicit SpoolSink(StagedFile& file) : file_(file) {}
    Result<void> write(Bytes bytes) override {
        hash_.update(bytes);
        return file_.write(bytes);
    }
    std::string digest() { return hash_.finish(); }

private:
    StagedFile& file_;
    oci::Sha256 hash_;
};

struct SpooledLayer {
    std::shared_ptr<const archive::FileMap> map;
    std::string digest;
};

Result<SpooledLayer> spool_image_layer(const std::string& archive_path, Bytes archive) {
    std::error_code ec;
    const auto directory = std::filesystem::temp_directory_path(ec);
    if (ec) return make_error(ErrorCode::io, "the image layer needs a temporary directory: " + ec.message() + " (set TMPDIR to one)");
    SDM_TRY_GET(staged, StagedFile::create((directory / "sdm-image-layer.tar").string()));
    SpoolSink sink(*staged);
    if (auto written = oci::write_image_layer(archive_path, archive, sink); !written)
        return make_error(written.error().code, written.error().message + " (the layer is spooled to " + directory.string() +
                                                    ", as large as the archive: TMPDIR chooses another directory)");
    SDM_TRY_GET(map, archive::FileMap::open(staged->path()));
    return SpooledLayer{*map, sink.digest()};  // the staged file is removed here: never committed
}

Bytes text_bytes(const std::string& text) { return {reinterpret_cast<const std::byte*>(text.data()), text.size()}; }

// --image: the layer, then per platform its config and manifest (stored by digest), then the
// index that lists them, stored by tag. Returns the index's digest.
Result<std::string> push_image(oci::Registry& registry, const oci::Reference& ref, const archive::Archive& a, Bytes archive) {
    oci::ImageVariant image;
    image.annotations = archive_annotations(a);
    const std::string archive_path = oci::image_archive_path(ref.base_name());
    image.annotations[oci::kArchivePathAnnotation] = archive_path;
    SDM_TRY_GET(layer, spool_image_layer(archive_path, archive));
    image.layer = {oci::kImageLayerMediaType, layer->digest, layer->map->bytes().size(), {}};
    SDM_TRY(upload_if_missing(registry, layer->map->bytes(), image.layer.digest));
    std::array<oci::Descriptor, oci::kImageArchitectures.size()> manifests;
    for (size_t i = 0; i < manifests.size(); ++i) {
        const std::string config = oci::image_config_json(image, oci::kImageArchitectures[i]);
        const oci::Descriptor config_descriptor{oci::kImageConfigMediaType, oci::sha256_digest(text_bytes(config)), config.size(), {}};
        SDM_TRY(upload_if_missing(registry, text_bytes(config), config_descriptor.digest));
        const std::string manifest = oci::image_manifest_json(image, config_descriptor);
        SDM_TRY_GET(stored, registry.put_manifest(oci::sha256_digest(text_bytes(manifest)), text_bytes(manifest), oci::kManifestMediaType));
        manifests[i] = {oci::kManifestMediaType, stored->digest, manifest.size(), {}};
    }
    const std::string index = oci::image_index_json(image, manifests);
    SDM_TRY_GET(stored, registry.put_manifest(ref.tag, text_bytes(index), oci::kIndexMediaType));
    return stored->digest;
}

Result<std::string> push(const PushOptions& o, const oci::Reference& ref) {
    SDM_TRY_GET(map, archive::FileMap::open(o.archive));
    SDM_TRY_GET(a, archive::Archive::open_memory((*map)->bytes(), o.archive, *map));
    SDM_TRY(archive::verify_archive(*a));  // a registry never holds what sdm verify refuses
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    if (o.image) return push_image(*registry, ref, *a, (*map)->bytes());
    const Bytes bytes = (*map)->bytes();
    oci::ArtifactManifest m;
    m.layer = {oci::kLayerMediaType, oci::sha256_digest(bytes), bytes.size(), {{"org.opencontainers.image.title", ref.base_name() + ".sdma"}}};
    m.annotations = archive_annotations(*a);
    if (!o.subject.empty()) {
        SDM_TRY_GET(subject, subject_descriptor(*registry, o.subject));
        m.subject = *subject;
    }
    SDM_TRY(upload_if_missing(*registry, bytes, m.layer.digest));
    static constexpr char kEmpty[] = "{}";
    SDM_TRY(upload_if_missing(*registry, Bytes(reinterpret_cast<const std::byte*>(kEmpty), 2), oci::kEmptyDigest));
    const std::string json = oci::artifact_manifest_json(m);
    const Bytes manifest_bytes(reinterpret_cast<const std::byte*>(json.data()), json.size());
    SDM_TRY_GET(stored, registry->put_manifest(ref.tag, manifest_bytes, oci::kManifestMediaType));
    if (m.subject && !stored->subject_indexed)
        SDM_TRY(index_referrer(*registry, o.subject, {oci::kManifestMediaType, stored->digest, manifest_bytes.size(), {}}, m.annotations));
    return stored->digest;
}

}  // namespace

int run_push(const PushOptions& o) {
    auto ref = oci::parse_reference(o.reference);
    if (ref && !ref->digest.empty()) ref = make_error(ErrorCode::invalid_argument, "reference '" + o.reference + "': push names a tag, not a digest (the digest is what push prints)");
    if (!ref) {
        fmt::print(stderr, "sdm push: {}\n", ref.error().message);
        return 2;
    }
    auto digest = push(o, *ref);
    if (!digest) {
        fmt::print(stderr, "sdm push: {} not pushed to {}: {}\n", o.archive, ref->text(), digest.error().message);
        return 1;
    }
    fmt::print("{}/{}@{}\n", ref->registry, ref->repository, *digest);
    return 0;
}

}  // namespace sdm::tools
