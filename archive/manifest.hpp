// The manifest: the archive entry that says which kernels exist, in which module, with which
// parameter signature, under which kernel ABI version, and how to launch them (plan tables per
// device class). Binary and versioned inside the archive (a tag-length-value tree, so later
// minors add fields that older readers skip); the packer reads it from TOML (docs/FORMAT.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "plan_expr.hpp"
#include "result.hpp"

namespace sdm::archive {

inline constexpr uint16_t kManifestMajor = 1;
inline constexpr uint16_t kManifestMinor = 0;
inline constexpr size_t kMaxProblemParameters = 8;

// Parameter types of a kernel signature, as written: "ptr,ptr,i32,f32".
enum class ParamType : uint8_t { ptr = 1, i32 = 2, u32 = 3, i64 = 4, u64 = 5, f32 = 6, f64 = 7 };
const char* param_type_name(ParamType type) noexcept;
size_t param_type_size(ParamType type) noexcept;
Result<std::vector<ParamType>> parse_signature(std::string_view text);
std::string signature_text(const std::vector<ParamType>& signature);

// One rule of a plan table. Rules of a kernel are tried in order; the first whose class (and
// capability, when given) matches the device and whose `when` is non-zero chooses the plan.
struct PlanRule {
    std::string device_class;  // "modern", "a100" or "rtx"
    uint16_t capability{0};    // 0: any device of the class; else one capability (90, 100, 103)
    std::string when{"1"};
    std::string block;              // threads per block
    std::string blocks_per_sm{"1"}; // resident blocks per SM the plan aims for
    std::string smem{"0"};          // dynamic shared memory per block, bytes
    std::string grid;               // blocks in the grid
    std::array<std::string, 3> cluster{"1", "1", "1"};
    std::string pdl{"0"};           // non-zero: launch with programmatic dependent launch

    bool operator==(const PlanRule&) const = default;
};

struct KernelSpec {
    std::string name;
    std::string module;
    std::vector<ParamType> signature;
    std::vector<std::string> problem;  // names of the integer problem parameters (at most 8)
    std::vector<PlanRule> plans;
};

struct Manifest {
    uint16_t kernel_abi_major{0};
    uint16_t kernel_abi_minor{0};
    std::string content_version;
    std::vector<KernelSpec> kernels;  // sorted by name (decode and the TOML reader sort them)

    const KernelSpec* find_kernel(std::string_view name) const;
};

// The names a plan expression may use, in the order evaluate() expects their values: the kernel's
// problem parameters, then the device (sms, l2_bytes, smem_cap, cc), then the rule's earlier
// outputs (block, blocks_per_sm, smem).
std::vector<std::string> plan_variables(const KernelSpec& kernel);
inline constexpr const char* kDeviceVariables[] = {"sms", "l2_bytes", "smem_cap", "cc"};
inline constexpr const char* kOutputVariables[] = {"block", "blocks_per_sm", "smem"};

// Checks names, signatures, classes and that every expression parses against its variables.
Result<void> validate_manifest(const Manifest& manifest);
Result<ByteVector> encode_manifest(const Manifest& manifest);
Result<Manifest> decode_manifest(Bytes bytes);

}  // namespace sdm::archive
