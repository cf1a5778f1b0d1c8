#include "globals.hpp"

#include "runtime/device/device_scope.hpp"
#include "kernel_handle.hpp"
#include "module_slot.hpp"
#include "runtime/device/load_context.hpp"
#include "archive/format.hpp"
#include "common/text.hpp"

namespace sdm::runtime {

namespace {

// A symbol as long as the longest name an archive may list (format 1.1's 65,535 bytes).
constexpr size_t kMaxGlobalName = archive::limits::max_long_name_length;

}  // namespace

Result<GlobalSymbol> module_global(LoadContext& load, const KernelHandle& kernel, std::string_view name) {
    if (name.empty() || name.size() > kMaxGlobalName)
        return make_error(ErrorCode::invalid_argument, "a global's name of " + std::to_string(name.size()) + " bytes (1.." + std::to_string(kMaxGlobalName) + ")");
    if (kernel.slot == nullptr) return make_error(ErrorCode::internal, "kernel " + kernel.name + " has no module");
    ModuleSlot& slot = *kernel.slot;
    if (const auto known = slot.global(name)) return GlobalSymbol{known->first, known->second};
    const LoadedModule& loaded = slot.module();
    const std::string what = "looking up global " + shown_name(name) + " of module " + kernel.module + " (archive " + kernel.archive + ")";
    // A kernel is not a variable: the driver would say "not found"; sdm says what it is.
    if (loaded.served.archive && loaded.served.archive->manifest)
        if (loaded.served.archive->manifest->find(name, kernel.module) != nullptr)
            return make_error(ErrorCode::invalid_argument, shown_name(name) + " is a kernel of module " + kernel.module + ", not a global variable: fetch it with "
                                                           "sdm_kernel_get; sdm_global_get takes a __device__ or __constant__ variable's symbol");
    SDM_TRY_GET(scope, DeviceScope::enter(load, loaded.context));
    const std::string symbol(name);
    CUdeviceptr address = 0;
    size_t bytes = 0;
    Result<void> found = loaded.library ? SDM_DRIVER_CALL(scope->driver(), cuLibraryGetGlobal, what, &address, &bytes, loaded.library->handle(), symbol.c_str())
                                        : SDM_DRIVER_CALL(scope->driver(), cuModuleGetGlobal, what, &address, &bytes, loaded.module, symbol.c_str());
    if (!found) {
        if (found.error().native == CUDA_ERROR_NOT_FOUND)
            return make_error(ErrorCode::not_found, "module " + kernel.module + " of archive " + kernel.archive + " (as loaded for kernel " + kernel.name +
                                                        ") defines no global variable " + shown_name(name) +
                                                        "; a C++ variable in a namespace has a mangled symbol (`cuobjdump -symbols` lists them)");
        return std::move(found).error();
    }
    const GlobalSymbol g{address, bytes};
    slot.remember_global(symbol, g.address, g.bytes);
    return g;
}

Result<void> copy_global(LoadContext& load, const KernelHandle& kernel, std::string_view name, uint64_t offset, void* host, uint64_t bytes, CUstream stream,
                         bool to_device) {
    SDM_TRY_GET(g, module_global(load, kernel, name));
    if (offset > g->bytes || bytes > g->bytes - offset)
        return make_error(ErrorCode::invalid_argument, "global " + shown_name(name) + " of module " + kernel.module + " is " + std::to_string(g->bytes) +
                                                           " bytes: a copy of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " runs past it");
    if (bytes == 0) return {};
    if (host == nullptr) return make_error(ErrorCode::invalid_argument, "a copy of " + std::to_string(bytes) + " bytes of global " + shown_name(name) + " with NULL data");
    SDM_TRY_GET(scope, DeviceScope::enter(load, kernel.slot->module().context));
    kernel.slot->streams().note(stream);  // the module's retirement waits for the copy, as for a launch
    SDM_TRY(kernel.slot->streams().graphs().note(scope->driver(), stream, kernel.module));  // and for a graph that captured it
    const std::string what = std::string(to_device ? "copying to" : "copying from") + " global " + shown_name(name) + " of module " + kernel.module;
    if (to_device) return SDM_DRIVER_CALL(scope->driver(), cuMemcpyHtoDAsync, what, g->address + offset, static_cast<const void*>(host), static_cast<size_t>(bytes), stream);
    return SDM_DRIVER_CALL(scope->driver(), cuMemcpyDtoHAsync, what, host, g->address + offset, static_cast<size_t>(bytes), stream);
}

}  // namespace sdm::runtime
