// Launch plans (docs/PLANS.md): the manifest's plan table for a kernel, evaluated
// for a device and a problem. A pure function of (compiled table, device row, problem values), so
// every row of the hardware matrix is tested without a GPU and `sdm plan` prints them all. The
// occupancy check against the loaded function is the runtime's (launch.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/hardware_matrix.hpp"
#include "archive/manifest.hpp"
#include "archive/plan_expr.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

// The most launch attributes a host may add to a launch (sdm_launch_attributes, all of a chain).
inline constexpr size_t kMaxExtraLaunchAttributes = 16;

// What a plan expression sees of the device.
struct PlanDevice {
    std::optional<DeviceClass> device_class{DeviceClass::modern};  // nullopt: outside the hardware matrix
    uint16_t cc{90};          // 90 for 9.0
    int64_t sms{0};
    int64_t l2_bytes{0};
    int64_t smem_cap{0};      // the class's opt-in shared memory per block (class_smem_cap); the device's own when unclassified
    std::string description;  // "device 0 (NVIDIA H200, compute capability 9.0, class modern)" for messages
};

struct Plan {
    uint32_t grid{1};                         // blocks in x
    uint32_t block{1};                        // threads per block in x
    uint32_t smem{0};                         // dynamic shared memory per block, bytes
    std::array<uint32_t, 3> cluster{1, 1, 1};
    bool pdl{false};
    int32_t blocks_per_sm{1};                 // what the rule aims for
    int32_t rule{-1};                         // the rule that chose it; -1: a plugin or sdm_plan_for_elements
    uint32_t grid_y{1}, grid_z{1};            // blocks in y and z
    uint32_t block_y{1}, block_z{1};          // threads in y and z
    bool cooperative{false};                  // a cooperative launch (grid-wide sync)
    int32_t priority{0};                      // CU_LAUNCH_ATTRIBUTE_PRIORITY; 0: the stream's
    bool operator==(const Plan&) const = default;
    uint64_t blocks() const noexcept { return uint64_t{grid} * grid_y * grid_z; }       // after check_shape: < 2^63
    uint32_t threads() const noexcept { return block * block_y * block_z; }              // after check_shape: <= 1024
    uint64_t cluster_blocks() const noexcept { return uint64_t{cluster[0]} * cluster[1] * cluster[2]; }  // < 2^63
};

inline constexpr uint32_t kMaxBlockThreads = 1024;
inline constexpr uint32_t kMaxPortableCluster = 8;  // blocks per cluster without the non-portable opt-in
inline constexpr uint32_t kMaxGridX = 0x7fffffffu, kMaxGridYZ = 65535, kMaxBlockZ = 64;

// A kernel's plan table with every expression parsed once.
class PlanTable {
public:
    static Result<PlanTable> compile(const archive::KernelSpec& kernel);
    const std::string& kernel() const noexcept { return kernel_; }
    const std::vector<std::string>& problem() const noexcept { return problem_; }
    size_t rules() const noexcept { return rules_.size(); }

    // The first rule matching the device whose `when` holds chooses the plan, which is then
    // checked against the class (check_plan). `problem` has one value per problem parameter.
    Result<Plan> select(const PlanDevice& device, std::span<const int64_t> problem) const;

private:
    struct Rule {
        std::optional<DeviceClass> device_class;  // nullopt: a rule by capability range only
        uint16_t capability;
        uint16_t capability_min, capability_max;  // 0, 0: no range
        archive::Expression when, block, blocks_per_sm, smem, grid;
        std::array<archive::Expression, 3> cluster;
        archive::Expression pdl;
        archive::Expression block_y, block_z, grid_y, grid_z;
    };
    std::string kernel_;
    std::vector<std::string> problem_;
    std::vector<Rule> rules_;
};

// The dimensions of a launch as the driver bounds them: grid 1..2^31-1 in x, 1..65535 in y and z;
// block 1..1024 in x and y, 1..64 in z, at most 1024 threads; each grid dimension a multiple of the
// cluster's, each cluster dimension >= 1. Checked one dimension at a time before any product is
// formed; the message names the dimension, its value and its limit.
Result<void> check_shape(const Plan& plan);

// Whether `plan` may launch on the device's class: its shape (check_shape), shared memory within
// the class's cap, clusters (at most 8 blocks) and PDL only where the class has them. `who` names
// the plan's author in the message.
Result<void> check_plan(const Plan& plan, const PlanDevice& device, const std::string& who);

std::string plan_text(const Plan& plan);  // "grid 1056, block 256, ..." (x by y by z where y or z is not 1)
// What a plan sees of a device as read (device.hpp), in its class or outside the matrix.
struct DeviceProperties;
PlanDevice plan_device_of(const DeviceProperties& props, std::optional<DeviceClass> cls, std::string description);
// What a plan sees of a reference row (hardware_rows, or unclassified_rows: no class).
Result<PlanDevice> plan_device(const HardwareRow& row);  // "grid 1056, block 256, smem 0, cluster 1x1x1, pdl on"

}  // namespace sdm::runtime
