// Module globals (__device__, __constant__ variables) of a fetched kernel's module, on its device
// and context: found by name through the driver (cuModuleGetGlobal, or cuLibraryGetGlobal for a
// library in the current context), memoized per loaded module, and copied to and from on a stream.
// A global belongs to the loaded image: a module replaced by a reload takes its globals with it.
#pragma once

#include <cstdint>
#include <string_view>

#include <cuda.h>

#include "common/result.hpp"

namespace sdm::runtime {

struct KernelHandle;
class LoadContext;

struct GlobalSymbol {
    CUdeviceptr address{0};
    uint64_t bytes{0};
};

// Global `name` of `kernel`'s module. A name the module lists as a kernel is
// ErrorCode::invalid_argument; one the image does not define, ErrorCode::not_found.
Result<GlobalSymbol> module_global(LoadContext& load, const KernelHandle& kernel, std::string_view name);

// Copies `bytes` between host memory `host` and the global at `offset`, queued on `stream`
// (cuMemcpyHtoDAsync when `to_device`, else cuMemcpyDtoHAsync). The range must lie inside it.
Result<void> copy_global(LoadContext& load, const KernelHandle& kernel, std::string_view name, uint64_t offset, void* host, uint64_t bytes, CUstream stream,
                         bool to_device);

}  // namespace sdm::runtime
