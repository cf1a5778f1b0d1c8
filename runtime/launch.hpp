// Plans and launches for one loaded kernel (docs/PLANS.md). select() asks the
// plan providers (plugins, in load order) and then the manifest's table (plan.hpp), checks what it
// gets against the device's class and the driver's occupancy calculator, and memoizes the result
// per problem (the problem values are the "problem class"), a memo hit costing a lock and a hash
// lookup. launch() checks the argument count against the signature, raises the function's
// dynamic shared memory limit once per (function, size) when the plan needs more than the default
// 48 KiB, and launches with cuLaunchKernelEx (cluster dims, PDL).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include "launch_streams.hpp"
#include "manifest.hpp"
#include "plan.hpp"
#include "result.hpp"

namespace sdm::runtime {

class Runtime;

struct SelectedPlan {
    Plan plan;
    int32_t occupancy{0};  // blocks per SM the driver says fit (cuOccupancyMaxActiveBlocksPerMultiprocessor)
};

class Launcher {
public:
    // `function` belongs to `context`. `streams` (the module's; it outlives the launcher) learns
    // every stream launched on.
    Launcher(Runtime& runtime, int32_t ordinal, CUcontext context, CUfunction function, std::string kernel, std::string module, std::string archive,
             std::vector<archive::ParamType> signature, PlanTable table, LaunchStreams* streams = nullptr);

    Result<SelectedPlan> select(std::span<const int64_t> problem);
    Result<void> launch(const Plan& plan, CUstream stream, void* const* args, uint32_t arg_count);

    size_t memo_size() const;
    Runtime& runtime() const noexcept { return runtime_; }
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

    Runtime& runtime_;
    int32_t ordinal_;
    CUcontext context_;
    CUfunction function_;
    std::string kernel_, module_, archive_;
    std::vector<archive::ParamType> signature_;
    PlanTable table_;
    LaunchStreams* streams_;
    using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
    std::atomic<LaunchEx> launch_ex_{nullptr};  // resolved once: the launch path makes no lookups
    using GetCurrent = CUresult (*)(CUcontext*);
    std::atomic<GetCurrent> get_current_{nullptr};  // when fetches follow the thread's context
    Result<void> check_current();

    mutable std::mutex memo_mutex_;
    std::unordered_map<Key, SelectedPlan, KeyHash> memo_;
    uint64_t memo_generation_{0};  // Plugins::generation() its plans were chosen under
    std::mutex smem_mutex_;
    std::atomic<uint32_t> smem_limit_{48 * 1024};  // the function's dynamic shared memory limit as set
};

}  // namespace sdm::runtime
