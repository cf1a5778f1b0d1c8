// The test-only C entry points of include/sdm/sdm_testing.h.
#include "sdm/sdm_testing.h"

#include <string>

#include "capi_internal.hpp"
#include "runtime/platform/forced_matrix_row.hpp"

extern "C" {

SDM_API sdm_status sdm_testing_force_row_push(int32_t major, int32_t minor, int32_t smem_optin_bytes, int32_t sm_count, uint64_t l2_bytes,
                                              uint64_t* token, sdm_error** error) {
    if (error != nullptr) *error = nullptr;
    if (token == nullptr) return SDM_ERROR_INVALID_ARGUMENT;
    try {
        sdm::runtime::ForcedMatrixRow row;
        row.capability = {major, minor};
        row.smem_optin_bytes = smem_optin_bytes;
        row.sm_count = sm_count;
        if (l2_bytes != 0) row.l2_bytes = l2_bytes;
        *token = sdm::runtime::push_forced_matrix_row(row);
        return SDM_OK;
    } catch (...) {
        return SDM_ERROR_OUT_OF_MEMORY;
    }
}

SDM_API sdm_status sdm_testing_force_row_pop(uint64_t token, sdm_error** error) {
    if (error != nullptr) *error = nullptr;
    try {
        auto r = sdm::runtime::pop_forced_matrix_row(token);
        if (r) return SDM_OK;
        const sdm_status status = sdm::capi::status_of(r.error().code);
        if (error != nullptr) *error = new sdm_error{status, r.error().message, 0, {}};
        return status;
    } catch (...) {
        return SDM_ERROR_OUT_OF_MEMORY;
    }
}

}  // extern "C"
