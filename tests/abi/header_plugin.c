/* sdm_plugin.h compiles alone as C (C11 and C99) and C++, with warnings as errors: a plugin
 * author's first include. */
#include <sdm/sdm_plugin.h>

int32_t header_plugin_check(uint32_t major, uint32_t* minor, sdm_plugin_table* table);

int32_t header_plugin_check(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != SDM_PLUGIN_ABI_MAJOR || table->struct_size < sizeof(sdm_plugin_table)) return 1;
    if (*minor > SDM_PLUGIN_ABI_MINOR) *minor = SDM_PLUGIN_ABI_MINOR;
    table->select_plan = 0;
    return 0;
}
