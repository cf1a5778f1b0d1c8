#include "module_slot.hpp"

namespace sdm::runtime {

void ModuleSlot::set_loaded(LoadedModule module, std::unique_ptr<KernelHandle> first) {
    decltype(kernels_) kernels;  // filled aside: a throw here leaves the slot as it was
    kernels.emplace(first->name, std::move(first));
    kernels_ = std::move(kernels);
    loaded_ = std::move(module);
    resolved_count_.store(1, std::memory_order_release);
}

KernelHandle* ModuleSlot::resolved(std::string_view name) const {
    const auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : it->second.get();
}

KernelHandle* ModuleSlot::add_resolved(std::unique_ptr<KernelHandle> kernel) {
    const std::string name = kernel->name;
    const auto [it, added] = kernels_.emplace(name, std::move(kernel));
    if (added) resolved_count_.fetch_add(1, std::memory_order_acq_rel);
    return it->second.get();
}

bool ModuleSlot::take(Take which) noexcept {
    uint64_t state = state_.load(std::memory_order_acquire);
    do {
        if ((state & kUnloaded) != 0 || (state & kReferences) == kReferences) return false;
        if (which == Take::serving && (state & (kRegistered | kRetired)) != kRegistered) return false;
    } while (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    return true;
}

ModuleSlot::Dropped ModuleSlot::drop() noexcept {
    uint64_t state = state_.load(std::memory_order_acquire);
    uint64_t next = 0;
    do {
        if ((state & kReferences) == 0) return Dropped::too_often;
        next = state - 1;
        if ((next & kReferences) == 0 && (state & (kRegistered | kRetired)) == (kRegistered | kRetired)) next |= kUnloaded;
    } while (!state_.compare_exchange_weak(state, next, std::memory_order_acq_rel, std::memory_order_acquire));
    return (next & kUnloaded) != 0 ? Dropped::unload : Dropped::kept;
}

bool ModuleSlot::retire() noexcept {
    uint64_t state = state_.load(std::memory_order_acquire);
    uint64_t next = 0;
    do {
        if ((state & kRetired) != 0) return false;  // retired before: whoever saw it idle unloads it
        next = state | kRetired;
        if ((state & kReferences) == 0 && (state & kRegistered) != 0) next |= kUnloaded;
    } while (!state_.compare_exchange_weak(state, next, std::memory_order_acq_rel, std::memory_order_acquire));
    return (next & kUnloaded) != 0;
}

LoadedModule ModuleSlot::take_unloaded() {
    LoadedModule out = *loaded_;
    out.library = std::move(loaded_->library);
    loaded_->module = nullptr;
    loaded_->served.archive.reset();  // (no reference is left: nothing reads it now)
    return out;
}

LoadedModule ModuleSlot::take_evicted() {
    LoadedModule out = *loaded_;
    out.library = std::move(loaded_->library);
    loaded_->module = nullptr;
    std::lock_guard lock(globals_mutex_);
    globals_.clear();  // their addresses go with the module
    return out;
}

void ModuleSlot::restore(CUmodule module, std::shared_ptr<LoadedLibrary> library, std::optional<uint64_t> measured_bytes) {
    loaded_->module = module;
    loaded_->library = std::move(library);
    loaded_->measured_bytes = measured_bytes;
    use_.fetch_and(~kEvictedUse, std::memory_order_acq_rel);
}

std::optional<std::pair<CUdeviceptr, uint64_t>> ModuleSlot::global(std::string_view name) const {
    std::lock_guard lock(globals_mutex_);
    if (const auto it = globals_.find(name); it != globals_.end()) return it->second;
    return std::nullopt;
}

void ModuleSlot::remember_global(const std::string& name, CUdeviceptr address, uint64_t bytes) {
    std::lock_guard lock(globals_mutex_);
    if (globals_.size() < kMaxGlobals) globals_.emplace(name, std::pair{address, bytes});
}

Result<void> check_live(const KernelHandle& k, std::string_view api) {
    if (k.slot != nullptr && k.slot->unloaded())
        return make_error(ErrorCode::invalid_argument, std::string(api) + ": kernel " + k.name + " was released and its module unloaded (its archive " +
                                                           k.archive + " was replaced by a reload); fetch it again with sdm_kernel_get");
    return {};
}

}  // namespace sdm::runtime
