// sdm push: an archive, checked as `sdm verify` checks it, to an OCI registry as sdm's artifact
// (docs/REGISTRY.md): the blobs the repository lacks uploaded, then the manifest stored by tag;
// with --per-target, a part per GPU target beside it and an index listing them at the tag. With
// --image, as sdm's image variant instead (docs/REGISTRY.md, "Pods: the image variant").
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "archive/identity.hpp"
#include "archive/key_files.hpp"
#include "archive/signature_check.hpp"
#include "archive/signing.hpp"
#include "archive/verify.hpp"
#include "archive_parts.hpp"
#include "commands.hpp"
#include "oci/archive_index.hpp"
#include "oci/artifact.hpp"
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

// One artifact: `bytes` (an archive) as its layer, its manifest stored under `key` (a tag; empty:
// its own digest, as the entries of an index are). Returns the stored manifest's descriptor.
Result<oci::Descriptor> push_artifact(oci::Registry& registry, const oci::Reference& ref, Bytes bytes, const std::map<std::string, std::string>& annotations,
                                      const std::string& key, const std::string& subject) {
    oci::ArtifactManifest m;
    m.layer = {oci::kLayerMediaType, oci::sha256_digest(bytes), bytes.size(), {{"org.opencontainers.image.title", ref.base_name() + ".sdma"}}};
    m.annotations = annotations;
    if (!subject.empty()) {
        SDM_TRY_GET(described, subject_descriptor(registry, subject));
        m.subject = *described;
    }
    SDM_TRY(upload_if_missing(registry, bytes, m.layer.digest));
    static constexpr char kEmpty[] = "{}";
    SDM_TRY(upload_if_missing(registry, Bytes(reinterpret_cast<const std::byte*>(kEmpty), 2), oci::kEmptyDigest));
    const std::string json = oci::artifact_manifest_json(m);
    const Bytes manifest_bytes(reinterpret_cast<const std::byte*>(json.data()), json.size());
    SDM_TRY_GET(stored, registry.put_manifest(key.empty() ? oci::sha256_digest(manifest_bytes) : key, manifest_bytes, oci::kManifestMediaType));
    const oci::Descriptor pushed{oci::kManifestMediaType, stored->digest, manifest_bytes.size(), {}};
    if (m.subject && !stored->subject_indexed) SDM_TRY(index_referrer(registry, subject, pushed, m.annotations));
    return pushed;
}

// --per-target's signing: a signed input must be signed by --sign KEY (checked here, its payloads
// then checked against their signed digests as the parts read them), so that every part carries the
// signer and version the whole archive carries; --sign with an unsigned input is refused too.
Result<void> check_part_signing(archive::Archive& a, const PushOptions& o) {
    const bool signed_input = a.signature_block().has_value();
    if (o.sign.empty()) {
        if (!signed_input) return {};
        return make_error(ErrorCode::untrusted, o.archive + " is signed (by " + archive::signer_ids(a).front() +
                                                    "), so its parts must be signed too: add --sign KEY, the secret key that signed it");
    }
    if (!signed_input)
        return make_error(ErrorCode::invalid_argument, o.archive + " is not signed, so its parts would carry a signature it lacks: sign it first (sdm sign " +
                                                           o.archive + " --key " + o.sign + "), or push without --sign");
    SDM_TRY_GET(key, archive::read_secret_key(o.sign));
    const std::vector<crypto::PublicKey> trusted{crypto::public_half(*key)};
    SDM_TRY_GET(id, archive::key_id(trusted.front()));
    SDM_TRY_GET(check, archive::check_signatures(a, trusted));
    if (check->outcome != archive::SignatureCheck::Outcome::verified)
        return make_error(ErrorCode::untrusted, o.archive + " " + check->why({*id}) + ": --sign " + o.sign +
                                                    " signs parts only of an archive it signed (its parts then carry the same signer)");
    return a.enforce_digests();
}

// --per-target: the whole archive and a part per GPU target, each stored by its digest, then the
// index listing them at the tag. Prints the whole archive's and each part's; returns the index's digest.
Result<std::string> push_per_target(const PushOptions& o, const oci::Reference& ref, oci::Registry& registry, const archive::Archive& a) {
    const auto targets = part_targets(a);
    if (targets.size() + 1 > oci::kMaxIndexEntries)
        return make_error(ErrorCode::invalid_argument, fmt::format("{} has images for {} targets; an index lists at most {} entries", o.archive,
                                                                   targets.size(), oci::kMaxIndexEntries));
    oci::ArchiveIndex index;
    index.annotations = archive_annotations(a);
    SDM_TRY_GET(whole, push_artifact(registry, ref, a.bytes(), index.annotations, {}, {}));
    index.whole = *whole;
    fmt::print("whole {}/{}@{} ({} bytes)\n", ref.registry, ref.repository, whole->digest, a.bytes().size());  // what a client that reads no index pulls
    for (const uint16_t sm : targets) {
        const std::string target = part_target_name(sm);
        SDM_TRY_GET(bytes, write_part(a, sm, o.sign));
        SDM_TRY_GET(part, archive::Archive::open_memory(*bytes, "part " + target + " of " + o.archive));
        auto annotations = archive_annotations(*part);
        annotations[oci::kPartTargetAnnotation] = target;
        SDM_TRY_GET(pushed, push_artifact(registry, ref, *bytes, annotations, {}, {}));
        fmt::print("part {} {}/{}@{} ({} bytes)\n", target, ref.registry, ref.repository, pushed->digest, bytes->size());
        index.parts[target] = *pushed;
    }
    const std::string json = oci::archive_index_json(index);
    SDM_TRY_GET(stored, registry.put_manifest(ref.tag, Bytes(reinterpret_cast<const std::byte*>(json.data()), json.size()), oci::kIndexMediaType));
    return stored->digest;
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
    if (o.per_target) SDM_TRY(check_part_signing(*a, o));
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    if (o.image) return push_image(*registry, ref, *a, (*map)->bytes());
    if (o.per_target) return push_per_target(o, ref, *registry, *a);
    SDM_TRY_GET(pushed, push_artifact(*registry, ref, (*map)->bytes(), archive_annotations(*a), ref.tag, o.subject));
    return pushed->digest;
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
