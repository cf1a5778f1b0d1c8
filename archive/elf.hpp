// The ELF64 constants the archive layer's readers share (cubin.cpp, host_binary.cpp,
// kernel_params.cpp) and the tool's import: one place for each fact of the ELF format and of
// NVIDIA's use of it. The readers themselves check every field against the bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdm::archive::elf {

inline constexpr size_t kElfHeaderSize = 64;      // e_ehsize of ELF64
inline constexpr size_t kSectionHeaderSize = 64;  // e_shentsize of ELF64
inline constexpr uint16_t kEmCuda = 190;          // e_machine EM_CUDA

// sh_type
inline constexpr uint32_t kShtProgbits = 1;
inline constexpr uint32_t kShtSymtab = 2;
inline constexpr uint32_t kShtStrtab = 3;
inline constexpr uint32_t kShtRela = 4;
inline constexpr uint32_t kShtNobits = 8;  // occupies no bytes of the file
inline constexpr uint32_t kShtRel = 9;
inline constexpr uint32_t kShtCudaInfo = 0x70000000;  // SHT_LOPROC: .nv.info and .nv.info.<kernel>

// sh_flags
inline constexpr uint64_t kShfAlloc = 0x2;
inline constexpr uint64_t kShfExecinstr = 0x4;

inline constexpr uint16_t kShnXindex = 0xffff;  // e_shstrndx: the real index is section 0's sh_link

}  // namespace sdm::archive::elf
