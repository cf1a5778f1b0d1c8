#include "result.hpp"

namespace sdm {

const char* status_name(ErrorCode code) noexcept {
    switch (code) {
    case ErrorCode::invalid_argument: return "SDM_ERROR_INVALID_ARGUMENT";
    case ErrorCode::out_of_memory: return "SDM_ERROR_OUT_OF_MEMORY";
    case ErrorCode::no_driver: return "SDM_ERROR_NO_DRIVER";
    case ErrorCode::driver_too_old: return "SDM_ERROR_DRIVER_TOO_OLD";
    case ErrorCode::driver: return "SDM_ERROR_DRIVER";
    case ErrorCode::no_device: return "SDM_ERROR_NO_DEVICE";
    case ErrorCode::unsupported_device: return "SDM_ERROR_UNSUPPORTED_DEVICE";
    case ErrorCode::archive_corrupt: return "SDM_ERROR_ARCHIVE_CORRUPT";
    case ErrorCode::archive_unsupported: return "SDM_ERROR_ARCHIVE_UNSUPPORTED";
    case ErrorCode::io: return "SDM_ERROR_IO";
    case ErrorCode::not_found: return "SDM_ERROR_NOT_FOUND";
    case ErrorCode::unsupported: return "SDM_ERROR_UNSUPPORTED";
    case ErrorCode::no_image: return "SDM_ERROR_NO_IMAGE";
    case ErrorCode::image_refused: return "SDM_ERROR_IMAGE_REFUSED";
    case ErrorCode::jit: return "SDM_ERROR_JIT";
    case ErrorCode::mismatch: return "SDM_ERROR_MISMATCH";
    case ErrorCode::graph_capture: return "SDM_ERROR_GRAPH_CAPTURE";
    case ErrorCode::internal: return "SDM_ERROR_INTERNAL";
    case ErrorCode::untrusted: return "SDM_ERROR_UNTRUSTED";
    case ErrorCode::ambiguous: return "SDM_ERROR_AMBIGUOUS";
    }
    return "SDM_ERROR_UNKNOWN";
}

}  // namespace sdm
