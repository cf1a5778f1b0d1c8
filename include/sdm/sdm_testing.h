/* TEST ONLY, not installed, not part of the stable ABI: forced hardware rows for tests that run
 * through the C ABI (the seed's _force_row). While a row is pushed, every device of every runtime
 * in the process reports its capability, opt-in shared memory, SM count and (when l2_bytes is
 * non-zero) L2 size. Rows nest; popping one that is not the innermost removes it and reports
 * SDM_ERROR_INVALID_ARGUMENT. */
#ifndef SDM_SDM_TESTING_H
#define SDM_SDM_TESTING_H

#include "sdm.h"

#ifdef __cplusplus
extern "C" {
#endif

SDM_API sdm_status sdm_testing_force_row_push(int32_t capability_major, int32_t capability_minor, int32_t smem_optin_bytes,
                                              int32_t sm_count, uint64_t l2_bytes, uint64_t* token, sdm_error** error);
SDM_API sdm_status sdm_testing_force_row_pop(uint64_t token, sdm_error** error);

#ifdef __cplusplus
}
#endif

#endif /* SDM_SDM_TESTING_H */
