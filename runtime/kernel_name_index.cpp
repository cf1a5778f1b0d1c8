#include "kernel_name_index.hpp"

#include "archive/cxx_names.hpp"

namespace sdm::runtime {

KernelNameIndex::KernelNameIndex(const archive::ManifestIndex& manifest, std::vector<std::string> demangled) : demangled_(std::move(demangled)) {
    const auto kernels = manifest.kernels();
    demangled_.resize(kernels.size());
    normalized_.resize(kernels.size());  // sized once: the views below stay valid
    for (size_t i = 0; i < kernels.size(); ++i)
        if (!demangled_[i].empty()) normalized_[i] = archive::normalize_cxx(demangled_[i]);
    for (uint32_t i = 0; i < kernels.size(); ++i) {
        const auto add = [&](int level, std::string_view key) {
            auto& list = levels_[static_cast<size_t>(level)][key];
            if (list.empty() || list.back() != i) list.push_back(i);
        };
        if (normalized_[i].empty()) {
            bases_[kernels[i].name].push_back(i);  // an extern "C" kernel: its name is its base
            continue;
        }
        const archive::CxxSpellings s = archive::cxx_spellings(normalized_[i]);
        add(0, s.declaration);
        for (const auto v : s.signatures) add(1, v);
        for (const auto v : s.expressions) add(2, v);
        for (const auto v : s.bases) add(3, v);
        bases_[archive::cxx_base_name(normalized_[i])].push_back(i);
    }
}

std::optional<KernelNameIndex::Match> KernelNameIndex::find(std::string_view normalized) const {
    for (size_t level = 0; level < levels_.size(); ++level)
        if (const auto it = levels_[level].find(normalized); it != levels_[level].end()) return Match{static_cast<int>(level), &it->second};
    return std::nullopt;
}

}  // namespace sdm::runtime
