// sdm's OCI artifact (docs/REGISTRY.md): an OCI 1.1 image manifest whose artifactType is sdm's,
// whose config is the empty descriptor, and whose one layer holds the archive's bytes, with the
// archive's facts as annotations. Built for push; read back, every field checked, for pull.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools::oci {

inline constexpr const char* kManifestMediaType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kIndexMediaType = "application/vnd.oci.image.index.v1+json";
// The Accept of a manifest that may be an index (a registry answers an index only to a client that
// accepts one): a --subject, and what pull and lock resolve (an index is sdm's image variant).
inline const std::string kAcceptManifestOrIndex = std::string(kManifestMediaType) + ", " + kIndexMediaType;
inline constexpr const char* kArtifactType = "application/vnd.sdm.archive.v1";
inline constexpr const char* kLayerMediaType = "application/vnd.sdm.archive.layer.v1";
inline constexpr const char* kEmptyMediaType = "application/vnd.oci.empty.v1+json";
// The empty descriptor's content, "{}", and its digest (the image spec's).
inline constexpr const char* kEmptyDigest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
// An archive sdm pulls is at most this large (the format's own bound on an archive's size is larger;
// a registry's declared size above it is refused before a byte is read).
inline constexpr uint64_t kMaxArchiveBytes = uint64_t{16} << 30;

struct Descriptor {
    std::string media_type;
    std::string digest;
    uint64_t size{0};
    std::map<std::string, std::string> annotations;  // the layer's title (the file name ORAS writes), else none
};

struct ArtifactManifest {
    Descriptor layer;                                // the archive
    std::optional<Descriptor> subject;               // the manifest this one refers to
    std::map<std::string, std::string> annotations;  // org.opencontainers.image.version, io.sdm.*
};

// The manifest's bytes: canonical (keys sorted, no spaces), so the same archive pushes the same digest.
std::string artifact_manifest_json(const ArtifactManifest& manifest);
// Reads and checks a manifest a registry answered for `what` (a reference, for messages): media
// type, artifactType, the empty config, exactly one layer of sdm's type with a sha256 digest and a
// size of at most kMaxArchiveBytes.
Result<ArtifactManifest> parse_artifact_manifest(Bytes bytes, const std::string& what);
// The image index that lists `referrers` (manifest descriptors with their artifactType), the fallback tag schema's.
// The referrers an index lists (the referrers API's answer, or the fallback tag's index): each
// entry's descriptor, artifactType and annotations; entries that are not well formed are skipped.
struct Referrer {
    Descriptor manifest;
    std::string artifact_type;
};
Result<std::vector<Referrer>> parse_referrers(Bytes bytes, const std::string& label);
std::string index_json(const std::string& existing_index, const Descriptor& added, const std::string& artifact_type,
                       const std::map<std::string, std::string>& annotations);

}  // namespace sdm::tools::oci
