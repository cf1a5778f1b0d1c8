#include "artifact.hpp"

#include <nlohmann/json.hpp>

#include "image_variant.hpp"
#include "reference.hpp"

namespace sdm::tools::oci {
namespace {

nlohmann::json descriptor_json(const Descriptor& d) {
    nlohmann::json j{{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
    if (!d.annotations.empty()) j["annotations"] = d.annotations;
    return j;
}

Error manifest_error(const std::string& what, const std::string& why) {
    return make_error(ErrorCode::mismatch, "registry answer for " + what + ": " + why +
                                          " (sdm pulls only what sdm push or an OCI client wrote with artifactType " + kArtifactType +
                                          " and one layer of " + kLayerMediaType + "; docs/REGISTRY.md)");
}

Result<Descriptor> read_descriptor(const nlohmann::json& j, const std::string& what, const std::string& field) {
    if (!j.is_object() || !j.contains("mediaType") || !j["mediaType"].is_string() || !j.contains("digest") || !j["digest"].is_string() ||
        !j.contains("size") || !j["size"].is_number_unsigned())
        return manifest_error(what, field + " is not a descriptor (mediaType, digest, size)");
    Descriptor d{j["mediaType"].get<std::string>(), j["digest"].get<std::string>(), j["size"].get<uint64_t>(), {}};
    if (!is_sha256_digest(d.digest)) return manifest_error(what, field + "'s digest is not sha256: and 64 lower-case hex digits");
    return d;
}

}  // namespace

std::string artifact_manifest_json(const ArtifactManifest& m) {
    nlohmann::json j{{"schemaVersion", 2},
                     {"mediaType", kManifestMediaType},
                     {"artifactType", kArtifactType},
                     {"config", descriptor_json({kEmptyMediaType, kEmptyDigest, 2, {}})},
                     {"layers", nlohmann::json::array({descriptor_json(m.layer)})}};
    if (m.subject) j["subject"] = descriptor_json(*m.subject);
    if (!m.annotations.empty()) j["annotations"] = m.annotations;
    return j.dump();  // nlohmann's objects are sorted maps: canonical
}

Result<ArtifactManifest> parse_artifact_manifest(Bytes bytes, const std::string& what) {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()), reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object()) return manifest_error(what, "the manifest is not a JSON object");
    if (!j.contains("mediaType") || j["mediaType"] != kManifestMediaType) {
        if (parse_image_index(bytes, what))
            return make_error(ErrorCode::mismatch, "registry answer for " + what + ": this is sdm's image variant (sdm push --image: an OCI image " +
                                                       "for a pod's image volume), which sdm pull does not install; pull the tag sdm push wrote " +
                                                       "without --image (docs/REGISTRY.md, \"Pods: the image variant\")");
        return manifest_error(what, std::string("the manifest's mediaType is not ") + kManifestMediaType);
    }
    // The image spec: without artifactType, the config's mediaType is the artifact's type (what
    // clients that cannot set artifactType, such as the oras Python package, write).
    const bool typed = j.contains("artifactType");
    const bool has_config = j.contains("config") && j["config"].is_object() && j["config"].contains("mediaType");
    const auto& type = typed ? j["artifactType"] : has_config ? j["config"]["mediaType"] : j["mediaType"];
    // "'" appended to, not "'" + string: GCC 12 -O3 warns a false -Wrestrict on operator+(const char*,
    // string&&) (GCC bug 105651).
    if (type != kArtifactType)
        return manifest_error(what, std::string(typed ? "the manifest's artifactType" : "the manifest has no artifactType and its config's mediaType") +
                                        " is " + (type.is_string() ? std::string("'").append(type.get<std::string>().substr(0, 100)) + "'" : std::string("not a string")));
    if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].size() != 1)
        return manifest_error(what, "the manifest does not have exactly one layer");
    ArtifactManifest m;
    SDM_TRY_GET(layer, read_descriptor(j["layers"][0], what, "the layer"));
    m.layer = *layer;
    if (m.layer.media_type != kLayerMediaType) return manifest_error(what, "the layer's mediaType is '" + m.layer.media_type.substr(0, 100) + "'");
    if (m.layer.size == 0 || m.layer.size > kMaxArchiveBytes)
        return manifest_error(what, "the layer declares " + std::to_string(m.layer.size) + " bytes, outside 1 .. " + std::to_string(kMaxArchiveBytes));
    if (j.contains("subject")) {
        SDM_TRY_GET(subject, read_descriptor(j["subject"], what, "the subject"));
        m.subject = *subject;
    }
    if (j.contains("annotations") && j["annotations"].is_object())
        for (const auto& [key, value] : j["annotations"].items())
            if (value.is_string()) m.annotations[key] = value.get<std::string>();
    return m;
}

Result<std::vector<Referrer>> parse_referrers(Bytes bytes, const std::string& label) {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()), reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("manifests") || !j["manifests"].is_array())
        return make_error(ErrorCode::invalid_argument, label + ": the referrers index is not an OCI index (no \"manifests\" array)");
    std::vector<Referrer> out;
    for (const auto& m : j["manifests"]) {
        if (!m.is_object() || !m.contains("digest") || !m["digest"].is_string() || !m.contains("size") || !m["size"].is_number_unsigned())
            continue;
        Referrer r;
        r.manifest.digest = m["digest"].get<std::string>();
        if (!is_sha256_digest(r.manifest.digest)) continue;
        r.manifest.size = m["size"].get<uint64_t>();
        if (m.contains("mediaType") && m["mediaType"].is_string()) r.manifest.media_type = m["mediaType"].get<std::string>();
        if (m.contains("artifactType") && m["artifactType"].is_string()) r.artifact_type = m["artifactType"].get<std::string>();
        if (m.contains("annotations") && m["annotations"].is_object())
            for (const auto& [key, value] : m["annotations"].items())
                if (value.is_string()) r.manifest.annotations[key] = value.get<std::string>();
        out.push_back(std::move(r));
    }
    return out;
}

std::string index_json(const std::string& existing_index, const Descriptor& added, const std::string& artifact_type,
                       const std::map<std::string, std::string>& annotations) {
    auto j = nlohmann::json::parse(existing_index, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("manifests") || !j["manifests"].is_array())
        j = {{"schemaVersion", 2}, {"mediaType", kIndexMediaType}, {"manifests", nlohmann::json::array()}};
    auto& list = j["manifests"];
    for (auto it = list.begin(); it != list.end();)
        it = it->is_object() && it->contains("digest") && (*it)["digest"] == added.digest ? list.erase(it) : it + 1;
    auto entry = descriptor_json(added);
    entry["artifactType"] = artifact_type;
    if (!annotations.empty()) entry["annotations"] = annotations;
    list.push_back(std::move(entry));
    return j.dump();
}

}  // namespace sdm::tools::oci
