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
#include "runtime/archives/kernel_name_index.hpp"

namespace sdm::runtime {

struct MountedArchive;
class ArchiveSet;
class JitToolchain;

// The demangled names of `archive`'s kernels, by kernel index. The demangler's time and memory
// grow exponentially with a crafted name (back-references to back-references): the names of any
// archive but the embedded one are demangled in the JIT helper under its limits (each run at most
// the JIT time limit and 1 GiB), and under a budget of the whole archive's: every run together at
// most 10 s (or twice the JIT time limit, when shorter), at most 64 runs that die, and at most
// demangled_bytes_budget() bytes of demangled names (each run asks for no more names than the
// bytes left allow, so its reply is within the budget too). A run the helper does not finish leaves the
// name it died on without a demangled name, and the next run starts after it; the names past a
// budget are left without one too; what was left out, and why, is logged. Without a helper, none
// is demangled.
std::vector<std::string> demangled_names(JitToolchain& jit, const MountedArchive& archive);

// The demangled bytes one archive may index: 16 times its mangled names' bytes, at least 1 MiB,
// at most 64 MiB.
size_t demangled_bytes_budget(size_t mangled_bytes) noexcept;

// The index of `archive`, built on the first call (once, whatever the threads).
const KernelNameIndex& kernel_names(JitToolchain& jit, const MountedArchive& archive);

// The name a mounted archive lists for `requested`, which none lists as it is: a C++ spelling
// matching one kernel (resolved across every mounted archive, at the most specific level that
// matches; building each archive's index on first need). ErrorCode::ambiguous listing the
// candidates; ErrorCode::not_found naming what is mounted, the closest kernels and how to list
// them. A mangled name ("_Z...") no archive lists is not_found at once: it is never demangled
// here, and its hint uses the indexes already built, or the base names parsed from the mangled
// names (archive::mangled_base_name), never the demangler.
// With `module`, only that module's kernels are candidates (a module-qualified request).
Result<std::string> resolve_kernel_name(const ArchiveSet& archives, JitToolchain& jit, std::string_view requested, std::string_view module = {});

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
