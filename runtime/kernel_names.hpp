// Kernel names as hosts know them (docs/LOADING.md, "Kernel names"): the C++ spellings of every
// kernel of a mounted archive, indexed on first need (a lookup by a name no archive lists, or a
// listing), never at mount; the resolution of a requested name to the one listed name it means;
// and the listing behind sdm_kernel_list_create and `sdm ls`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/manifest.hpp"
#include "common/result.hpp"
#include "kernel_name_index.hpp"

namespace sdm::runtime {

struct MountedArchive;
class ArchiveSet;
class JitToolchain;

// The demangled names of `archive`'s kernels, by kernel index. The demangler's time and memory
// grow exponentially with a crafted name (back-references to back-references): the names of any
// archive but the embedded one are demangled in the JIT helper under its limits (at most 10 s and
// 1 GiB), unless the runtime's isolation policy is `never`; a batch the helper does not finish is
// split until the names it dies on are found (each left without a demangled name, at most 24
// helper runs in all), and what was left out, and why, is logged. Without a helper, none is.
std::vector<std::string> demangled_names(JitToolchain& jit, const MountedArchive& archive);

// The index of `archive`, built on the first call (once, whatever the threads).
const KernelNameIndex& kernel_names(JitToolchain& jit, const MountedArchive& archive);

// The name a mounted archive lists for `requested`, which none lists as it is: a C++ spelling
// matching one kernel (resolved across every mounted archive, at the most specific level that
// matches). ErrorCode::ambiguous listing the candidates; ErrorCode::not_found naming what is
// mounted, the closest kernels and how to list them.
Result<std::string> resolve_kernel_name(const ArchiveSet& archives, JitToolchain& jit, std::string_view requested);

struct KernelListing {
    uint32_t archive_index{0};
    std::string name, demangled, module, signature, targets;
    bool shadowed{false};
};
// The kernels of mounted archive `archive_index` (nullopt: every kernel the runtime serves, each
// name once from the newest archive listing it), sorted by name. ErrorCode::not_found for an index
// past the mounted archives.
Result<std::vector<KernelListing>> list_kernels(const ArchiveSet& archives, JitToolchain& jit, std::optional<uint32_t> archive_index);

}  // namespace sdm::runtime
