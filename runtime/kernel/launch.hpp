// Plans and launches for one loaded kernel (docs/PLANS.md). select() asks the
// plan providers (plugins, in load order) and then the manifest's table (plan.hpp), checks what it
// gets against the device's class and the driver's occupancy calculator, and memoizes the result
// per problem (the problem values are the "problem class"), a memo hit costing a lock and a hash
// lookup. launch() checks the argument count against the signature, raises the function's
// dynamic shared memory limit once per (function, size) when the plan needs more than the default
// 48 KiB, and launches with cuLaunchKernelEx in up to three dimensions (cluster dims, PDL, a
// cooperative launch checked against the device and the occupancy, a priority within the
// context's range, and attributes the host adds). for_elements() shapes a launch for a kernel
// without plan rules from the driver's block-size suggestion.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda.h>

#include "launch_streams.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/select/plugins.hpp"
#include "archive/manifest.hpp"
#include "runtime/select/plan.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct SelectedPlan {
    Plan plan;
    int32_t occupancy{0};  // blocks per SM the driver says fit (cuOccupancyMaxActiveBlocksPerMultiprocessor)
};

class Launcher {
public:
    // `function` belongs to `context`. `streams` (the module's; it outlives the launcher) learns
    // every stream launched on.
    Launcher(LoadContext& load, Plugins& plugins, int32_t ordinal, CUcontext context, CUfunction function, std::string kernel, std::string module, std::string archive,
             std::vector<archive::ParamType> signature, PlanTable table, LaunchStreams* streams = nullptr);

    Result<SelectedPlan> select(std::span<const int64_t> problem);
    // `extra`: attributes the host adds (sdm_launch_attributes), after sdm's own; at most
    // kMaxExtraAttributes, none of the ids a Plan field sets.
    Result<void> launch(const Plan& plan, CUstream stream, void* const* args, uint32_t arg_count, std::span<const CUlaunchAttribute> extra = {});
    // One thread per element in blocks of the driver's suggested size (cuOccupancyMaxPotentialBlockSize).
    Result<SelectedPlan> for_elements(uint64_t elements, uint32_t smem);
    // The driver's suggestion itself: {block size, the fewest blocks of the best occupancy on the
    // device}, blocks of at most `block_limit` threads (0: the kernel's own limit).
    Result<std::pair<int32_t, int32_t>> potential_block_size(uint32_t smem, uint32_t block_limit);
    // Blocks per SM the driver says fit for `threads` threads and `smem` bytes (memoized), the
    // dynamic shared memory limit raised to `smem` first, as a launch would.
    Result<int32_t> blocks_per_sm(uint32_t threads, uint32_t smem);
    // The function's dynamic shared memory limit (sdm_kernel_set): at most the device's opt-in
    // shared memory per block less the kernel's static shared memory, else invalid_argument
    // naming both. A launch needing more still raises it.
    Result<void> set_smem_limit(int32_t bytes);
    // The preferred shared memory carveout, -1 (none) or 0..100 percent of L1.
    Result<void> set_carveout(int32_t percent);
    static constexpr size_t kMaxExtraAttributes = kMaxExtraLaunchAttributes;

    size_t memo_size() const;
    static constexpr size_t kMemoLimit = 4096;  // distinct problems remembered per kernel and device

private:
    struct Key {
        std::array<int64_t, archive::kMaxProblemParameters> values{};
        uint32_t count{0};
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const noexcept;
    };
    Result<SelectedPlan> compute(std::span<const int64_t> problem);
    Result<int32_t> check_occupancy(const Plan& plan, const PlanDevice& device);
    Result<void> ensure_smem(uint32_t bytes);
    Result<PlanDevice> plan_device();
    void forget_occupancy();  // a setting changed what fits: the memos start again
    Result<void> check_cooperative(const Plan& plan);
    Result<void> check_priority(int32_t priority);

    LoadContext& load_;
    Plugins& plugins_;
    int32_t ordinal_;
    CUcontext context_;
    CUfunction function_;
    std::string kernel_, module_, archive_;
    std::vector<archive::ParamType> signature_;
    PlanTable table_;
    LaunchStreams* streams_;
    using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
    std::atomic<LaunchEx> launch_ex_{nullptr};  // resolved once: the launch path makes no lookups
    std::atomic<Driver*> driver_{nullptr};      // the runtime's, which outlives the launcher; read once
    Result<void> resolve_launch();              // the two above
    using GetCurrent = CUresult (*)(CUcontext*);
    std::atomic<GetCurrent> get_current_{nullptr};  // when fetches follow the thread's context
    Result<void> check_current();

    mutable std::mutex memo_mutex_;
    std::unordered_map<Key, SelectedPlan, KeyHash> memo_;
    uint64_t memo_generation_{0};  // Plugins::generation() its plans were chosen under
    std::mutex smem_mutex_;
    std::atomic<uint32_t> smem_limit_{48 * 1024};  // the function's dynamic shared memory limit as set
    std::mutex facts_mutex_;  // guards the three below
    std::unordered_map<uint64_t, int32_t> occupancy_;  // (threads << 32 | smem) -> blocks per SM, for cooperative launches
    std::optional<std::pair<int, int>> priorities_;    // the context's stream priority range (least, greatest)
    std::optional<bool> cooperative_device_;           // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
};

}  // namespace sdm::runtime
