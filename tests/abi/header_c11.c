/* sdm.h compiles alone as C (C11, and C99 as the header promises), with warnings as errors:
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -c tests/abi/header_c11.c
 * The header is the first and only include; the body is C99 so both standards can build it. */
#include <sdm/sdm.h>

/* ISO C wants a declaration after the include; this one also uses the names a C host needs. */
sdm_status header_check(const sdm_api* api, sdm_runtime_params* params);

sdm_status header_check(const sdm_api* api, sdm_runtime_params* params) {
    params->struct_size = (uint32_t)sizeof(sdm_runtime_params);
    params->flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    params->log_level = SDM_LOG_WARN;
    return api->struct_size >= sizeof(sdm_api) ? SDM_OK : SDM_ERROR_INVALID_ARGUMENT;
}
