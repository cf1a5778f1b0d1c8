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

// The spellings of one archive's kernels (cxx_names.hpp), by kernel index of its ManifestIndex,
// keyed by their canonical form (canonical_cxx: what a user's spelling is canonicalised to as
// well). Every demangled name and its canonical form are held in one buffer that the keys view
// (a canonical form is at most 3 times its name, plus 16 bytes); each name adds at most
// kMaxQualifications keys of each level (cxx_spellings), each no longer than its canonical form,
// so the index is linear in the demangled text, which demangled_names() bounds.
class KernelNameIndex {
public:
    // `demangled[i]`: kernel i's demangled name, "" when it has none (demangled_names()).
    KernelNameIndex(const archive::ManifestIndex& manifest, const std::vector<std::string>& demangled);
    KernelNameIndex(const KernelNameIndex&) = delete;
    KernelNameIndex& operator=(const KernelNameIndex&) = delete;

    // As c++filt prints it; "" for a kernel whose name is not a mangled C++ symbol.
    std::string_view demangled(size_t kernel) const { return text(demangled_[kernel]); }
    // The kernels answering to `canonical` (canonical_cxx) at the most specific level that has
    // any: 0 the whole declaration, 1 a signature, 2 a name expression, 3 a name without template
    // arguments. nullopt: none.
    struct Match {
        int level;
        const std::vector<uint32_t>* kernels;
    };
    std::optional<Match> find(std::string_view canonical) const;
    // Whether kernel `kernel` answers at `level` to `normalized` (normalize_cxx) as it is spelled,
    // not only in canonical form: what tells apart two kernels that one canonical form names
    // (f<3> of a template over int and f<3u> of one over unsigned). Costs the kernel's name.
    bool spelled(uint32_t kernel, int level, std::string_view normalized) const;
    // The kernels whose name expression `canonical` (a name expression, canonical_cxx) names with
    // trailing template arguments left to their defaults ("shift<int>": "shift<int, void>";
    // template_arguments_prefix), of those whose arguments hold no pack (mangled_template_pack).
    // Costs at most the canonical text of the kernels of that base name.
    std::vector<uint32_t> find_with_defaults(std::string_view canonical) const;
    // The canonical template arguments of kernel `kernel`'s name ("<float,256>"), "" without any.
    std::string_view template_arguments(uint32_t kernel) const { return text(arguments_[kernel]); }
    // Unqualified names without template arguments ("fill"; an extern "C" kernel's own name) ->
    // the kernels of each, for the closest-kernel hint of a failed lookup.
    const std::unordered_map<std::string_view, std::vector<uint32_t>>& bases() const noexcept { return bases_; }

private:
    struct Span {
        size_t at{0}, size{0};
    };
    std::string_view text(Span s) const { return std::string_view(text_).substr(s.at, s.size); }
    std::string text_;  // every name's demangled then canonical text; the keys view it (never reallocated after the build)
    std::vector<Span> demangled_, canonical_, arguments_;  // by kernel index
    std::vector<bool> defaults_;  // by kernel index: whether find_with_defaults may take it (no pack in its arguments)
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
