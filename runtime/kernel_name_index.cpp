#include "kernel_name_index.hpp"

#include "archive/cxx_names.hpp"

namespace sdm::runtime {

KernelNameIndex::KernelNameIndex(const archive::ManifestIndex& manifest, const std::vector<std::string>& demangled) {
    const auto kernels = manifest.kernels();
    demangled_.resize(kernels.size());
    normalized_.resize(kernels.size());
    size_t bytes = 0;
    for (size_t i = 0; i < kernels.size() && i < demangled.size(); ++i) bytes += 2 * demangled[i].size();
    text_.reserve(bytes);  // normalising never lengthens a name: the buffer is never reallocated, so views into it stay valid
    for (size_t i = 0; i < kernels.size() && i < demangled.size(); ++i) {
        if (demangled[i].empty()) continue;
        demangled_[i] = {text_.size(), demangled[i].size()};
        text_ += demangled[i];
        const std::string normalized = archive::normalize_cxx(demangled[i]);
        normalized_[i] = {text_.size(), normalized.size()};
        text_ += normalized;
    }
    for (uint32_t i = 0; i < kernels.size(); ++i) {
        const auto add = [&](int level, std::string_view key) {
            auto& list = levels_[static_cast<size_t>(level)][key];
            if (list.empty() || list.back() != i) list.push_back(i);
        };
        const std::string_view normalized = text(normalized_[i]);
        if (normalized.empty()) {
            // An extern "C" kernel: its name is its base; a C++ one left without a demangled name:
            // its base parsed from the mangled name.
            bases_[archive::mangled_base_name(kernels[i].name)].push_back(i);
            continue;
        }
        const archive::CxxSpellings s = archive::cxx_spellings(normalized);
        add(0, s.declaration);
        for (const auto v : s.signatures) add(1, v);
        for (const auto v : s.expressions) add(2, v);
        for (const auto v : s.bases) add(3, v);
        bases_[archive::cxx_base_name(normalized)].push_back(i);
    }
}

std::optional<KernelNameIndex::Match> KernelNameIndex::find(std::string_view normalized) const {
    for (size_t level = 0; level < levels_.size(); ++level)
        if (const auto it = levels_[level].find(normalized); it != levels_[level].end()) return Match{static_cast<int>(level), &it->second};
    return std::nullopt;
}

}  // namespace sdm::runtime
