// Where the bytes a module was loaded from came from: the archive, the cache or a JIT backend
// (sdm_kernel_info's image_source; its values are sdm.h's SDM_IMAGE_SOURCE_*, checked in
// abi_enums.hpp).
#pragma once

#include <cstdint>

namespace sdm::runtime {

enum class ImageSource : uint32_t { archive_cubin = 1, cache = 2, nvjitlink = 3, driver_jit = 4, fatbin = 5, ptx_compiler = 6 };

}  // namespace sdm::runtime
