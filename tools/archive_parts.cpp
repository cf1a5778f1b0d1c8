#include "archive_parts.hpp"

#include <set>

#include "archive/manifest.hpp"
#include "archive/writer.hpp"
#include "runtime/select/image_fit.hpp"
#include "write_archive.hpp"

namespace sdm::tools {
namespace {

bool is_image(archive::Kind kind) { return archive::kind_has_arch(kind) || kind == archive::Kind::fatbin; }

Capability capability_of(uint16_t sm) { return {sm / 10, sm % 10}; }

// Whether the part for `sm` holds entry `e`: an image that can serve it, or the manifest. A
// dictionary is never copied (the writer trains its own).
bool part_holds(const archive::Entry& e, uint16_t sm) {
    return e.kind == archive::Kind::manifest || runtime::can_serve(e.kind, e.sm, e.variant, capability_of(sm));
}

// The manifest of a part: the whole's, less the kernels (and their name expressions) of modules
// the part holds no image of (a device of the part's target finds no image for them in the whole
// archive either, and `sdm verify` wants every listed kernel's module present).
Result<ByteVector> part_manifest(Bytes raw, const std::set<std::string, std::less<>>& modules) {
    SDM_TRY_GET(manifest, archive::decode_manifest(raw));
    std::erase_if(manifest->kernels, [&](const archive::KernelSpec& k) { return !modules.contains(k.module); });
    std::erase_if(manifest->expressions, [&](const archive::NameExpression& x) { return !modules.contains(x.module); });
    return archive::encode_manifest(*manifest);
}

}  // namespace

std::string part_target_name(uint16_t sm) { return archive::target_name(archive::Kind::cubin, sm, archive::Variant::base); }

std::optional<uint16_t> parse_part_target(std::string_view text) noexcept {
    const auto t = archive::parse_target(text);
    if (!t || t->kind != archive::Kind::cubin || t->variant != archive::Variant::base || part_target_name(t->sm) != text) return std::nullopt;
    return t->sm;
}

std::vector<uint16_t> part_targets(const archive::Archive& a) {
    std::set<uint16_t> targets;
    for (const auto& e : a.entries())
        if (archive::kind_has_arch(e.kind)) targets.insert(e.sm);
    return {targets.begin(), targets.end()};
}

Result<ByteVector> write_part(const archive::Archive& whole, uint16_t sm, const std::string& sign_key) {
    const auto& entries = whole.entries();
    std::set<std::string, std::less<>> modules;
    bool all_cubins_stored = true;
    for (const auto& e : entries) {
        if (is_image(e.kind) && part_holds(e, sm)) modules.emplace(e.name);
        if (e.kind == archive::Kind::cubin) all_cubins_stored = all_cubins_stored && e.codec == archive::Codec::stored;
    }
    const auto& h = whole.header();
    archive::WriterOptions writing;  // as sdm pack writes by default; cubins stored where the whole stores them
    writing.min_saving = archive::kDefaultMinSaving;
    // Frames where the whole has them: a part is read by whatever reads the whole.
    writing.frame_bytes = (h.required_features & archive::kFeatureFrames) != 0 ? archive::kDefaultFrameBytes : 0;
    writing.store_cubins = all_cubins_stored;
    writing.kernel_abi_major = h.kernel_abi_major;
    writing.kernel_abi_minor = h.kernel_abi_minor;
    writing.archive_version = h.archive_version;  // a host's rollback check reads the part's version as the whole's
    writing.base = h.base;
    writing.release_line = h.release_line;  // and its line: the node's mark is the line's whichever it installed
    archive::ArchiveWriter writer(writing);
    SDM_TRY(whole.for_each_entry([&](size_t i, Bytes raw) -> Result<void> {
        const archive::Entry& e = entries[i];
        if (!part_holds(e, sm)) return {};
        ByteVector bytes;
        if (e.kind == archive::Kind::manifest) {
            SDM_TRY_GET(manifest, part_manifest(raw, modules));
            bytes = std::move(*manifest);
        } else {
            bytes.assign(raw.begin(), raw.end());
        }
        return writer.add({std::string(e.name), e.kind, e.sm, e.variant, std::move(bytes)});
    }));
    return finish_verified_archive(writer, "part " + part_target_name(sm) + " of " + whole.label(), nullptr, sign_key);
}

Result<void> check_part(const archive::Archive& part, uint16_t sm) {
    bool serves = false;
    for (size_t i = 0; i < part.entries().size(); ++i) {
        const archive::Entry& e = part.entries()[i];
        if (!is_image(e.kind)) continue;
        if (!part_holds(e, sm))
            return make_error(ErrorCode::mismatch, "the part for " + part_target_name(sm) + " holds " + part.describe(i) + ", which cannot serve " +
                                                       part_target_name(sm) + ": it is not the part its index names; pull without --for-devices for the whole archive");
        serves = true;
    }
    if (!serves)
        return make_error(ErrorCode::mismatch, "the part for " + part_target_name(sm) + " holds no image; pull without --for-devices for the whole archive");
    return {};
}

}  // namespace sdm::tools
