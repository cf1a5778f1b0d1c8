// sdm push: an archive, checked as `sdm verify` checks it, to an OCI registry as sdm's artifact
// (docs/REGISTRY.md): the blobs the repository lacks uploaded, then the manifest stored by tag.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "archive/archive.hpp"
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "archive/signature_check.hpp"
#include "archive/verify.hpp"
#include "commands.hpp"
#include "oci/artifact.hpp"
#include "archive/identity.hpp"
#include "oci/registry.hpp"
#include "oci/sha256.hpp"

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
    SDM_TRY_GET(m, registry.manifest(digest, std::string(oci::kManifestMediaType) + ", " + oci::kIndexMediaType));
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

Result<std::string> push(const PushOptions& o, const oci::Reference& ref) {
    SDM_TRY_GET(map, archive::FileMap::open(o.archive));
    SDM_TRY_GET(a, archive::Archive::open_memory((*map)->bytes(), o.archive, *map));
    SDM_TRY(archive::verify_archive(*a));  // a registry never holds what sdm verify refuses
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
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
