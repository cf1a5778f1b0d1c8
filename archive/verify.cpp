#include "verify.hpp"

#include <algorithm>

#include "image.hpp"
#include "manifest.hpp"

namespace sdm::archive {

Result<void> verify_archive(const Archive& a) {
    SDM_TRY(a.verify());
    for (size_t i = 0; i < a.entries().size(); ++i) {
        const Entry& e = a.entries()[i];
        if (e.kind == Kind::dictionary) continue;
        auto raw = a.read(i);
        if (!raw) return std::move(raw).error();
        if (e.kind == Kind::manifest) {
            auto m = decode_manifest(*raw);
            if (!m) return make_error(m.error().code, a.describe(i) + ": " + m.error().message);
            for (const KernelSpec& k : m->kernels) {
                const auto [first, last] = a.find_name(k.module);
                const bool has_image = std::any_of(a.entries().begin() + static_cast<std::ptrdiff_t>(first),
                                                   a.entries().begin() + static_cast<std::ptrdiff_t>(last),
                                                   [](const Entry& m) { return kind_has_arch(m.kind) || m.kind == Kind::fatbin; });
                if (!has_image)
                    return make_error(ErrorCode::corrupt, a.describe(i) + ": kernel " + k.name + " lives in module " + k.module +
                                                              ", which has no image in the archive");
            }
            continue;
        }
        auto info = check_declared_target(e.kind, e.sm, e.variant, *raw, a.describe(i));
        if (!info) return std::move(info).error();
    }
    return {};
}

}  // namespace sdm::archive
