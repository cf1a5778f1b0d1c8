#include "hardware_matrix.hpp"

#include <algorithm>

namespace sdm {
namespace {

constexpr HardwareRow kRows[] = {
    {"NVIDIA H100 80GB HBM3", {9, 0}, 232448, 132, 52428800},     {"NVIDIA H200", {9, 0}, 232448, 132, 62914560},
    {"NVIDIA B200", {10, 0}, 232448, 148, 132120576},             {"NVIDIA GB300", {10, 3}, 232448, 152, 135528448},
    {"NVIDIA A100-SXM4-80GB", {8, 0}, 166912, 108, 41943040},     {"NVIDIA GeForce RTX 3090", {8, 6}, 101376, 82, 6291456},
    {"NVIDIA GeForce RTX 4090", {8, 9}, 101376, 128, 75497472},   {"NVIDIA GeForce RTX 5090", {12, 0}, 101376, 170, 100663296},
};

// "9.0 / 10.0 / 10.3"
std::string capabilities_text(const ClassRow& row) {
    std::string out;
    for (const uint16_t sm : row.capabilities)
        if (sm != 0) out += (out.empty() ? "" : " / ") + std::to_string(sm / 10) + "." + std::to_string(sm % 10);
    return out;
}

}  // namespace

const ClassRow& class_row(DeviceClass c) noexcept {
    for (const ClassRow& row : kClasses)
        if (row.device_class == c) return row;
    return kClasses[0];  // unreachable: every DeviceClass has a row
}

const char* device_class_name(DeviceClass c) noexcept { return class_row(c).name; }

std::optional<DeviceClass> parse_device_class(std::string_view name) noexcept {
    for (const ClassRow& row : kClasses)
        if (name == row.name) return row.device_class;
    return std::nullopt;
}

bool class_has_capability(DeviceClass c, uint16_t sm) noexcept {
    const auto& caps = class_row(c).capabilities;
    return sm != 0 && std::find(caps.begin(), caps.end(), sm) != caps.end();
}

std::optional<DeviceClass> class_of_capability(uint16_t sm) noexcept {
    for (const ClassRow& row : kClasses)
        if (class_has_capability(row.device_class, sm)) return row.device_class;
    return std::nullopt;
}

Result<DeviceClass> classify(int32_t ordinal, std::string_view name, Capability cc, int32_t smem_optin_bytes) {
    const auto sm = static_cast<uint16_t>(cc.sm());
    for (const ClassRow& row : kClasses)
        if (class_has_capability(row.device_class, sm) &&
            (row.smem_at_least ? smem_optin_bytes >= row.smem_optin_bytes : smem_optin_bytes == row.smem_optin_bytes))
            return row.device_class;
    // The seed's message, word for word: "H100 / B200 / GB300 (compute capability 9.0 / 10.0 /
    // 10.3), A100 (8.0) and RTX 30 / 40 / 50 (8.6 / 8.9 / 12.0)".
    std::string supported;
    for (size_t i = 0; i < std::size(kClasses); ++i)
        supported += std::string(i == 0 ? "" : i + 1 == std::size(kClasses) ? " and " : ", ") + kClasses[i].gpus + " (" +
                     (i == 0 ? "compute capability " : "") + capabilities_text(kClasses[i]) + ")";
    return make_error(ErrorCode::unsupported_device,
                      "sparse_delta_memory supports NVIDIA " + supported + "; device " + std::to_string(ordinal) + " (" + std::string(name) +
                          ") has compute capability " + std::to_string(cc.major) + "." + std::to_string(cc.minor) + " with " +
                          std::to_string(smem_optin_bytes) + " bytes of opt-in shared memory per block");
}

int32_t class_smem_cap(DeviceClass c) noexcept { return class_row(c).smem_optin_bytes; }
int32_t class_smem_per_sm(DeviceClass c) noexcept { return class_smem_cap(c) + kReservedSmemPerBlock; }
bool class_allows_pdl(DeviceClass c) noexcept { return class_row(c).pdl; }
bool class_allows_clusters(DeviceClass c) noexcept { return class_row(c).clusters; }
bool class_tested(DeviceClass c) noexcept { return class_row(c).tested; }

std::span<const HardwareRow> hardware_rows() noexcept { return kRows; }

namespace {
constexpr HardwareRow kUnclassifiedRows[] = {
    {"Tesla T4", {7, 5}, 65536, 40, 4194304},
    {"Tesla V100-SXM2-32GB", {7, 0}, 98304, 80, 6291456},
    {"Orin", {8, 7}, 166912, 16, 4194304},
};
}  // namespace

std::span<const HardwareRow> unclassified_rows() noexcept { return kUnclassifiedRows; }

}  // namespace sdm
