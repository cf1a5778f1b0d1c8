// The C++ spellings of one mounted archive's kernels (archive/cxx_names.hpp), by kernel index of
// its manifest: what a lookup by a C++ spelling searches (kernel_names.hpp), built once per archive
// on first need and kept beside it (mounted_archive.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "archive/manifest.hpp"

namespace sdm::runtime {

// The spellings of one archive's kernels (cxx_names.hpp), by kernel index of its ManifestIndex.
// Every demangled and normalised name is held in one buffer that the keys view; each name adds at
// most kMaxQualifications keys of each level (cxx_spellings), each no longer than the name, so the
// index is linear in the demangled text, which demangled_names() bounds.
class KernelNameIndex {
public:
    // `demangled[i]`: kernel i's demangled name, "" when it has none (demangled_names()).
    KernelNameIndex(const archive::ManifestIndex& manifest, const std::vector<std::string>& demangled);
    KernelNameIndex(const KernelNameIndex&) = delete;
    KernelNameIndex& operator=(const KernelNameIndex&) = delete;

    // As c++filt prints it; "" for a kernel whose name is not a mangled C++ symbol.
    std::string_view demangled(size_t kernel) const { return text(demangled_[kernel]); }
    // The kernels answering to `normalized` (normalize_cxx) at the most specific level that has
    // any: 0 the whole declaration, 1 a signature, 2 a name expression, 3 a name without template
    // arguments. nullopt: none.
    struct Match {
        int level;
        const std::vector<uint32_t>* kernels;
    };
    std::optional<Match> find(std::string_view normalized) const;
    // Unqualified names without template arguments ("fill"; an extern "C" kernel's own name) ->
    // the kernels of each, for the closest-kernel hint of a failed lookup.
    const std::unordered_map<std::string_view, std::vector<uint32_t>>& bases() const noexcept { return bases_; }

private:
    struct Span {
        size_t at{0}, size{0};
    };
    std::string_view text(Span s) const { return std::string_view(text_).substr(s.at, s.size); }
    std::string text_;  // every name's demangled then normalised text; the keys view it (never reallocated after the build)
    std::vector<Span> demangled_, normalized_;  // by kernel index
    std::array<std::unordered_map<std::string_view, std::vector<uint32_t>>, 4> levels_;
    std::unordered_map<std::string_view, std::vector<uint32_t>> bases_;
};

// Where a mounted archive keeps its index, built once on first need. `built` is set once the index
// is (a failed lookup's hint uses an index already built, and never waits for one: kernel_names.hpp).
struct KernelNamesOnce {
    std::once_flag once;
    std::unique_ptr<const KernelNameIndex> index;
    std::atomic<const KernelNameIndex*> built{nullptr};
};

}  // namespace sdm::runtime
