#include "kernel_name_index.hpp"

#include <algorithm>

#include "archive/cxx_names.hpp"

namespace sdm::runtime {

KernelNameIndex::KernelNameIndex(const archive::ManifestIndex& manifest, const std::vector<std::string>& demangled) {
    const auto kernels = manifest.kernels();
    const size_t count = std::min(kernels.size(), demangled.size());
    demangled_.resize(kernels.size());
    canonical_.resize(kernels.size());
    arguments_.resize(kernels.size());
    defaults_.resize(kernels.size());
    std::vector<std::string> canonical(count);
    size_t bytes = 0;
    for (size_t i = 0; i < count; ++i) {
        if (demangled[i].empty()) continue;
        canonical[i] = archive::canonical_cxx(demangled[i]);
        bytes += demangled[i].size() + canonical[i].size();
    }
    text_.reserve(bytes);  // exactly: the buffer is never reallocated, so views into it stay valid
    for (size_t i = 0; i < count; ++i) {
        if (demangled[i].empty()) continue;
        demangled_[i] = {text_.size(), demangled[i].size()};
        text_ += demangled[i];
        canonical_[i] = {text_.size(), canonical[i].size()};
        text_ += canonical[i];
    }
    canonical.clear();
    for (uint32_t i = 0; i < kernels.size(); ++i) {
        const auto add = [&](int level, std::string_view key) {
            auto& list = levels_[static_cast<size_t>(level)][key];
            if (list.empty() || list.back() != i) list.push_back(i);
        };
        const std::string_view name = text(canonical_[i]);
        if (name.empty()) {
            // An extern "C" kernel: its name is its base; a C++ one left without a demangled name:
            // its base parsed from the mangled name.
            bases_[archive::mangled_base_name(kernels[i].name)].push_back(i);
            continue;
        }
        const archive::CxxSpellings s = archive::cxx_spellings(name);
        add(0, s.declaration);
        for (const auto v : s.signatures) add(1, v);
        for (const auto v : s.expressions) add(2, v);
        for (const auto v : s.bases) add(3, v);
        bases_[archive::cxx_base_name(name)].push_back(i);
        if (!s.expressions.empty()) {
            const std::string_view arguments = archive::cxx_template_arguments(s.expressions.front());
            arguments_[i] = {static_cast<size_t>(arguments.data() - text_.data()), arguments.size()};
            defaults_[i] = !arguments.empty() && !archive::mangled_template_pack(kernels[i].name);
        }
    }
}

std::optional<KernelNameIndex::Match> KernelNameIndex::find(std::string_view canonical) const {
    for (size_t level = 0; level < levels_.size(); ++level)
        if (const auto it = levels_[level].find(canonical); it != levels_[level].end()) return Match{static_cast<int>(level), &it->second};
    return std::nullopt;
}

bool KernelNameIndex::spelled(uint32_t kernel, int level, std::string_view normalized) const {
    const std::string name = archive::normalize_cxx(demangled(kernel));
    const archive::CxxSpellings s = archive::cxx_spellings(name);
    const auto in = [&](const std::vector<std::string_view>& keys) { return std::find(keys.begin(), keys.end(), normalized) != keys.end(); };
    switch (level) {
    case 0: return s.declaration == normalized;
    case 1: return in(s.signatures);
    case 2: return in(s.expressions);
    default: return in(s.bases);
    }
}

std::vector<uint32_t> KernelNameIndex::find_with_defaults(std::string_view canonical) const {
    const std::string_view arguments = archive::cxx_template_arguments(canonical);
    if (arguments.empty()) return {};
    const auto it = levels_[3].find(canonical.substr(0, canonical.size() - arguments.size()));
    if (it == levels_[3].end()) return {};
    std::vector<uint32_t> out;
    for (const uint32_t k : it->second)
        if (defaults_[k] && archive::template_arguments_prefix(arguments, template_arguments(k))) out.push_back(k);
    return out;
}

}  // namespace sdm::runtime
