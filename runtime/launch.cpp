#include "launch.hpp"

#include <cstring>

#include "device_scope.hpp"
#include "layering.hpp"
#include "runtime.hpp"

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

// A one-dimensional launch of `plan` (the occupancy calculator's query and the launch itself).
CUlaunchConfig launch_config(const Plan& plan, CUstream stream, CUlaunchAttribute* attrs, unsigned count) {
    CUlaunchConfig config{};
    config.gridDimX = plan.grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = plan.block;
    config.blockDimY = config.blockDimZ = 1;
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

Launcher::Launcher(Runtime& runtime, int32_t ordinal, CUcontext context, CUfunction function, std::string kernel, std::string module, std::string archive,
                   std::vector<archive::ParamType> signature, PlanTable table, LaunchStreams* streams)
    : runtime_(runtime),
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
    const uint64_t generation = runtime_.plugins().generation();
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
    SDM_TRY_GET(p, runtime_.devices().properties(ordinal_));
    // A kernel of an archive that follows the matrix was only loaded on a device in it; any other
    // runs on devices outside it too, unclassified.
    std::optional<DeviceClass> cls;
    if (auto c = runtime_.devices().device_class(ordinal_)) cls = *c;
    else if (c.error().code != ErrorCode::unsupported_device) return std::move(c).error();
    return plan_device_of(*p, cls, device_text(*p, cls));
}

Result<SelectedPlan> Launcher::compute(std::span<const int64_t> problem) {
    SDM_TRY_GET(device, plan_device());
    auto from_table = table_.select(*device, problem);
    // Plan providers first, in load order; an invalid plan from one is not used, and the log says why.
    const PlanRequest request{kernel_, module_, archive_, ordinal_, *device, problem, from_table ? &*from_table : nullptr};
    if (auto provided = runtime_.plugins().select_plan(request)) {
        auto occupancy = check_occupancy(*provided, *device);
        if (occupancy) return SelectedPlan{*provided, *occupancy};
        runtime_.log().warn("the plan a plugin chose for kernel " + kernel_ + " is not used: " + occupancy.error().message);
    }
    if (!from_table) return std::move(from_table).error();
    SDM_TRY_GET(occupancy, check_occupancy(*from_table, *device));
    return SelectedPlan{*from_table, *occupancy};
}

Result<int32_t> Launcher::check_occupancy(const Plan& plan, const PlanDevice& device) {
    SDM_TRY_GET(scope, DeviceScope::enter(runtime_, context_));
    Driver& driver = scope->driver();
    SDM_TRY(ensure_smem(plan.smem));
    const std::string what = "the occupancy of kernel " + kernel_ + " with " + plan_text(plan);
    int blocks = 0;
    SDM_TRY(SDM_DRIVER_CALL(driver, cuOccupancyMaxActiveBlocksPerMultiprocessor, what, &blocks, function_, static_cast<int>(plan.block),
                            static_cast<size_t>(plan.smem)));
    if (blocks < 1)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot run with " + plan_text(plan) + " on " + device.description +
                                                           ": no block of it fits on a multiprocessor (registers or shared memory)");
    if (plan.cluster[0] > 1) {  // x by 1 by 1: check_plan checked the shape
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
    SDM_TRY_GET(d, runtime_.driver());
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
        SDM_TRY_GET(d, runtime_.driver());
        SDM_TRY_GET(fn, (*d)->resolve(EntryPoint::cuCtxGetCurrent));
        get = reinterpret_cast<GetCurrent>(*fn);
        get_current_.store(get, std::memory_order_release);
    }
    CUcontext current = nullptr;
    if (const CUresult rc = get(&current); rc != CUDA_SUCCESS) {
        SDM_TRY_GET(d, runtime_.driver());
        return (*d)->error(rc, EntryPoint::cuCtxGetCurrent, "reading the calling thread's CUDA context to launch kernel " + kernel_);
    }
    if (current != context_)
        return make_error(ErrorCode::mismatch, "kernel " + kernel_ + " was fetched in another CUDA context than the one current on this thread "
                                               "(the runtime follows the current context, SDM_RUNTIME_CURRENT_CONTEXT): fetch it again with "
                                               "sdm_kernel_get while this context is current, and launch that handle here");
    return {};
}

Result<void> Launcher::launch(const Plan& plan, CUstream stream, void* const* args, uint32_t arg_count) {
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
    if (auto shape = check_cluster_shape(plan); !shape)
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " cannot launch with " + plan_text(plan) + ": " + shape.error().message);
    if (runtime_.follows_current_context()) SDM_TRY(check_current());
    if (plan.smem > smem_limit_.load(std::memory_order_acquire)) SDM_TRY(ensure_smem(plan.smem));
    LaunchEx launch_ex = launch_ex_.load(std::memory_order_acquire);
    if (launch_ex == nullptr) {  // once; racing threads store the same pointer
        SDM_TRY_GET(d, runtime_.driver());
        SDM_TRY_GET(fn, (*d)->resolve(EntryPoint::cuLaunchKernelEx));
        launch_ex = reinterpret_cast<LaunchEx>(*fn);
        launch_ex_.store(launch_ex, std::memory_order_release);
    }
    CUlaunchAttribute attrs[2]{};
    unsigned n = 0;
    if (plan.cluster[0] > 1) attrs[n++] = cluster_attribute(plan);
    if (plan.pdl) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value.programmaticStreamSerializationAllowed = 1;
        ++n;
    }
    const CUlaunchConfig config = launch_config(plan, stream, n > 0 ? attrs : nullptr, n);
    if (streams_ != nullptr) streams_->note(stream);  // before: a retire racing the launch must see its stream
    const CUresult rc = launch_ex(&config, function_, const_cast<void**>(args), nullptr);
    if (rc != CUDA_SUCCESS) {
        SDM_TRY_GET(d, runtime_.driver());
        return (*d)->error(rc, EntryPoint::cuLaunchKernelEx, "launching kernel " + kernel_ + " with " + plan_text(plan));
    }
    return {};
}

}  // namespace sdm::runtime
