/* Built against libsdm from the sdm subproject (tests/subproject/run.sh): the header it compiled
 * with and the library it runs with agree on the ABI. */
#include <stdio.h>
#include <sdm/sdm.h>

int main(void) {
    uint32_t abi = sdm_abi_version();
    printf("sdm %s, C ABI %u.%u\n", sdm_version_string(), (unsigned)(abi >> 16), (unsigned)(abi & 0xFFFF));
    return abi == (((uint32_t)SDM_ABI_VERSION_MAJOR << 16) | SDM_ABI_VERSION_MINOR) ? 0 : 1;
}
