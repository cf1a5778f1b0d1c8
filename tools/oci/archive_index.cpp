#include "archive_index.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "reference.hpp"
#include "registry.hpp"

namespace sdm::tools::oci {
namespace {

nlohmann::json entry_json(const Descriptor& d, const std::string& target) {
    return {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}, {"artifactType", kArtifactType},
            {"annotations", {{kPartTargetAnnotation, target}}}};
}

Error index_error(const std::string& what, const std::string& why) {
    return make_error(ErrorCode::mismatch, "registry answer for " + what + ": the per-target index " + why +
                                               " (sdm pulls an index only as sdm push --per-target writes it; docs/REGISTRY.md, \"Per-target pulls\")");
}

// sm_ and two or three digits, the first not 0: the only part targets an index may name (a
// value from the registry, checked before it is printed or compared).
bool is_part_target(const std::string& text) {
    if (text.size() < 5 || text.size() > 6 || text.rfind("sm_", 0) != 0 || text[3] == '0') return false;
    return std::all_of(text.begin() + 3, text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One entry of the index, every field checked; its target ("all" or sm_XY) in `target`.
Result<Descriptor> read_entry(const nlohmann::json& m, size_t i, const std::string& what, std::string& target) {
    const std::string name = "entry " + std::to_string(i);
    if (!m.is_object() || !m.contains("mediaType") || m["mediaType"] != kManifestMediaType)
        return index_error(what, name + " is not a manifest descriptor (mediaType " + kManifestMediaType + ")");
    if (!m.contains("artifactType") || m["artifactType"] != kArtifactType) return index_error(what, name + "'s artifactType is not " + kArtifactType);
    if (!m.contains("digest") || !m["digest"].is_string() || !is_sha256_digest(m["digest"].get<std::string>()))
        return index_error(what, name + "'s digest is not sha256: and 64 lower-case hex digits");
    if (!m.contains("size") || !m["size"].is_number_unsigned() || m["size"].get<uint64_t>() == 0 || m["size"].get<uint64_t>() > kMaxManifestBytes)
        return index_error(what, name + "'s size is not 1 .. " + std::to_string(kMaxManifestBytes) + " bytes");
    const auto annotations = m.contains("annotations") && m["annotations"].is_object() ? m["annotations"] : nlohmann::json::object();
    if (!annotations.contains(kPartTargetAnnotation) || !annotations[kPartTargetAnnotation].is_string())
        return index_error(what, name + " has no " + kPartTargetAnnotation + " annotation");
    target = annotations[kPartTargetAnnotation].get<std::string>();
    if (target != kWholeArchive && !is_part_target(target))
        return index_error(what, name + "'s " + kPartTargetAnnotation + " is neither " + kWholeArchive + " nor sm_XY");
    return Descriptor{kManifestMediaType, m["digest"].get<std::string>(), m["size"].get<uint64_t>(), {}};
}

}  // namespace

std::string archive_index_json(const ArchiveIndex& index) {
    auto list = nlohmann::json::array({entry_json(index.whole, kWholeArchive)});
    for (const auto& [target, d] : index.parts) list.push_back(entry_json(d, target));
    nlohmann::json j{{"schemaVersion", 2}, {"mediaType", kIndexMediaType}, {"artifactType", kArtifactType}, {"manifests", std::move(list)}};
    if (!index.annotations.empty()) j["annotations"] = index.annotations;
    return j.dump();  // nlohmann's objects are sorted maps: canonical
}

bool is_image_index(Bytes bytes) {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()), reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                         nullptr, false);
    return j.is_object() && j.contains("mediaType") && j["mediaType"] == kIndexMediaType;
}

Result<ArchiveIndex> parse_archive_index(Bytes bytes, const std::string& what) {
    const auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()), reinterpret_cast<const char*>(bytes.data()) + bytes.size(),
                                         nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("mediaType") || j["mediaType"] != kIndexMediaType)
        return index_error(what, std::string("is not a JSON object of mediaType ") + kIndexMediaType);
    if (!j.contains("artifactType") || j["artifactType"] != kArtifactType) return index_error(what, std::string("'s artifactType is not ") + kArtifactType);
    if (!j.contains("manifests") || !j["manifests"].is_array() || j["manifests"].empty()) return index_error(what, "lists no manifests");
    const auto& list = j["manifests"];
    if (list.size() > kMaxIndexEntries)
        return index_error(what, "lists " + std::to_string(list.size()) + " entries, more than the " + std::to_string(kMaxIndexEntries) + " sdm reads");
    ArchiveIndex index;
    bool whole = false;
    for (size_t i = 0; i < list.size(); ++i) {
        std::string target;
        SDM_TRY_GET(d, read_entry(list[i], i, what, target));
        if (target == kWholeArchive) {
            if (whole) return index_error(what, std::string("lists more than one entry of ") + kPartTargetAnnotation + " " + kWholeArchive);
            whole = true;
            index.whole = std::move(*d);
        } else if (!index.parts.emplace(target, std::move(*d)).second) {
            return index_error(what, "lists the part for " + target + " twice");
        }
    }
    if (!whole) return index_error(what, std::string("lists no whole archive (") + kPartTargetAnnotation + " " + kWholeArchive + ")");
    if (j.contains("annotations") && j["annotations"].is_object())
        for (const auto& [key, value] : j["annotations"].items())
            if (value.is_string()) index.annotations[key] = value.get<std::string>();
    return index;
}

}  // namespace sdm::tools::oci
