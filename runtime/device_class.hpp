// The hardware matrix (DESIGN.md; the seed's _device.backend()): which class of kernels and plans
// serves a device, from its compute capability and its opt-in shared memory per block alone.
// A pure function, so selection and plan tests can walk every row without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "result.hpp"

namespace sdm::runtime {

enum class DeviceClass : int32_t { modern = 1, a100 = 2, rtx = 3 };

inline constexpr int32_t kModernSmem = 232448;  // H100 / B200 / GB300: at least this much
inline constexpr int32_t kA100Smem = 166912;    // A100: exactly
inline constexpr int32_t kRtxSmem = 101376;     // RTX 30 / 40 / 50: exactly
inline constexpr int32_t kReservedSmemPerBlock = 1024;  // the system's share of shared memory per resident block (sm_80+)

struct Capability {
    int32_t major{0};
    int32_t minor{0};
    int32_t sm() const noexcept { return major * 10 + minor; }
    bool operator==(const Capability&) const = default;
};

const char* device_class_name(DeviceClass c) noexcept;  // "modern", "a100", "rtx"
std::optional<DeviceClass> parse_device_class(std::string_view name) noexcept;

// The class of a device, or ErrorCode::unsupported_device with the seed's message naming the supported
// GPUs and this device's ordinal, name, capability and opt-in shared memory.
Result<DeviceClass> classify(int32_t ordinal, std::string_view name, Capability cc, int32_t smem_optin_bytes);

// Opt-in shared memory per block every plan of the class assumes (modern: 232,448 on any modern part).
int32_t class_smem_cap(DeviceClass c) noexcept;
// Shared memory per SM of the class: its cap plus the 1,024 bytes reserved per block.
int32_t class_smem_per_sm(DeviceClass c) noexcept;
// Programmatic dependent launch may be requested: the modern class only.
bool class_allows_pdl(DeviceClass c) noexcept;
// Thread-block clusters may be requested: the modern class only.
bool class_allows_clusters(DeviceClass c) noexcept;

// The reference rows of the hardware matrix (DESIGN.md): one GPU per row, as its driver reports
// it. `sdm plan` prints a plan for each; tests run over them.
struct HardwareRow {
    const char* name;
    Capability capability;
    int32_t smem_optin_bytes;
    int32_t sm_count;
    uint64_t l2_bytes;
};
std::span<const HardwareRow> hardware_rows() noexcept;

}  // namespace sdm::runtime
