#include "layering.hpp"

#include <optional>

#include "runtime/archives/mounted_archive.hpp"
#include "common/text.hpp"


namespace sdm::runtime {

std::string device_text(const DeviceProperties& p, std::optional<DeviceClass> c) {
    return "device " + std::to_string(p.ordinal) + " (" + p.name + ", compute capability " + std::to_string(p.capability.major) + "." +
           std::to_string(p.capability.minor) + ", " + (c ? std::string("class ") + device_class_name(*c) : std::string("unclassified")) + ")";
}

Result<const archive::ManifestIndex::Kernel*> listed_kernel(const MountedArchive& m, std::string_view requested) {
    if (!m.manifest) return nullptr;
    const archive::QualifiedName q = archive::split_module(requested);
    if (!q.module.empty()) return m.manifest->find(q.name, q.module);
    const auto all = m.manifest->find_all(requested);
    if (all.size() <= 1) return all.empty() ? nullptr : &all.front();
    std::string modules, spellings;
    for (size_t i = 0; i < all.size(); ++i) {
        if (i == 8) {
            modules += " and " + std::to_string(all.size() - 8) + " more";
            break;
        }
        modules += (i == 0 ? "" : ", ") + printable(std::string(all[i].module));
        if (i < 2) spellings += (i == 0 ? "\"" : " or \"") + printable(archive::qualified_name(all[i].module, all[i].name)) + "\"";
    }
    const std::string name = shown_name(requested);
    return make_error(ErrorCode::ambiguous, "kernel " + name + " is defined by " + std::to_string(all.size()) + " modules of archive " + m.archive.label() + ": " +
                                                modules + "; fetch it by its module-qualified name, MODULE!NAME (" + spellings + ")");
}

Result<std::optional<std::string>> recorded_expression(const ArchiveSet& set, std::string_view requested) {
    const archive::QualifiedName q = archive::split_module(requested);
    if (q.name.size() > archive::kMaxNameExpressionBytes * 2) return std::optional<std::string>();  // longer than any recorded key
    const std::string key = archive::expression_key(q.name);
    const auto archives = set.archives();
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {  // the newest mount first
        const MountedArchive& m = **it;
        if (!m.manifest) continue;
        std::vector<const archive::ManifestIndex::Expression*> found;
        for (const auto& x : m.manifest->find_expression(key))
            if (q.module.empty() || x.module == q.module) found.push_back(&x);
        if (found.empty()) continue;
        if (found.size() == 1) return std::optional<std::string>(archive::qualified_name(found[0]->module, found[0]->symbol));
        std::string modules;
        for (size_t i = 0; i < found.size() && i < 8; ++i) modules += (i == 0 ? "" : ", ") + printable(std::string(found[i]->module));
        return make_error(ErrorCode::ambiguous, "name expression '" + shown_name(key) + "' is recorded for " + std::to_string(found.size()) +
                                                    " modules of archive " + m.archive.label() + ": " + modules + "; fetch it as MODULE!EXPRESSION (\"" +
                                                    printable(archive::qualified_name(found[0]->module, key.substr(0, kShownNameBytes))) + "\")");
    }
    return std::optional<std::string>();
}

Result<ServedBy> served_by(const ArchiveSet& set, Devices& devices, int32_t ordinal, const std::string& name) {
    const auto archives = set.archives();
    std::string mounted;
    std::optional<Error> newest_no_image;
    std::vector<std::string> passed_over;
    std::optional<DeviceProperties> props;
    const DriverSwitches switches = DriverSwitches::from_environment();
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {  // the newest mount first
        const MountedArchive& m = **it;
        mounted += (mounted.empty() ? "" : ", ") + m.archive.label();
        SDM_TRY_GET(spec, listed_kernel(m, name));
        if (*spec == nullptr) continue;
        if (!props) {  // the device is read once a listing archive is found
            SDM_TRY_GET(p, devices.properties(ordinal));
            props = *p;
        }
        // The SDM hardware matrix applies to the archives that declare it: on a device outside it
        // they are refused with the matrix's message; any other archive is served by capability.
        std::optional<DeviceClass> cls;
        if (auto c = devices.device_class(ordinal)) {
            cls = *c;
        } else if (c.error().code != ErrorCode::unsupported_device || m.follows_matrix()) {
            return std::move(c).error();
        }
        const std::string device = device_text(*props, cls);
        std::vector<ImageCandidate> candidates;
        const auto [first, last] = m.archive.find_name((*spec)->module);
        for (size_t i = first; i < last; ++i) {
            const auto& e = m.archive.entries()[i];
            if (archive::kind_has_arch(e.kind) || e.kind == archive::Kind::fatbin) candidates.push_back({i, e.kind, e.sm, e.variant});
        }
        const std::string module((*spec)->module);
        auto selected = select_image(candidates, {props->capability, cls, device}, module, "archive " + m.archive.label(), switches);
        if (selected) return ServedBy{*it, module, std::move(*selected), device, cls, std::move(passed_over), switches};
        if (selected.error().code != ErrorCode::no_image) return std::move(selected).error();
        passed_over.push_back(m.archive.label() + ": " + selected.error().message);
        if (!newest_no_image) newest_no_image = std::move(selected).error();
    }
    if (newest_no_image) {
        if (passed_over.size() > 1)
            newest_no_image->message += " (no older mounted archive listing " + name + " has one either: " + std::to_string(passed_over.size()) +
                                        " archives tried)";
        return *newest_no_image;
    }
    return make_error(ErrorCode::not_found, "kernel " + name + " is in no mounted archive (" + (mounted.empty() ? "none is mounted" : "mounted: " + mounted) +
                                                "); mount the archive that lists it");
}

}  // namespace sdm::runtime
