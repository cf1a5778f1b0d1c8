// A plugin that breaks its contract: its validate_image throws a C++ exception (sdm_plugin.h
// says plugins must not). sdm must survive it wherever the call happens, a preload worker thread
// included (tests/runtime/select/test_plugins.cpp).
#include <stdexcept>

#include "sdm/sdm_plugin.h"

namespace {

int32_t validate_image(void*, const sdm_plugin_image*, char*, size_t) { throw std::runtime_error("thrown by the test plugin"); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t sdm_plugin_negotiate(uint32_t major, uint32_t* minor, sdm_plugin_table* table) {
    if (major != 1) return 1;
    if (*minor > 1) *minor = 1;
    table->name = "test-throw";
    table->validate_image = validate_image;
    return 0;
}
