#include "device_class.hpp"

namespace sdm::runtime {

const char* device_class_name(DeviceClass c) noexcept {
    switch (c) {
    case DeviceClass::modern: return "modern";
    case DeviceClass::a100: return "a100";
    case DeviceClass::rtx: return "rtx";
    }
    return "unknown";
}

std::optional<DeviceClass> parse_device_class(std::string_view name) noexcept {
    for (const DeviceClass c : {DeviceClass::modern, DeviceClass::a100, DeviceClass::rtx})
        if (name == device_class_name(c)) return c;
    return std::nullopt;
}

Result<DeviceClass> classify(int32_t ordinal, std::string_view name, Capability cc, int32_t smem_optin_bytes) {
    const int32_t sm = cc.sm();
    if ((sm == 90 || sm == 100 || sm == 103) && smem_optin_bytes >= kModernSmem) return DeviceClass::modern;
    if (sm == 80 && smem_optin_bytes == kA100Smem) return DeviceClass::a100;
    if ((sm == 86 || sm == 89 || sm == 120) && smem_optin_bytes == kRtxSmem) return DeviceClass::rtx;
    return make_error(ErrorCode::unsupported_device,
                      "sparse_delta_memory supports NVIDIA H100 / B200 / GB300 (compute capability 9.0 / 10.0 / 10.3), A100 (8.0) "
                      "and RTX 30 / 40 / 50 (8.6 / 8.9 / 12.0); device " +
                          std::to_string(ordinal) + " (" + std::string(name) + ") has compute capability " + std::to_string(cc.major) +
                          "." + std::to_string(cc.minor) + " with " + std::to_string(smem_optin_bytes) +
                          " bytes of opt-in shared memory per block");
}

int32_t class_smem_cap(DeviceClass c) noexcept {
    switch (c) {
    case DeviceClass::modern: return kModernSmem;
    case DeviceClass::a100: return kA100Smem;
    case DeviceClass::rtx: return kRtxSmem;
    }
    return 0;
}

int32_t class_smem_per_sm(DeviceClass c) noexcept { return class_smem_cap(c) + kReservedSmemPerBlock; }
bool class_allows_pdl(DeviceClass c) noexcept { return c == DeviceClass::modern; }
bool class_allows_clusters(DeviceClass c) noexcept { return c == DeviceClass::modern; }

namespace {
constexpr HardwareRow kRows[] = {
    {"NVIDIA H100 80GB HBM3", {9, 0}, 232448, 132, 52428800},     {"NVIDIA H200", {9, 0}, 232448, 132, 62914560},
    {"NVIDIA B200", {10, 0}, 232448, 148, 132120576},             {"NVIDIA GB300", {10, 3}, 232448, 152, 135528448},
    {"NVIDIA A100-SXM4-80GB", {8, 0}, 166912, 108, 41943040},     {"NVIDIA GeForce RTX 3090", {8, 6}, 101376, 82, 6291456},
    {"NVIDIA GeForce RTX 4090", {8, 9}, 101376, 128, 75497472},   {"NVIDIA GeForce RTX 5090", {12, 0}, 101376, 170, 100663296},
};
}  // namespace

std::span<const HardwareRow> hardware_rows() noexcept { return kRows; }

}  // namespace sdm::runtime
