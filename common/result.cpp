#include "result.hpp"

namespace sdm {

const char* status_name(ErrorCode code) noexcept {
    switch (code) {
#define SDM_STATUS_CODE(code, value, status) \
    case ErrorCode::code: return #status;
#include "status_codes.inc"
#undef SDM_STATUS_CODE
    }
    return "SDM_ERROR_UNKNOWN";
}

}  // namespace sdm
