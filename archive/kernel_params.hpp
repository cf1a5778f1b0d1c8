// The kernels an image defines and the parameter signature of each, derived from the image itself:
// a cubin's parameter table (the EIATTR_KPARAM_INFO records of its .nv.info.<kernel> sections) or
// a PTX module's .entry parameter lists. `sdm pack` and `sdm import` write these signatures into the
// manifest for kernels it does not declare, and check the ones it declares against them
// (check_signature_layout). Images come from outside: every record, offset and size is checked
// against the bytes before use, and the work is linear in the image. docs/FORMAT.md ("Derived
// signatures") has the byte layout and how it was verified.
#pragma once

#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "manifest.hpp"
#include "common/result.hpp"

namespace sdm::archive {

inline constexpr uint8_t kEiattrParamCbank = 0x0a;  // u32 symbol, u16 offset, u16 size of the parameter bank
inline constexpr uint8_t kEiattrKparamInfo = 0x17;  // one parameter: u32 index, u16 ordinal, u16 offset, u32 packed size

struct KernelParams {
    std::string name;
    Signature signature;  // b8..b64 and opaque:SIZE:ALIGN only (derived_param_type)
    // Why the signature cannot go into a manifest (more than 64 parameters, a parameter past the
    // 4096 bytes of an opaque type, a cubin's gap between parameters that no alignment explains, a
    // cubin's parameter bank without its parameters); empty when it can. The image is sound.
    std::string unrepresentable;
    // False for the last two: `signature` does not have the image's layout, so no declared
    // signature can be checked against it.
    bool offsets_exact{true};
};

// The derived type of a parameter of `size` bytes aligned to `align`: b8, b16, b32, b64 when the
// size is 1, 2, 4 or 8 and the alignment equals it, else opaque:SIZE:ALIGN.
ParamType derived_param_type(uint32_t size, uint32_t align);

// Every entry point of a cubin (inspect_cubin's kernels) with its signature, sorted by name. A
// cubin does not record alignments: a parameter's is the largest power of two <= 8 dividing its
// size and its offset, raised (to at most 256) when the C layout of the parameters before it would
// otherwise place it below its recorded offset; a gap even that does not explain, or a parameter
// bank without KPARAM_INFO records, makes the signature unrepresentable. ErrorCode::archive_corrupt,
// naming the kernel, for
// a kernel without its .nv.info section, records that lie outside it, ordinals missing or repeated,
// and parameters that overlap or pass the parameter bank.
Result<std::vector<KernelParams>> cubin_kernel_params(Bytes cubin);
// Every .entry of a PTX module with its signature, sorted by name: `.param .u64 p` is b64, `.param
// .align 2 .b8 h[2]` b16, `.param .align 4 .b8 s[12]` opaque:12:4. ErrorCode::archive_corrupt for
// a malformed parameter list.
Result<std::vector<KernelParams>> ptx_kernel_params(Bytes ptx);
// The two above by kind; other kinds (LTO-IR, fatbin) come back empty.
Result<std::vector<KernelParams>> image_kernel_params(Kind kind, Bytes bytes);

}  // namespace sdm::archive
