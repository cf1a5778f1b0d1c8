// Where device code sits in host binaries: the fatbin containers of an ELF64 shared library,
// executable or relocatable object, of every member of a static archive (ar, with GNU or BSD long
// names), or of a .fatbin file itself. nvcc writes one container per translation unit, and a
// linker puts the containers of all the objects it links back to back in one section; each comes
// back with where it was found, which is what an import names its module after. The input is
// hostile: every table, size and name is checked against the bytes before use, and the work is
// linear in the input (docs/FORMAT.md, "Fatbins in host binaries").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::archive {

struct EmbeddedFatbin {
    std::string_view member;  // the ar member's name, a view into the input (never copied per container: a
                              // long name over many small containers would multiply it); empty outside
                              // a static archive. Raw bytes: print it through printable()
    size_t member_index{0};   // the member's position in the archive, from 0 (names may repeat)
    std::string_view section; // ".nv_fatbin", "__nv_relfatbin", the data section a scan found it in (a view into
                              // the input's section-name table), or empty in a .fatbin file
    size_t ordinal{0};        // position among the containers of the same member and section, from 0
    uint64_t offset{0};       // of the container's first byte, from the start of the input
    bool relocatable{false};  // from __nv_relfatbin: -rdc device code for nvlink, not what the CUDA runtime loads
    bool scanned{false};      // found by scanning a data section for the magic, not in a fatbin section
    Bytes bytes;              // exactly the container, a view into the input; parse_fatbin reads it
};

struct FatbinSearch {
    // Also scan the ELF's other data sections (allocated, not executable) for containers on 8-byte
    // boundaries: libraries that load their device code themselves keep it there (CUDA 13.0: cuFFT
    // in .ldata, cuBLASLt and cuDNN in .cask_resource, cuSPARSE and CUPTI in .rodata). Bytes that
    // only look like a container there are skipped, not refused.
    bool scan_data_sections{true};
};

// Every container in `input`, in file order: about a hundred bytes of memory each (views into the
// input, whatever its names weigh), so the cost is linear in the input however small its containers. ErrorCode::invalid_argument for bytes that are none
// of the three formats (or an ELF without section headers); ErrorCode::unsupported for ELF32,
// big-endian ELF and thin archives; ErrorCode::archive_corrupt, naming the member, the section and
// the container, for tables, sizes or names that lie outside the input, overlapping sections, and
// a fatbin section that holds anything but containers and zero padding.
Result<std::vector<EmbeddedFatbin>> find_fatbins(Bytes input, const FatbinSearch& search = {});

// The bytes of the PROGBITS section `name` of the ELF64 file `elf` (libsdm's embedded archive is
// one: `sdm info` reads it), nullopt when there is none; the same checks as above, and two
// sections of the name are refused. `where` names the file in messages.
Result<std::optional<Bytes>> elf_section(Bytes elf, std::string_view name, const std::string& where);

}  // namespace sdm::archive
