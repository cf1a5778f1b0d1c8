// Shared by the C ABI's implementation files: status mapping and error hand-out.
#pragma once

#include <string>

#include "common/result.hpp"
#include "sdm/sdm.h"

// The error object a call hands out (sdm_error_* read it).
struct sdm_error {
    sdm_status code;
    std::string message;
    int32_t native;
    std::string log;
};

namespace sdm::capi {

sdm_status status_of(ErrorCode code) noexcept;

}  // namespace sdm::capi
