// libFuzzer target: what sdm accepts from a plan-provider plugin. The input is a negotiation's
// outcome (return code, minor, the table's struct_size, which entries are set, a name) and a plan
// the plugin's select_plan wrote; accept_negotiation decides whether the plugin is used and which
// entries count, and check_plan whether the plan may launch on each row of the hardware matrix.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/hardware_matrix.hpp"
#include "runtime/select/plan.hpp"
#include "runtime/select/plugins.hpp"

namespace {

int32_t select_stub(void*, const sdm_plugin_plan_request*, sdm_plan*) { return 0; }
void destroy_stub(void*) {}
int32_t validate_stub(void*, const sdm_plugin_image*, char*, size_t) { return 0; }

template <typename T>
T take(const uint8_t*& data, size_t& size) {
    T v{};
    const size_t n = size < sizeof v ? size : sizeof v;
    std::memcpy(&v, data, n);
    data += n, size -= n;
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm;
    using namespace sdm::runtime;
    const int32_t rc = take<int32_t>(data, size);
    const uint32_t minor = take<uint32_t>(data, size);
    sdm_plugin_table table{};
    table.struct_size = take<uint32_t>(data, size);
    const uint8_t set = take<uint8_t>(data, size);
    std::string name(reinterpret_cast<const char*>(data), size < 32 ? size : 32);
    name = name.c_str();  // up to the first NUL, as a C string
    table.name = (set & 8) != 0 ? name.c_str() : nullptr;
    table.select_plan = (set & 1) != 0 ? select_stub : nullptr;
    table.destroy = (set & 2) != 0 ? destroy_stub : nullptr;
    table.validate_image = (set & 4) != 0 ? validate_stub : nullptr;
    data += size < 32 ? size : 32, size -= size < 32 ? size : 32;
    const auto accepted = accept_negotiation("fuzz-plugin.so", rc, minor, table);
    if (accepted && (accepted->table.struct_size > table.struct_size || accepted->name.empty())) __builtin_trap();
    sdm_plan out{};
    std::memcpy(&out, data, size < sizeof out ? size : sizeof out);
    const Plan plan = plan_from_plugin(out);
    for (const HardwareRow& row : hardware_rows()) {
        auto device = plan_device(row);
        if (device) (void)check_plan(plan, *device, "the fuzzed plan");
    }
    return 0;
}
