// The manifest: the archive entry that says which kernels exist, in which module, with which
// parameter signature, under which kernel ABI version, and how to launch them (plan tables per
// device class). Binary and versioned inside the archive (a tag-length-value tree, so later
// minors add fields that older readers skip); the packer reads it from TOML (docs/FORMAT.md).
#pragma once

#include <array>
#include <span>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "plan_expr.hpp"
#include "common/result.hpp"

namespace sdm::archive {

inline constexpr uint16_t kManifestMajor = 1;
inline constexpr uint16_t kManifestMinor = 0;    // what the encoder writes unless a 1.1 field is used
inline constexpr uint16_t kManifestMinor11 = 1;  // long names, the extended types, capability-range rules
inline constexpr uint16_t kManifestMinor12 = 2;  // a kernel name listed by several modules; recorded name expressions
inline constexpr size_t kMaxProblemParameters = 8;

// Parameter types of a kernel signature, as written: "ptr,ptr,i32,f32,opaque:40:4".
//   ptr i32 u32 i64 u64 f32 f64  scalars and pointers (format 1.0)
//   f16 bf16                     half-precision scalars (2 bytes, aligned 2)
//   b8 b16 b32 b64               a value of that many bits whose type the image does not say (a
//                                signature derived from a cubin or PTX: `.u64` is a pointer or an
//                                integer alike)
//   opaque:SIZE:ALIGN            a struct passed by value: SIZE bytes (1..4096) aligned to ALIGN
//                                (a power of two, 1..256)
enum class ParamKind : uint8_t { ptr = 1, i32, u32, i64, u64, f32, f64, f16, bf16, b8, b16, b32, b64, opaque };
struct ParamType {
    ParamKind kind{ParamKind::ptr};
    uint32_t size{8};
    uint32_t align{8};
    bool operator==(const ParamType&) const = default;
    // The fixed-size kinds, as values: ParamType::ptr.
    static const ParamType ptr, i32, u32, i64, u64, f32, f64, f16, bf16, b8, b16, b32, b64;
};
inline constexpr ParamType ParamType::ptr{ParamKind::ptr, 8, 8}, ParamType::i32{ParamKind::i32, 4, 4}, ParamType::u32{ParamKind::u32, 4, 4},
    ParamType::i64{ParamKind::i64, 8, 8}, ParamType::u64{ParamKind::u64, 8, 8}, ParamType::f32{ParamKind::f32, 4, 4}, ParamType::f64{ParamKind::f64, 8, 8},
    ParamType::f16{ParamKind::f16, 2, 2}, ParamType::bf16{ParamKind::bf16, 2, 2}, ParamType::b8{ParamKind::b8, 1, 1}, ParamType::b16{ParamKind::b16, 2, 2},
    ParamType::b32{ParamKind::b32, 4, 4}, ParamType::b64{ParamKind::b64, 8, 8};
inline constexpr uint32_t kMaxOpaqueSize = 4096, kMaxOpaqueAlign = 256;
using Signature = std::vector<ParamType>;
std::string param_type_name(const ParamType& type);  // "ptr", "opaque:40:4"
size_t param_type_size(const ParamType& type) noexcept;
// Whether a type needs manifest 1.1 (anything but the seven 1.0 types).
bool param_type_is_11(const ParamType& type) noexcept;
Result<Signature> parse_signature(std::string_view text);
std::string signature_text(const Signature& signature);
// The byte offset of each parameter in the kernel's parameter buffer, by the C rules (each
// aligned to its type's alignment), and the buffer's size.
std::vector<uint32_t> param_offsets(const Signature& signature, uint32_t* total = nullptr);
// A declared signature against one derived from an image: the same number of parameters, each
// of the same size at the same offset (a derived `b64` takes a ptr, i64, u64 or f64; b16 an f16 or
// bf16; an opaque one any type of its size and alignment). ErrorCode::mismatch naming the kernel,
// the first parameter that differs and both views.
Result<void> check_signature_layout(const std::string& kernel, const Signature& declared, const Signature& derived, const std::string& derived_from);

// One rule of a plan table. Rules of a kernel are tried in order; the first whose class (and
// capability, when given) matches the device and whose `when` is non-zero chooses the plan.
struct PlanRule {
    std::string device_class;  // "modern", "a100" or "rtx"; empty: a rule by capability range only (manifest 1.1)
    uint16_t capability{0};    // 0: any device of the class; else one capability (90, 100, 103)
    // A range of capabilities, inclusive (75..89: 7.5 to 8.9); 0 each: none. With a class, the
    // device must be of the class and in the range; without one, in the range, classified or not.
    uint16_t capability_min{0}, capability_max{0};
    std::string when{"1"};
    std::string block;              // threads per block
    std::string blocks_per_sm{"1"}; // resident blocks per SM the plan aims for
    std::string smem{"0"};          // dynamic shared memory per block, bytes
    std::string grid;               // blocks in the grid
    std::array<std::string, 3> cluster{"1", "1", "1"};
    std::string pdl{"0"};           // non-zero: launch with programmatic dependent launch
    // Manifest 1.1, sdm 0.4: a 3-D launch (tags 14-17, written only when not "1").
    std::string block_y{"1"}, block_z{"1"};  // threads per block in y and z
    std::string grid_y{"1"}, grid_z{"1"};    // blocks in y and z

    bool operator==(const PlanRule&) const = default;
};

struct KernelSpec {
    std::string name;
    std::string module;
    Signature signature;
    std::vector<std::string> problem;  // names of the integer problem parameters (at most 8)
    std::vector<PlanRule> plans;
};

// A name expression as its author wrote it ("fill<float, 256>", "enum_param<mylib::Tag::B>"),
// lowered at build time (by NVRTC or nvcc) to the symbol of a kernel the manifest lists in
// `module` (manifest 1.2, docs/FORMAT.md). A lookup by the expression finds that kernel.
struct NameExpression {
    std::string expression;
    std::string module;
    std::string symbol;
    bool operator==(const NameExpression&) const = default;
};
inline constexpr size_t kMaxNameExpressions = 65536;
// The form a name expression is stored and looked up in: its whitespace removed but one space
// between two identifier characters ("fill< float,256 >" and "fill<float, 256>" are both
// "fill<float,256>"; "unsigned  long" is "unsigned long").
std::string expression_key(std::string_view expression);
// What is wrong with a name expression's text; "" when nothing: 1 to 4096 printable ASCII bytes
// (spaces allowed: "fill<float, 256>").
std::string expression_problem(std::string_view text);
inline constexpr size_t kMaxNameExpressionBytes = 4096;

// The module-qualified spelling of a kernel, "MODULE!NAME": '!' never appears in a C++ name (nor
// in a name expression's head), so the form cannot be mistaken for one. A name whose part before
// its first '!' is not a valid module name (format.hpp) is not qualified.
inline constexpr char kModuleSeparator = '!';
struct QualifiedName {
    std::string_view module;  // empty: not qualified
    std::string_view name;
};
QualifiedName split_module(std::string_view requested) noexcept;
std::string qualified_name(std::string_view module, std::string_view name);

// What `hardware_matrix` declares: the archive's kernels follow the SDM hardware matrix
// (common/hardware_matrix.hpp: devices outside it are refused, images are checked by the image
// policy, plans are chosen by class). Absent: its kernels are served on every device the driver
// supports with a fitting image.
inline constexpr const char* kSdmHardwareMatrix = "sdm";

struct Manifest {
    uint16_t kernel_abi_major{0};
    uint16_t kernel_abi_minor{0};
    std::string content_version;
    bool hardware_matrix{false};  // the archive follows the SDM hardware matrix
    std::vector<KernelSpec> kernels;  // sorted by (name, module) (decode and the TOML reader sort them)
    std::vector<NameExpression> expressions;  // manifest 1.2; sorted by (expression, module)

    // The kernels listed as `name`, one per module (binary search).
    std::span<const KernelSpec> kernels_named(std::string_view name) const;
    // The kernel `name` of `module`; with an empty module, the first module listing it.
    const KernelSpec* find_kernel(std::string_view name, std::string_view module = {}) const;
};

// The names a plan expression may use, in the order evaluate() expects their values: the kernel's
// problem parameters, then the device (sms, l2_bytes, smem_cap, cc), then the rule's earlier
// outputs (block, blocks_per_sm, smem).
std::vector<std::string> plan_variables(const KernelSpec& kernel);
inline constexpr const char* kDeviceVariables[] = {"sms", "l2_bytes", "smem_cap", "cc"};
inline constexpr const char* kOutputVariables[] = {"block", "blocks_per_sm", "smem"};

// Whether encoding `manifest` needs minor 1 (a name past 256 bytes, a 1.1 type, a range rule).
bool needs_manifest_11(const Manifest& manifest);
// Whether a kernel name is listed by more than one module (manifest 1.2, required tag 5).
bool has_repeated_names(const Manifest& manifest);
// Checks one kernel's names, signature, problem parameters, classes and that every expression
// parses against its variables; `max_name` is 256 in manifest 1.0, 65535 in 1.1.
Result<void> validate_kernel(const KernelSpec& kernel, size_t max_name);
// validate_kernel for every kernel, each (name, module) once, the content version, and every name
// expression: at most 4096 printable bytes, naming a listed kernel, each (expression, module) once.
Result<void> validate_manifest(const Manifest& manifest);
Result<ByteVector> encode_manifest(const Manifest& manifest);
// Every kernel decoded and validated (the tools, `sdm verify`); a mount builds a ManifestIndex.
Result<Manifest> decode_manifest(Bytes bytes);

// A manifest as a mount reads it: its top-level fields, and its kernels indexed by name as views
// into the manifest's bytes (which the caller keeps alive as long as the index). Building it
// walks the bytes once, checking every item's structure, every kernel's name and module, and
// that no kernel is listed twice: linear in the bytes, with one allocation for the index and
// none per kernel. A kernel's other fields (signature, problem, plans, every expression) are
// decoded and checked when it is first used (spec()), as decode_manifest does for all of them.
class ManifestIndex {
public:
    struct Kernel {
        std::string_view name;
        std::string_view module;
        Bytes item;  // the kernel's container
    };
    static Result<ManifestIndex> build(Bytes manifest);

    uint16_t kernel_abi_major{0};
    uint16_t kernel_abi_minor{0};
    std::string content_version;
    bool hardware_matrix{false};

    size_t size() const noexcept { return kernels_.size(); }
    std::span<const Kernel> kernels() const noexcept { return kernels_; }  // sorted by (name, module)
    // The kernels listed as `name`: several only in a manifest of minor 2 that says so (one per
    // module). Binary search.
    std::span<const Kernel> find_all(std::string_view name) const;
    // The kernel `name` of `module` (binary search); with an empty module, find_all's only one, or
    // nullptr when none or several modules list it.
    const Kernel* find(std::string_view name, std::string_view module = {}) const;
    struct Expression {
        std::string_view expression, module, symbol;
    };
    // The recorded name expressions (manifest 1.2), as written, each naming a listed kernel.
    std::span<const Expression> expressions() const noexcept { return expressions_; }
    // The expressions recorded as `key` (expression_key), one per module that records it; binary search.
    std::span<const Expression> find_expression(std::string_view key) const;
    // The kernels of module `module`, sorted by name, found by binary search: what a load of the
    // module reads of the manifest, never the other modules' records.
    std::vector<const Kernel*> of_module(std::string_view module) const;
    Result<KernelSpec> spec(const Kernel& kernel) const;                   // `kernel` from kernels()

private:
    Result<void> add_expression(Bytes item);  // one tag-6 item, checked
    uint16_t minor_{0};
    size_t max_name_{0};
    std::vector<Kernel> kernels_;
    std::vector<Expression> expressions_;
    std::vector<uint32_t> by_module_;  // indices into kernels_, sorted by (module, name)
};

}  // namespace sdm::archive
