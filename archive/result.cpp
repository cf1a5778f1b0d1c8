#include "result.hpp"

namespace sdm {

const char* error_code_name(ErrorCode code) noexcept {
    switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::corrupt: return "corrupt";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::io: return "i/o error";
    case ErrorCode::not_found: return "not found";
    case ErrorCode::out_of_memory: return "out of memory";
    case ErrorCode::mismatch: return "mismatch";
    case ErrorCode::internal: return "internal error";
    case ErrorCode::no_driver: return "no driver";
    case ErrorCode::driver_too_old: return "driver too old";
    case ErrorCode::driver: return "driver error";
    case ErrorCode::no_device: return "no device";
    case ErrorCode::unsupported_device: return "unsupported device";
    case ErrorCode::not_built: return "not built";
    case ErrorCode::no_image: return "no image";
    case ErrorCode::jit: return "JIT failed";
    case ErrorCode::graph_capture: return "graph capture";
    case ErrorCode::image_refused: return "image refused";
    }
    return "unknown error";
}

}  // namespace sdm
