// The hardware matrix of the SDM kernels (the seed's _device.backend(); docs/PLANS.md prints
// its rows with `sdm plan`): which class of kernels and plans serves a device, from its compute
// capability and its opt-in shared memory per block alone. One table (kClasses) says, per class,
// its capabilities, its shared memory, its launch features, whether this release tested it and
// how the seed names its GPUs; the runtime's classification, the manifest's plan rules, the image
// policy, `sdm jit` and the tests all read it. Pure data and functions: no CUDA.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "result.hpp"

namespace sdm {

enum class DeviceClass : int32_t { modern = 1, a100 = 2, rtx = 3 };

struct Capability {
    int32_t major{0};
    int32_t minor{0};
    int32_t sm() const noexcept { return major * 10 + minor; }
    bool operator==(const Capability&) const = default;
};

// The system's share of shared memory per resident block (sm_80 and later).
inline constexpr int32_t kReservedSmemPerBlock = 1024;

struct ClassRow {
    DeviceClass device_class;
    const char* name;                        // "modern": what manifests and messages call it
    std::array<uint16_t, 3> capabilities;    // major*10+minor; 0 ends a shorter list
    int32_t smem_optin_bytes;                // what the class's plans assume
    bool smem_at_least;                      // modern: at least that much; the others: exactly
    bool pdl;                                // programmatic dependent launch may be requested
    bool clusters;                           // thread-block clusters may be requested
    bool tested;                             // this release ran on the class (false: warn once per device)
    const char* gpus;                        // "H100 / B200 / GB300", for messages
};

inline constexpr ClassRow kClasses[] = {
    {DeviceClass::modern, "modern", {90, 100, 103}, 232448, true, true, true, true, "H100 / B200 / GB300"},
    {DeviceClass::a100, "a100", {80, 0, 0}, 166912, false, false, false, true, "A100"},
    {DeviceClass::rtx, "rtx", {86, 89, 120}, 101376, false, false, false, false, "RTX 30 / 40 / 50"},
};

const ClassRow& class_row(DeviceClass c) noexcept;
const char* device_class_name(DeviceClass c) noexcept;  // "modern", "a100", "rtx"
std::optional<DeviceClass> parse_device_class(std::string_view name) noexcept;
// Whether capability `sm` (major*10+minor) is one of the class's.
bool class_has_capability(DeviceClass c, uint16_t sm) noexcept;
// The class whose capabilities hold `sm`, whatever the device's shared memory (for tools that
// know an SM but no device, as `sdm jit` does); nullopt outside the matrix.
std::optional<DeviceClass> class_of_capability(uint16_t sm) noexcept;

// The class of a device, or ErrorCode::unsupported_device with the seed's message naming the
// supported GPUs and this device's ordinal, name, capability and opt-in shared memory.
Result<DeviceClass> classify(int32_t ordinal, std::string_view name, Capability cc, int32_t smem_optin_bytes);

// Opt-in shared memory per block every plan of the class assumes (modern: 232,448 on any modern part).
int32_t class_smem_cap(DeviceClass c) noexcept;
// Shared memory per SM of the class: its cap plus the 1,024 bytes reserved per block.
int32_t class_smem_per_sm(DeviceClass c) noexcept;
bool class_allows_pdl(DeviceClass c) noexcept;
bool class_allows_clusters(DeviceClass c) noexcept;
// Whether this release ran on the class (sdm_device_info.untested is its negation).
bool class_tested(DeviceClass c) noexcept;

// The reference rows of the hardware matrix: one GPU per row, as its driver reports it. `sdm plan`
// prints a plan for each; tests run over them.
struct HardwareRow {
    const char* name;
    Capability capability;
    int32_t smem_optin_bytes;
    int32_t sm_count;
    uint64_t l2_bytes;
};
std::span<const HardwareRow> hardware_rows() noexcept;
// GPUs outside the matrix (T4, V100, Jetson Orin, an H100 PCIe-like part with less shared memory
// is not among them: classify decides), as their drivers report them: an archive that does not
// follow the matrix is served on them by capability; `sdm plan` and the tests show them unclassified.
std::span<const HardwareRow> unclassified_rows() noexcept;

}  // namespace sdm
