#include "verify.hpp"

#include <algorithm>

#include "image.hpp"
#include "manifest.hpp"

namespace sdm::archive {

Result<void> verify_archive(const Archive& a) {
    // One walk: every entry decoded once (Archive::for_each_entry), parsed as its kind, then the padding.
    return a.verify([&](size_t i, Bytes raw) -> Result<void> {
        const Entry& e = a.entries()[i];
        if (e.kind == Kind::dictionary) return {};
        if (e.kind == Kind::manifest) {
            auto m = decode_manifest(raw);
            if (!m) return make_error(m.error().code, a.describe(i) + ": " + m.error().message);
            for (const KernelSpec& k : m->kernels) {
                const auto [first, last] = a.find_name(k.module);
                const bool has_image = std::any_of(a.entries().begin() + static_cast<std::ptrdiff_t>(first),
                                                   a.entries().begin() + static_cast<std::ptrdiff_t>(last),
                                                   [](const Entry& m) { return kind_has_arch(m.kind) || m.kind == Kind::fatbin; });
                if (!has_image)
                    return make_error(ErrorCode::archive_corrupt, a.describe(i) + ": kernel " + k.name + " lives in module " + k.module +
                                                              ", which has no image in the archive");
            }
            return {};
        }
        SDM_TRY_GET(info, check_declared_target(e.kind, e.sm, e.variant, raw, a.describe(i)));
        return {};
    });
}

}  // namespace sdm::archive
