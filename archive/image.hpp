// What an image's own bytes say about it: a cubin's SM from its ELF header, a PTX module's
// .target and .version, an LTO-IR container's arch, a fatbin's entries (each inner image checked
// as a bare one), and the kernels each defines.
// The packer compares this with what the archive index declares and refuses a disagreement;
// the fake driver and `sdm ls` reuse it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "common/result.hpp"

namespace sdm::archive {

struct ImageInfo {
    Kind kind{Kind::cubin};
    uint16_t sm{0};                    // the SM (cubin) or virtual arch (PTX, LTO-IR); 0 when unknown
    std::optional<Variant> variant;    // PTX: its .target; cubins: ptxas's command line in .note.nv.tkinfo; LTO-IR: a when its
                                       // container says so (f is not recorded)
    uint16_t ptx_isa{0};               // PTX .version as major*10+minor (9.0 -> 90); 0 for other kinds
    uint8_t elf_abi_version{0};        // cubins: EI_ABIVERSION (7: older toolkits, 8: CUDA 13)
    uint16_t virtual_sm{0};            // cubins: the virtual arch ptxas compiled from (.note.nv.cuinfo; 80 for a
                                       // -gencode arch=compute_80,code=sm_90 cubin): what the driver reports as
                                       // CU_FUNC_ATTRIBUTE_PTX_VERSION. PTX and LTO-IR: their arch. 0 when unknown
    std::vector<std::string> kernels;  // entry points, sorted: cubin STO_CUDA_ENTRY functions, PTX .entry
    std::vector<uint16_t> kernel_sections;  // cubins: each kernel's st_shndx (its .text section), beside kernels
    // cubins: the module's variables (__device__, __constant__: defined STT_OBJECT symbols with a
    // size, not the toolchain's own '.'-names), sorted by name, with their sizes in bytes
    std::vector<std::pair<std::string, uint64_t>> globals;
    // cubins: the bytes of the sections the driver places in device memory (code, module
    // constants, globals; not shared, local or parameter memory), as the ELF declares them
    uint64_t device_bytes{0};
    // cubins: relocatable (ET_REL), and the functions it calls without defining them (STT_FUNC
    // symbols in no section), sorted. A relocatable cubin with such calls is a device link's input
    // (nvJitLink links it with the code that defines them: cuSPARSE's SpMMOp kernels with the
    // caller's operators), not a module the driver can load alone: link_input_error names it.
    bool relocatable{false};
    std::vector<std::string> undefined_functions;
};

// An error (ErrorCode::unsupported) naming image `what` when `info` is a cubin the driver cannot
// load alone (ImageInfo::undefined_functions of a relocatable cubin); nullopt otherwise.
std::optional<Error> link_input_error(const ImageInfo& info, const std::string& what);

// Cubin facts (CUDA 13.0): ELF64 little-endian, e_machine 190 (EM_CUDA), EI_OSABI 0x41. With
// EI_ABIVERSION 8 the SM is bits 8-15 of e_flags (sm_90: 0x06005a04); with 7, e_flags & 0xff. The
// ELF header does not record a/f; ptxas's note .note.nv.tkinfo does ("-arch sm_90a"), when present.
Result<ImageInfo> inspect_cubin(Bytes bytes);
// PTX: the first `.version X.Y` and the first `.target sm_XY[a|f]` directives; every `.entry NAME(`.
Result<ImageInfo> inspect_ptx(Bytes bytes);
// LTO-IR (NVVM IR container): magic 0x7f4e43ed, container version 1.x, the option tuples, option
// data and IR in order inside the bytes with a non-empty IR, and exactly one arch option (key 1,
// the arch times 10). The IR itself is opaque: a link of LTO-IR runs isolated (jit_isolation.hpp).
Result<ImageInfo> inspect_ltoir(Bytes bytes);
// Fatbin: one container (fatbin.hpp's parse_fatbin: every entry's header, payload, name and options
// inside it; bytes after it are tolerated), and every entry's image, decoded where compressed, put
// through the checks of its kind and compared with the arch and variant its entry header declares.
// An entry of a kind sdm does not know, or LTO-IR (encoded: sdm cannot decode it; raw: nvcc never
// writes it), fails: it would reach a compiler unchecked.
// Arch-free in the index.
Result<ImageInfo> inspect_fatbin(Bytes bytes);
Result<ImageInfo> inspect_image(Kind kind, Bytes bytes);

// Refuses (ErrorCode::mismatch) an image whose bytes disagree with the declared kind, SM or variant.
// `what` names the image in the message ("module sdm_gather, sm_90a").
Result<ImageInfo> check_declared_target(Kind kind, uint16_t sm, Variant variant, Bytes bytes, const std::string& what);

}  // namespace sdm::archive
