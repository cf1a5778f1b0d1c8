#include "launch.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/device/device_scope.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/platform/trace_ranges.hpp"

namespace sdm::runtime {

namespace {

// The launch attribute for a plan's cluster dims.
CUlaunchAttribute cluster_attribute(const Plan& plan) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = plan.cluster[0];
    attr.value.clusterDim.y = plan.cluster[1];
    attr.value.clusterDim.z = plan.cluster[2];
    return attr;
}

// The launch of `plan` (the occupancy calculator's query and the launch itself).
CUlaunchConfig launch_config(const Plan& plan, CUstream stream, CUlaunchAttribute* attrs, unsigned count) {
    CUlaunchConfig config{};
    config.gridDimX = plan.grid;
    config.gridDimY = plan.grid_y;
    config.gridDimZ = plan.grid_z;
    config.blockDimX = plan.block;
    config.blockDimY = plan.block_y;
    config.blockDimZ = plan.block_z;
    config.sharedMemBytes = plan.smem;
    config.hStream = stream;
    config.attrs = attrs;
    config.numAttrs = count;
    return config;
}

}  // namespace

size_t Launcher::KeyHash::operator()(const Key& k) const noexcept {
    uint64_t h = 0xcbf29ce484222325ull ^ k.count;  // FNV-1a over the values
    for (uint32_t i = 0; i < k.count; ++i) {
        h ^= static_cast<uint64_t>(k.values[i]);
        h *= 0x100000001b3ull;
    }
    return static_cast<size_t>(h ^ (h >> 29));
}

Launcher::Launcher(LoadContext& load, Plugins& plugins, int32_t ordinal, CUcontext context, CUfunction function, std::string kernel, std::string module, std::string archive,
                   std::vector<archive::ParamType> signature, PlanTable table, LaunchStreams* streams)
    : load_(load),
      plugins_(plugins),
      ordinal_(ordinal),
      context_(context),
      function_(function),
      kernel_(std::move(kernel)),
      module_(std::move(module)),
      archive_(std::move(archive)),
      signature_(std::move(signature)),
      table_(std::move(table)),
      streams_(streams) {}

size_t Launcher::memo_size() const {
    std::lock_guard lock(memo_mutex_);
    return memo_.size();
}

Result<SelectedPlan> Launcher::select(std::span<const int64_t> problem) {
    if (problem.size() > archive::kMaxProblemParameters)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": " + std::to_string(problem.size()) + " problem values, at most 8");
    Key key;
    key.count = static_cast<uint32_t>(problem.size());
    std::copy(problem.begin(), problem.end(), key.values.begin());
    // Under a forced row (tests only) nothing is read from or written to the memo.
    const uint64_t epoch = forced_matrix_row_epoch();
    const bool forced = forced_matrix_row_active();
    // A plugin loaded since a plan was remembered may choose another: the memo starts again.
    const uint64_t generation = plugins_.generation();
    if (!forced) {
        std::lock_guard lock(memo_mutex_);
        if (memo_generation_ != generation) {
            memo_.clear();
            memo_generation_ = generation;
        }
        const auto it = memo_.find(key);
        if (it != memo_.end()) return it->second;
    }
    auto selected = compute(problem);  // errors are not memoized
    if (!selected || forced || forced_matrix_row_epoch() != epoch) return selected;
    std::lock_guard lock(memo_mutex_);
    if (memo_generation_ != generation) return selected;  // a plugin came while it was chosen
    if (memo_.size() >= kMemoLimit) memo_.clear();
    memo_[key] = *selected;
    return selected;
}

Result<PlanDevice> Launcher::plan_device() {
    SDM_TRY_GET(p, load_.devices().properties(ordinal_));
    // A kernel of an archive that follows the matrix was only loaded on a device in it; any other
    // runs on devices outside it too, unclassified.
    std::optional<DeviceClass> cls;
    if (auto c = load_.devices().device_class(ordinal_)) cls = *c;
    else if (c.error().code != ErrorCode::unsupported_device) return std::move(c).error();
    return plan_device_of(*p, cls, device_text(*p, cls));
}

Result<SelectedPlan> Launcher::compute(std::span<const int64_t> problem) {
    SDM_TRY_GET(device, plan_device());
    auto from_table = table_.select(*device, problem);
    // Plan providers first, in load order; an invalid plan from one is not used, and the log says why.
    const PlanRequest request{kernel_, module_, archive_, ordinal_, *device, problem, from_table ? &*from_table : nullptr};
    if (auto provided = plugins_.select_plan(request)) {
        auto occupancy = check_occupancy(*provided, *device);
        if (occupancy) return SelectedPlan{*provided, *occupancy};
        load_.log().warn("the plan a plugin chose for kernel " + kernel_ + " is not used: " + occupancy.error().message);
    }
    if (!from_table) return std::move(from_table).error();
    SDM_TRY_GET(occupancy, check_occupancy(*from_table, *device));
    return SelectedPlan{*from_table, *occupancy};
}

Result<int32_t> Launcher::check_occupancy(const Plan& plan, const PlanDevice& device) {
    SDM_TRY_GET(scope, DeviceScope::enter(load_, context_));
    Driver& driver = scope->driver();
    SDM_TRY(ensure_smem(plan.smem));
    const std::string what = "the occupancy of kernel " + kernel_ + " with " + plan_text(plan);
    int blocks = 0;
    SDM_TRY(SDM_DRIVER_CALL(driver, cuOccupancyMaxActiveBlocksPerMultiprocessor, what, &blocks, function_, static_cast<int>(plan.threads()),
                            static_cast<size_t>(plan.smem)));
    if (blocks < 1)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot run with " + plan_text(plan) + " on " + device.description +
                                                           ": no block of it fits on a multiprocessor (registers or shared memory)");
    if (plan.cluster_blocks() > 1) {  // check_plan checked the shape (at most 8 blocks)
        CUlaunchAttribute attr = cluster_attribute(plan);
        const CUlaunchConfig config = launch_config(plan, nullptr, &attr, 1);
        int clusters = 0;
        SDM_TRY(SDM_DRIVER_CALL(driver, cuOccupancyMaxActiveClusters, what, &clusters, function_, &config));
        if (clusters < 1)
            return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot run with " + plan_text(plan) + " on " + device.description +
                                                               ": no cluster of it fits on the device");
    }
    return blocks;
}

Result<void> Launcher::ensure_smem(uint32_t bytes) {
    if (bytes <= smem_limit_.load(std::memory_order_acquire)) return {};
    std::lock_guard lock(smem_mutex_);
    if (bytes <= smem_limit_.load(std::memory_order_relaxed)) return {};
    SDM_TRY_GET(d, load_.driver());
    SDM_TRY(SDM_DRIVER_CALL(**d, cuFuncSetAttribute, "allowing kernel " + kernel_ + " " + std::to_string(bytes) + " B of dynamic shared memory",
                            function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)));
    smem_limit_.store(bytes, std::memory_order_release);
    return {};
}

// A runtime following the thread's context: the kernel's function belongs to the context it was
// fetched in, and launching it while another is current would run it in the wrong one.
Result<void> Launcher::check_current() {
    GetCurrent get = get_current_.load(std::memory_order_acquire);
    if (get == nullptr) {
        SDM_TRY_GET(d, load_.driver());
        SDM_TRY_GET(fn, (*d)->resolve(EntryPoint::cuCtxGetCurrent));
        get = reinterpret_cast<GetCurrent>(*fn);
        get_current_.store(get, std::memory_order_release);
    }
    CUcontext current = nullptr;
    if (const CUresult rc = get(&current); rc != CUDA_SUCCESS) {
        SDM_TRY_GET(d, load_.driver());
        return (*d)->error(rc, EntryPoint::cuCtxGetCurrent, "reading the calling thread's CUDA context to launch kernel " + kernel_);
    }
    if (current != context_)
        return make_error(ErrorCode::mismatch, "kernel " + kernel_ + " was fetched in another CUDA context than the one current on this thread "
                                               "(the runtime follows the current context, SDM_RUNTIME_CURRENT_CONTEXT): fetch it again with "
                                               "sdm_kernel_get while this context is current, and launch that handle here");
    return {};
}

Result<void> Launcher::launch(const Plan& plan, CUstream stream, void* const* args, uint32_t arg_count, std::span<const CUlaunchAttribute> extra) {
    const auto range = TraceRange::when(load_.traces_launches(), "launch", kernel_);
    if (arg_count != signature_.size())
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " takes " + std::to_string(signature_.size()) + " argument(s) (" +
                                                           archive::signature_text(signature_) + "), not " + std::to_string(arg_count));
    if (arg_count > 0 && args == nullptr)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " takes " + std::to_string(signature_.size()) + " argument(s) (" +
                                                           archive::signature_text(signature_) + "), but args is NULL: pass an array of " +
                                                           std::to_string(arg_count) + " pointers, one to each argument's value");
    for (uint32_t i = 0; i < arg_count; ++i)  // the driver reads through each: a NULL one would crash the host
        if (args[i] == nullptr)
            return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": args[" + std::to_string(i) + "] (its " +
                                                               archive::param_type_name(signature_[i]) + " argument) is NULL; it must point to the value");
    if (auto shape = check_shape(plan); !shape)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot launch with " + plan_text(plan) + ": " + shape.error().message);
    if (extra.size() > kMaxExtraAttributes)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": " + std::to_string(extra.size()) + " launch attributes in sdm_launch_attributes, at most " +
                                                           std::to_string(kMaxExtraAttributes));
    for (const CUlaunchAttribute& a : extra)  // what a plan field sets is set once, from the field
        if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION || a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE || a.id == CU_LAUNCH_ATTRIBUTE_PRIORITY ||
            a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": launch attribute " + std::to_string(static_cast<int>(a.id)) +
                                                               " in sdm_launch_attributes is one sdm_plan sets (cluster, flags or priority): set it there");
    if (load_.follows_current_context()) SDM_TRY(check_current());
    if (plan.cooperative) SDM_TRY(check_cooperative(plan));
    if (plan.priority != 0) SDM_TRY(check_priority(plan.priority));
    if (plan.smem > smem_limit_.load(std::memory_order_acquire)) SDM_TRY(ensure_smem(plan.smem));
    if (launch_ex_.load(std::memory_order_acquire) == nullptr) SDM_TRY(resolve_launch());
    const LaunchEx launch_ex = launch_ex_.load(std::memory_order_acquire);
    CUlaunchAttribute attrs[4 + kMaxExtraAttributes]{};
    unsigned n = 0;
    if (plan.cluster_blocks() > 1) attrs[n++] = cluster_attribute(plan);  // its size past 8 blocks is the driver's to refuse
    if (plan.pdl) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value.programmaticStreamSerializationAllowed = 1;
        ++n;
    }
    if (plan.cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value.cooperative = 1;
        ++n;
    }
    if (plan.priority != 0) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
        attrs[n].value.priority = plan.priority;
        ++n;
    }
    for (const CUlaunchAttribute& a : extra) attrs[n++] = a;
    const CUlaunchConfig config = launch_config(plan, stream, n > 0 ? attrs : nullptr, n);
    if (streams_ != nullptr) {  // before: a retire racing the launch must see its stream, or its graph
        streams_->note(stream);
        SDM_TRY(streams_->graphs().note(*driver_.load(std::memory_order_acquire), stream, module_));
    }
    const CUresult rc = launch_ex(&config, function_, const_cast<void**>(args), nullptr);
    if (rc != CUDA_SUCCESS) {
        SDM_TRY_GET(d, load_.driver());
        return (*d)->error(rc, EntryPoint::cuLaunchKernelEx, "launching kernel " + kernel_ + " with " + plan_text(plan));
    }
    return {};
}

// Once; racing threads store the same pointers.
Result<void> Launcher::resolve_launch() {
    SDM_TRY_GET(d, load_.driver());
    SDM_TRY_GET(fn, (*d)->resolve(EntryPoint::cuLaunchKernelEx));
    driver_.store(d->get(), std::memory_order_release);
    launch_ex_.store(reinterpret_cast<LaunchEx>(*fn), std::memory_order_release);
    return {};
}

Result<int32_t> Launcher::blocks_per_sm(uint32_t threads, uint32_t smem) {
    const uint64_t key = uint64_t{threads} << 32 | smem;
    {
        std::lock_guard lock(facts_mutex_);
        if (const auto it = occupancy_.find(key); it != occupancy_.end()) return it->second;
    }
    SDM_TRY_GET(scope, DeviceScope::enter(load_, context_));
    SDM_TRY(ensure_smem(smem));
    int blocks = 0;
    SDM_TRY(SDM_DRIVER_CALL(scope->driver(), cuOccupancyMaxActiveBlocksPerMultiprocessor,
                            "the occupancy of kernel " + kernel_ + " with " + std::to_string(threads) + " threads and " + std::to_string(smem) + " B of shared memory",
                            &blocks, function_, static_cast<int>(threads), static_cast<size_t>(smem)));
    std::lock_guard lock(facts_mutex_);
    if (occupancy_.size() >= kMemoLimit) occupancy_.clear();
    occupancy_[key] = blocks;
    return blocks;
}

// A cooperative grid must be resident all at once (grid-wide sync waits for every block): the
// device must support it, and the grid fit in what the occupancy calculator says runs at once.
Result<void> Launcher::check_cooperative(const Plan& plan) {
    std::optional<bool> supported;
    {
        std::lock_guard lock(facts_mutex_);
        supported = cooperative_device_;
    }
    SDM_TRY_GET(props, load_.devices().properties(ordinal_));
    const std::string device = "device " + std::to_string(ordinal_) + " (" + props->name + ")";
    if (!supported) {
        SDM_TRY_GET(scope, DeviceScope::enter(load_, context_));
        const std::string what = "reading whether " + device + " supports cooperative launches";
        CUdevice dev = 0;
        SDM_TRY(SDM_DRIVER_CALL(scope->driver(), cuCtxGetDevice, what, &dev));
        int value = 0;
        SDM_TRY(SDM_DRIVER_CALL(scope->driver(), cuDeviceGetAttribute, what, &value, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
        supported = value != 0;
        std::lock_guard lock(facts_mutex_);
        cooperative_device_ = supported;
    }
    if (!*supported)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot launch cooperatively on " + device +
                                                           ": the device does not support cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)");
    SDM_TRY_GET(per_sm, blocks_per_sm(plan.threads(), plan.smem));
    const uint64_t resident = static_cast<uint64_t>(std::max(*per_sm, 0)) * static_cast<uint64_t>(std::max(props->sm_count, 0));
    if (plan.blocks() > resident)
        return make_error(ErrorCode::invalid_argument,
                          "kernel " + kernel_ + " cannot launch cooperatively with " + plan_text(plan) + ": its " + std::to_string(plan.blocks()) +
                              " blocks cannot all be resident on " + device + ", which holds " + std::to_string(*per_sm) + " block(s) of " +
                              std::to_string(plan.threads()) + " threads and " + std::to_string(plan.smem) + " B of dynamic shared memory per SM x " +
                              std::to_string(props->sm_count) + " SMs = " + std::to_string(resident) +
                              " at once (the driver's occupancy calculator); launch at most " + std::to_string(resident) +
                              " blocks (a grid-stride loop covers the rest), or fewer threads or less shared memory per block");
    return {};
}

Result<void> Launcher::check_priority(int32_t priority) {
    std::optional<std::pair<int, int>> range;
    {
        std::lock_guard lock(facts_mutex_);
        range = priorities_;
    }
    if (!range) {
        SDM_TRY_GET(scope, DeviceScope::enter(load_, context_));
        int least = 0, greatest = 0;
        SDM_TRY(SDM_DRIVER_CALL(scope->driver(), cuCtxGetStreamPriorityRange, "reading the stream priority range to launch kernel " + kernel_, &least, &greatest));
        range = std::pair{least, greatest};
        std::lock_guard lock(facts_mutex_);
        priorities_ = range;
    }
    // Lower numbers are higher priorities: greatest <= priority <= least.
    if (priority < range->second || priority > range->first)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": launch priority " + std::to_string(priority) + " is outside the context's range " +
                                                           std::to_string(range->second) + " (greatest) to " + std::to_string(range->first) +
                                                           " (least; cuCtxGetStreamPriorityRange); 0 is the stream's own");
    return {};
}

Result<SelectedPlan> Launcher::for_elements(uint64_t elements, uint32_t smem) {
    if (elements == 0) return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": a plan for 0 elements (at least 1)");
    SDM_TRY_GET(device, plan_device());
    if (static_cast<int64_t>(smem) > device->smem_cap)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": " + std::to_string(smem) + " B of dynamic shared memory per block, over the " +
                                                           std::to_string(device->smem_cap) + " B of " + device->description);
    SDM_TRY_GET(suggested, potential_block_size(smem, 0));
    const int block = suggested->first;
    if (block < 1 || block > static_cast<int>(kMaxBlockThreads))
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot run with " + std::to_string(smem) + " B of dynamic shared memory on " +
                                                           device->description + ": the driver suggests blocks of " + std::to_string(block) + " threads");
    Plan p;
    p.block = static_cast<uint32_t>(block);
    p.smem = smem;
    p.rule = -1;
    const uint64_t grid = (elements - 1) / p.block + 1;
    if (grid > kMaxGridX)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": " + std::to_string(elements) + " elements in blocks of " + std::to_string(block) +
                                                           " threads need " + std::to_string(grid) + " blocks, over the grid's " + std::to_string(kMaxGridX) +
                                                           " in x: launch a grid-stride loop's shape yourself (or a 2-D grid)");
    p.grid = static_cast<uint32_t>(grid);
    SDM_TRY_GET(occupancy, check_occupancy(p, *device));
    p.blocks_per_sm = *occupancy;
    return SelectedPlan{p, *occupancy};
}

Result<std::pair<int32_t, int32_t>> Launcher::potential_block_size(uint32_t smem, uint32_t block_limit) {
    if (block_limit > kMaxBlockThreads)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": a block size limit of " + std::to_string(block_limit) + " threads, over the " +
                                                           std::to_string(kMaxBlockThreads) + " a block may have (0: the kernel's own limit)");
    SDM_TRY_GET(scope, DeviceScope::enter(load_, context_));
    SDM_TRY(ensure_smem(smem));
    int min_grid = 0, block = 0;
    SDM_TRY(SDM_DRIVER_CALL(scope->driver(), cuOccupancyMaxPotentialBlockSize, "the block size the driver suggests for kernel " + kernel_, &min_grid, &block,
                            function_, nullptr, static_cast<size_t>(smem), static_cast<int>(block_limit)));
    return std::pair<int32_t, int32_t>{block, min_grid};
}

Result<void> Launcher::set_smem_limit(int32_t bytes) {
    SDM_TRY_GET(d, load_.driver());
    SDM_TRY_GET(props, load_.devices().properties(ordinal_));
    int static_bytes = 0;
    SDM_TRY(SDM_DRIVER_CALL(**d, cuFuncGetAttribute, "reading the static shared memory of kernel " + kernel_, &static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                            function_));
    const int64_t limit = int64_t{props->smem_optin_bytes} - static_bytes;
    if (bytes < 0 || bytes > limit)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": a dynamic shared memory limit of " + std::to_string(bytes) + " B is outside 0 .. " +
                                                           std::to_string(limit) + " B, what device " + std::to_string(ordinal_) + " (" + props->name +
                                                           ") allows it: its " + std::to_string(props->smem_optin_bytes) +
                                                           " B of opt-in shared memory per block less the kernel's " + std::to_string(static_bytes) +
                                                           " B of static shared memory");
    std::lock_guard lock(smem_mutex_);
    SDM_TRY(SDM_DRIVER_CALL(**d, cuFuncSetAttribute, "setting kernel " + kernel_ + "'s dynamic shared memory limit to " + std::to_string(bytes) + " B", function_,
                            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)));
    smem_limit_.store(static_cast<uint32_t>(bytes), std::memory_order_release);
    forget_occupancy();
    return {};
}

Result<void> Launcher::set_carveout(int32_t percent) {
    if (percent < -1 || percent > 100)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + ": a shared memory carveout of " + std::to_string(percent) +
                                                           " is outside -1 (no preference) .. 100 (percent of L1 as shared memory)");
    SDM_TRY_GET(d, load_.driver());
    SDM_TRY(SDM_DRIVER_CALL(**d, cuFuncSetAttribute, "setting kernel " + kernel_ + "'s shared memory carveout to " + std::to_string(percent), function_,
                            CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, static_cast<int>(percent)));
    forget_occupancy();
    return {};
}

void Launcher::forget_occupancy() {
    {
        std::lock_guard lock(memo_mutex_);
        memo_.clear();
    }
    std::lock_guard lock(facts_mutex_);
    occupancy_.clear();
}

}  // namespace sdm::runtime
