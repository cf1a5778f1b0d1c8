// Kernel names as hosts know them (docs/LOADING.md, "Kernel names"): the C++ spellings of every
// kernel of a mounted archive, indexed on first need (a lookup by a name no archive lists, or a
// listing), never at mount; the resolution of a requested name to the one listed name it means;
// and the listing behind sdm_kernel_list_create and `sdm ls`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "archive/manifest.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class Runtime;
struct MountedArchive;

// The spellings of one archive's kernels (cxx_names.hpp), by kernel index of its ManifestIndex.
class KernelNameIndex {
public:
    // `demangled[i]`: kernel i's demangled name, "" when it has none (demangled_names()).
    KernelNameIndex(const archive::ManifestIndex& manifest, std::vector<std::string> demangled);
    KernelNameIndex(const KernelNameIndex&) = delete;
    KernelNameIndex& operator=(const KernelNameIndex&) = delete;

    // As c++filt prints it; "" for a kernel whose name is not a mangled C++ symbol.
    const std::string& demangled(size_t kernel) const { return demangled_[kernel]; }
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
    std::vector<std::string> demangled_;
    std::vector<std::string> normalized_;  // the keys view these (never reallocated after the build)
    std::array<std::unordered_map<std::string_view, std::vector<uint32_t>>, 4> levels_;
    std::unordered_map<std::string_view, std::vector<uint32_t>> bases_;
};

// Where a mounted archive keeps its index, built once on first need.
struct KernelNamesOnce {
    std::once_flag once;
    std::unique_ptr<const KernelNameIndex> index;
};

// The demangled names of `archive`'s kernels, by kernel index. The demangler's time and memory
// grow exponentially with a crafted name (back-references to back-references): the names of any
// archive but the embedded one are demangled in the JIT helper under its limits (at most 10 s and
// 1 GiB), unless the runtime's isolation policy is `never`; a batch the helper does not finish is
// split until the names it dies on are found (each left without a demangled name, at most 24
// helper runs in all), and what was left out, and why, is logged. Without a helper, none is.
std::vector<std::string> demangled_names(Runtime& runtime, const MountedArchive& archive);

// The index of `archive`, built on the first call (once, whatever the threads).
const KernelNameIndex& kernel_names(Runtime& runtime, const MountedArchive& archive);

// The name a mounted archive lists for `requested`, which none lists as it is: a C++ spelling
// matching one kernel (resolved across every mounted archive, at the most specific level that
// matches). ErrorCode::ambiguous listing the candidates; ErrorCode::not_found naming what is
// mounted, the closest kernels and how to list them.
Result<std::string> resolve_kernel_name(Runtime& runtime, std::string_view requested);

struct KernelListing {
    uint32_t archive_index{0};
    std::string name, demangled, module, signature, targets;
    bool shadowed{false};
};
// The kernels of mounted archive `archive_index` (nullopt: every kernel the runtime serves, each
// name once from the newest archive listing it), sorted by name. ErrorCode::not_found for an index
// past the mounted archives.
Result<std::vector<KernelListing>> list_kernels(Runtime& runtime, std::optional<uint32_t> archive_index);

}  // namespace sdm::runtime
