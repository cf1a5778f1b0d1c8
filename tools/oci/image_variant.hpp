// sdm's image variant (sdm push --image; docs/REGISTRY.md, "Pods: the image variant"): the archive
// as an OCI image a container runtime mounts as a Kubernetes image volume, which an artifact cannot
// be (containerd refuses an artifact's manifest). An image index lists one image manifest per
// platform (containerd pulls only an image whose config names the node's os and architecture, and
// GPU nodes are amd64 or arm64: Grace); the manifests differ only in their config's architecture
// and share the one layer (image_layer.hpp). The index and each manifest carry the archive's
// annotations (org.opencontainers.image.version, io.sdm.*) and io.sdm.archive-path, which marks
// the variant and says where the archive lies in the image; each config has them as labels.
// Every document is written canonically (keys sorted, no spaces): the same archive pushes the same digest.
#pragma once

#include <array>
#include <map>
#include <string>

#include "artifact.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools::oci {

inline constexpr const char* kImageConfigMediaType = "application/vnd.oci.image.config.v1+json";
// Uncompressed: the layer's digest is its diff_id, and no compressor's version can change its bytes.
inline constexpr const char* kImageLayerMediaType = "application/vnd.oci.image.layer.v1.tar";
// The annotation (and config label) that marks the image variant: the archive's path in the image.
inline constexpr const char* kArchivePathAnnotation = "io.sdm.archive-path";
// The platforms the index lists, all linux.
inline constexpr std::array<const char*, 2> kImageArchitectures = {"amd64", "arm64"};

struct ImageVariant {
    Descriptor layer;                                // the tar (image_layer.hpp): its digest is also its diff_id
    std::map<std::string, std::string> annotations;  // the archive's, io.sdm.archive-path among them
};

// The image config of `architecture`: os linux, rootfs of the one layer, the annotations as labels.
std::string image_config_json(const ImageVariant& image, const std::string& architecture);
// The image manifest of one platform: `config` (an image_config_json's descriptor) and the layer.
std::string image_manifest_json(const ImageVariant& image, const Descriptor& config);
// The index of the per-platform manifests, `manifests[i]` the descriptor of kImageArchitectures[i]'s.
std::string image_index_json(const ImageVariant& image, const std::array<Descriptor, kImageArchitectures.size()>& manifests);

// Reads an index a registry answered for `what` (a reference, for messages) as sdm's image variant:
// an OCI index of image manifests with sha256 digests whose annotations hold io.sdm.archive-path
// and io.sdm.kernel-abi. Returns its annotations.
Result<std::map<std::string, std::string>> parse_image_index(Bytes bytes, const std::string& what);

}  // namespace sdm::tools::oci
