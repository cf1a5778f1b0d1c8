#include "image_variant.hpp"

#include <nlohmann/json.hpp>

#include "reference.hpp"

namespace sdm::tools::oci {
namespace {

nlohmann::json descriptor_json(const Descriptor& d) { return {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}}; }

Error index_error(const std::string& what, const std::string& why) {
    return make_error(ErrorCode::mismatch, "registry answer for " + what + ": " + why + " (sdm's image variant is the index sdm push --image writes; docs/REGISTRY.md)");
}

}  // namespace

std::string image_config_json(const ImageVariant& image, const std::string& architecture) {
    const nlohmann::json j{{"architecture", architecture},
                           {"os", "linux"},
                           {"config", {{"Labels", image.annotations}}},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", nlohmann::json::array({image.layer.digest})}}}};
    return j.dump();  // nlohmann's objects are sorted maps: canonical
}

std::string image_manifest_json(const ImageVariant& image, const Descriptor& config) {
    const nlohmann::json j{{"schemaVersion", 2},
                           {"mediaType", kManifestMediaType},
                           {"config", descriptor_json(config)},
                           {"layers", nlohmann::json::array({descriptor_json(image.layer)})},
                           {"annotations", image.annotations}};
    return j.dump();
}

std::string image_index_json(const ImageVariant& image, const std::array<Descriptor, kImageArchitectures.size()>& manifests) {
    auto list = nlohmann::json::array();
    for (size_t i = 0; i < manifests.size(); ++i) {
        auto entry = descriptor_json(manifests[i]);
        entry["platform"] = {{"architecture", kImageArchitectures[i]}, {"os", "linux"}};
        list.push_back(std::move(entry));
    }
    const nlohmann::json j{{"schemaVersion", 2}, {"mediaType", kIndexMediaType}, {"manifests", std::move(list)}, {"annotations", image.annotations}};
    return j.dump();
}

Result<std::map<std::string, std::string>> parse_image_index(Bytes bytes, const std::string& what) {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()), reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("mediaType") || j["mediaType"] != kIndexMediaType)
        return index_error(what, std::string("the answer is not an OCI index (mediaType ") + kIndexMediaType + ")");
    if (!j.contains("manifests") || !j["manifests"].is_array() || j["manifests"].empty())
        return index_error(what, "the index lists no manifest");
    for (const auto& m : j["manifests"])
        if (!m.is_object() || !m.contains("mediaType") || m["mediaType"] != kManifestMediaType || !m.contains("digest") || !m["digest"].is_string() ||
            !is_sha256_digest(m["digest"].get<std::string>()))
            return index_error(what, std::string("an entry of the index is not an image manifest (") + kManifestMediaType + ") with a sha256 digest");
    std::map<std::string, std::string> annotations;
    if (j.contains("annotations") && j["annotations"].is_object())
        for (const auto& [key, value] : j["annotations"].items())
            if (value.is_string()) annotations[key] = value.get<std::string>();
    for (const char* key : {kArchivePathAnnotation, "io.sdm.kernel-abi"})
        if (!annotations.contains(key)) return index_error(what, std::string("the index has no ") + key + " annotation");
    return annotations;
}

}  // namespace sdm::tools::oci
