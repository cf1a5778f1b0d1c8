// The runtime's enums that cross the C ABI (sdm.h) and the plugin ABI (sdm_plugin.h) as numbers,
// pinned to their C twins so that a value crosses unchanged: included by each bridge
// (capi/capi.cpp, plugins.cpp). ErrorCode's pins are capi.cpp's (common/status_codes.inc).
#pragma once

#include "archive/format.hpp"
#include "common/hardware_matrix.hpp"
#include "image_origin.hpp"
#include "log.hpp"
#include "sdm/sdm.h"

namespace sdm::runtime {

#define SDM_SAME_VALUE(cpp, c) static_assert(static_cast<int64_t>(cpp) == static_cast<int64_t>(c), #cpp " is not " #c)
// sdm_device_class, sdm_device_info.device_class, sdm_plugin_device.device_class.
SDM_SAME_VALUE(DeviceClass::modern, SDM_DEVICE_CLASS_MODERN);
SDM_SAME_VALUE(DeviceClass::a100, SDM_DEVICE_CLASS_A100);
SDM_SAME_VALUE(DeviceClass::rtx, SDM_DEVICE_CLASS_RTX);
// sdm_log_level (SDM_LOG_OFF and SDM_LOG_DEFAULT are read apart).
SDM_SAME_VALUE(LogLevel::error, SDM_LOG_ERROR);
SDM_SAME_VALUE(LogLevel::warn, SDM_LOG_WARN);
SDM_SAME_VALUE(LogLevel::info, SDM_LOG_INFO);
SDM_SAME_VALUE(LogLevel::debug, SDM_LOG_DEBUG);
// sdm_kernel_info.image_kind and sdm_plugin_image.image_kind: the archive's kinds.
SDM_SAME_VALUE(archive::Kind::cubin, SDM_IMAGE_KIND_CUBIN);
SDM_SAME_VALUE(archive::Kind::ptx, SDM_IMAGE_KIND_PTX);
SDM_SAME_VALUE(archive::Kind::ltoir, SDM_IMAGE_KIND_LTO_IR);
SDM_SAME_VALUE(archive::Kind::fatbin, SDM_IMAGE_KIND_FATBIN);
// sdm_kernel_info.source.
SDM_SAME_VALUE(ImageSource::archive_cubin, SDM_IMAGE_SOURCE_ARCHIVE_CUBIN);
SDM_SAME_VALUE(ImageSource::cache, SDM_IMAGE_SOURCE_CACHE);
SDM_SAME_VALUE(ImageSource::nvjitlink, SDM_IMAGE_SOURCE_NVJITLINK);
SDM_SAME_VALUE(ImageSource::driver_jit, SDM_IMAGE_SOURCE_DRIVER_JIT);
SDM_SAME_VALUE(ImageSource::fatbin, SDM_IMAGE_SOURCE_FATBIN);
SDM_SAME_VALUE(ImageSource::ptx_compiler, SDM_IMAGE_SOURCE_PTX_COMPILER);
#undef SDM_SAME_VALUE

}  // namespace sdm::runtime
