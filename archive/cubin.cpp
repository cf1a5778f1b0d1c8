// ELF64 parsing of cubins: every offset and count is checked against the buffer before use.
#include <algorithm>
#include <optional>
#include <vector>

#include "elf.hpp"
#include "image.hpp"

namespace sdm::archive {
namespace {

using namespace elf;

constexpr uint8_t kOsAbiCuda = 0x41;
// Cubins of ELF ABI version 7 (ptxas of CUDA 11.x-12.x, and CUDA 13.0's for sm_70; cuSPARSE, cuFFT
// and cuDNN 9 ship them) carry EI_OSABI 0x33 and the toolkit's version in e_version (0x73 for
// 11.5 ... 0x82 for 13.0) where ABI version 8 has 0x41 and 1.
constexpr uint8_t kOsAbiCudaAbi7 = 0x33;
constexpr uint8_t kStoCudaEntry = 0x10;  // st_other bit nvcc sets on __global__ functions
constexpr uint8_t kSttFunc = 2;
constexpr uint16_t kEtRel = 1;
constexpr uint8_t kSttObject = 1;
constexpr size_t kProgramHeaderSize = 56;
constexpr size_t kSymbolSize = 24;

Error bad(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "not a valid cubin: " + why); }

// Whether section `name` (an offset into the section-name table, whose bounds the caller checked)
// is `wanted`. Compares at most wanted.size() + 1 bytes: never a scan for the terminator, which a
// hostile table can make cost its whole length once per section.
bool section_named(Bytes b, uint64_t shoff, uint16_t shstrndx, uint32_t name, std::string_view wanted) {
    const size_t sh = shoff + size_t{shstrndx} * kSectionHeaderSize;
    const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
    if (name >= size || size - name < wanted.size() + 1) return false;
    return as_text(b.subspan(off + name, wanted.size())) == wanted && load_u8(b, off + name + wanted.size()) == 0;
}

// Whether the name of a section starts with `prefix` (the same bounds as section_named).
bool section_name_starts(Bytes b, uint64_t shoff, uint16_t shstrndx, uint32_t name, std::string_view prefix) {
    const size_t sh = shoff + size_t{shstrndx} * kSectionHeaderSize;
    const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
    if (name >= size || size - name < prefix.size()) return false;
    return as_text(b.subspan(off + name, prefix.size())) == prefix;
}

// ptxas records its command line in the .note.nv.tkinfo note ("-arch sm_90a -m 64"): the only
// place a cubin names its a/f variant. Absent (older toolkits, stripped notes): unknown.
std::optional<Variant> tool_kit_variant(Bytes note) {
    const auto text = as_text(note);
    const auto at = text.find("-arch sm_");
    if (at == std::string_view::npos) return std::nullopt;
    size_t end = at + 6;
    while (end < text.size() && text[end] != ' ' && text[end] != '\0') ++end;
    const auto target = parse_target("compute_" + std::string(text.substr(at + 9, end - at - 9)));
    return target ? std::optional<Variant>(target->variant) : std::nullopt;
}

// The .note.nv.cuinfo note (type 1000, owner "NVIDIA Corp") describes how the cubin was made; its
// descriptor holds u16 version, u16 virtual arch (0x50 for compute_80), u16 toolkit (0x82: 13.0).
// Observed on CUDA 12.x-13.0 output; absent or malformed: unknown (0).
uint16_t cuinfo_virtual_sm(Bytes note) {
    if (note.size() < 12) return 0;
    const uint32_t namesz = load_u32(note, 0), descsz = load_u32(note, 4), type = load_u32(note, 8);
    const uint64_t desc = 12 + ((uint64_t{namesz} + 3) & ~uint64_t{3});
    if (type != 1000 || descsz < 4 || desc + descsz > note.size()) return 0;
    return load_u16(note, static_cast<size_t>(desc) + 2);
}

// The ELF header: magic, class, version, machine, OS ABI, and the SM its flags name.
Result<ImageInfo> read_elf_header(Bytes b) {
    if (b.size() < kElfHeaderSize) return bad("shorter than an ELF64 header (" + std::to_string(b.size()) + " bytes)");
    if (load_u8(b, 0) != 0x7f || load_u8(b, 1) != 'E' || load_u8(b, 2) != 'L' || load_u8(b, 3) != 'F')
        return bad("no ELF magic");
    if (load_u8(b, 4) != 2 || load_u8(b, 5) != 1) return bad("not ELF64 little-endian");
    const uint8_t abi_version = load_u8(b, 8);
    if (load_u8(b, 6) != 1 || (abi_version >= 8 && load_u32(b, 20) != 1)) return bad("ELF version is not 1");
    if (load_u16(b, 18) != kEmCuda)
        return bad("e_machine is " + std::to_string(load_u16(b, 18)) + ", not 190 (NVIDIA CUDA)");
    if (load_u8(b, 7) != kOsAbiCuda && load_u8(b, 7) != kOsAbiCudaAbi7)
        return bad("EI_OSABI is " + hex(load_u8(b, 7), 2) + ", not 0x41 or 0x33 (CUDA)");
    if (load_u16(b, 52) != kElfHeaderSize) return bad("e_ehsize is " + std::to_string(load_u16(b, 52)) + ", not 64");

    ImageInfo info;
    info.kind = Kind::cubin;
    info.elf_abi_version = abi_version;
    info.relocatable = load_u16(b, 16) == kEtRel;
    const uint32_t flags = load_u32(b, 48);
    if (info.elf_abi_version >= 8)
        info.sm = static_cast<uint16_t>((flags >> 8) & 0xff);
    else
        info.sm = static_cast<uint16_t>(flags & 0xff);
    if (info.sm < 10) return bad("e_flags " + hex(flags, 8) + " names no SM");
    return info;
}

// The driver is handed a pointer without a size and trusts these tables (the real one crashes
// on a header that points past the image): every table and every section's and segment's
// bytes must lie inside the image.
Result<void> check_segments(Bytes b) {
    const uint64_t phoff = load_u64(b, 32);
    const uint16_t phentsize = load_u16(b, 54);
    const uint16_t phnum = load_u16(b, 56);
    if (phnum == 0) return {};
    if (phentsize != kProgramHeaderSize) return bad("program header size " + std::to_string(phentsize) + ", not 56");
    if (!in_bounds(phoff, uint64_t{phnum} * kProgramHeaderSize, b.size()))
        return bad("the program header table [" + std::to_string(phoff) + ", +" + std::to_string(uint64_t{phnum} * kProgramHeaderSize) +
                   ") lies outside the image of " + std::to_string(b.size()) + " bytes");
    for (uint16_t p = 0; p < phnum; ++p) {
        const size_t ph = phoff + size_t{p} * kProgramHeaderSize;
        const uint64_t off = load_u64(b, ph + 8), filesz = load_u64(b, ph + 32);
        if (!in_bounds(off, filesz, b.size()))
            return bad("segment " + std::to_string(p) + " [" + std::to_string(off) + ", +" + std::to_string(filesz) +
                       ") lies outside the image of " + std::to_string(b.size()) + " bytes");
    }
    return {};
}

// Where the section header table lies, and which section holds the section names.
struct SectionTable {
    uint64_t shoff{0};
    uint16_t shnum{0}, shstrndx{0};
};

// The section header table, every section's bytes and links, and the section-name table.
Result<SectionTable> check_sections(Bytes b) {
    const uint64_t shoff = load_u64(b, 40);
    const uint16_t shentsize = load_u16(b, 58);
    const uint16_t shnum = load_u16(b, 60);
    const uint16_t shstrndx = load_u16(b, 62);
    if (shnum == 0) return bad("no section headers (a cubin holds its code in sections)");
    if (shentsize != kSectionHeaderSize) return bad("section header size " + std::to_string(shentsize) + ", not 64");
    if (!in_bounds(shoff, uint64_t{shnum} * kSectionHeaderSize, b.size()))
        return bad("the section header table [" + std::to_string(shoff) + ", +" + std::to_string(uint64_t{shnum} * kSectionHeaderSize) +
                   ") lies outside the image of " + std::to_string(b.size()) + " bytes");
    if (shstrndx == 0 || shstrndx >= shnum) return bad("the section-name table index " + std::to_string(shstrndx) + " names no section");
    for (uint16_t s = 0; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * kSectionHeaderSize;
        const uint32_t type = load_u32(b, sh + 4);
        const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
        if (type != kShtNobits && !in_bounds(off, size, b.size()))
            return bad("section " + std::to_string(s) + " [" + std::to_string(off) + ", +" + std::to_string(size) +
                       ") lies outside the image of " + std::to_string(b.size()) + " bytes");
        if ((type == kShtSymtab || type == kShtRel || type == kShtRela) && load_u32(b, sh + 40) >= shnum)
            return bad("section " + std::to_string(s) + " links to section " + std::to_string(load_u32(b, sh + 40)) + ", which does not exist");
    }
    if (load_u32(b, shoff + size_t{shstrndx} * kSectionHeaderSize + 4) != kShtStrtab) return bad("the section-name table is not a string table");
    return SectionTable{shoff, shnum, shstrndx};
}

// The variant (.note.nv.tkinfo) and the virtual arch (.note.nv.cuinfo), where the notes say them.
void read_notes(Bytes b, const SectionTable& t, ImageInfo& info) {
    bool tkinfo = false, cuinfo = false;
    for (uint16_t s = 1; s < t.shnum; ++s) {
        const size_t sh = t.shoff + size_t{s} * kSectionHeaderSize;
        if (load_u32(b, sh + 4) == kShtNobits) continue;  // no bytes (and its range was not checked)
        const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
        const uint32_t name = load_u32(b, sh);
        // The first of each note only: sections may overlap, and one scan each keeps this linear.
        if (!tkinfo && section_named(b, t.shoff, t.shstrndx, name, ".note.nv.tkinfo")) {
            tkinfo = true;
            info.variant = tool_kit_variant(b.subspan(off, size));
        }
        if (!cuinfo && section_named(b, t.shoff, t.shstrndx, name, ".note.nv.cuinfo")) {
            cuinfo = true;
            info.virtual_sm = cuinfo_virtual_sm(b.subspan(off, size));
        }
    }
}

// What the driver places in device memory for the image: the sections loaded with it (SHF_ALLOC)
// but a kernel's shared memory (.nv.shared.*, per block at launch), its parameter bank
// (.nv.constant0.*, written at each launch) and its local memory (.nv.local.*, per thread). Sizes
// of NOBITS sections are not bounded by the image: the sum saturates.
uint64_t device_section_bytes(Bytes b, const SectionTable& t) {
    uint64_t total = 0;
    for (uint16_t s = 1; s < t.shnum; ++s) {
        const size_t sh = t.shoff + size_t{s} * kSectionHeaderSize;
        if ((load_u64(b, sh + 8) & kShfAlloc) == 0) continue;
        const uint32_t name = load_u32(b, sh);
        if (section_name_starts(b, t.shoff, t.shstrndx, name, ".nv.shared.") || section_name_starts(b, t.shoff, t.shstrndx, name, ".nv.constant0.") ||
            section_name_starts(b, t.shoff, t.shstrndx, name, ".nv.local."))
            continue;
        const uint64_t size = load_u64(b, sh + 32);
        total = size > UINT64_MAX - total ? UINT64_MAX : total + size;
    }
    return total;
}

// String-table offset, section and size of each entry point (size 0: a kernel) and variable.
struct Named {
    uint32_t name;
    uint16_t section;
    uint64_t size;
    bool operator<(const Named& o) const { return name < o.name; }
};

// Each name ends at the first NUL after it: one pass over the table for all of them (in
// offset order), and all of them together may not be longer than the table, so that
// neither the work nor the names a hostile table yields grow faster than the image.
Result<void> read_names(std::string_view strings, std::vector<Named>& list, std::vector<std::pair<std::string, Named>>& out) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.name == y.name; }), list.end());
    uint64_t total = 0;
    size_t end = 0;
    for (const Named& n : list) {
        end = std::max<size_t>(end, n.name);
        while (end < strings.size() && strings[end] != '\0') ++end;
        if (end == strings.size()) return bad("unterminated symbol name");
        total += end - n.name;
        if (total > strings.size()) return bad("symbol names overlap past the size of their string table");
        out.emplace_back(strings.substr(n.name, end - n.name), n);
    }
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    return {};
}

// The kernels (entry points) and the globals of symbol table section `sh`, into info.
Result<void> read_symbols(Bytes b, const SectionTable& t, size_t sh, ImageInfo& info) {
    const uint64_t sym_off = load_u64(b, sh + 24), sym_size = load_u64(b, sh + 32);
    if (load_u64(b, sh + 56) != kSymbolSize) return bad("symbol entries of " + std::to_string(load_u64(b, sh + 56)) + " bytes, not 24");
    const size_t strh = t.shoff + size_t{load_u32(b, sh + 40)} * kSectionHeaderSize;
    if (load_u32(b, strh + 4) != kShtStrtab) return bad("the symbol table's names are not a string table");
    const uint64_t str_off = load_u64(b, strh + 24), str_size = load_u64(b, strh + 32);
    std::vector<Named> names, objects, undefined;
    for (uint64_t at = sym_off; at + kSymbolSize <= sym_off + sym_size; at += kSymbolSize) {
        const uint32_t name = load_u32(b, at);
        const uint8_t st_info = load_u8(b, at + 4), st_other = load_u8(b, at + 5);
        const uint16_t shndx = load_u16(b, at + 6);
        const bool entry = (st_info & 0xf) == kSttFunc && (st_other & kStoCudaEntry) != 0;
        const bool object = (st_info & 0xf) == kSttObject && shndx != 0 && load_u64(b, at + 16) != 0;
        const bool called = (st_info & 0xf) == kSttFunc && shndx == 0 && name != 0;  // called, defined elsewhere
        if (!entry && !object && !called) continue;
        if (name >= str_size) return bad("symbol name out of bounds");
        (entry ? names : object ? objects : undefined).push_back({name, shndx, object ? load_u64(b, at + 16) : 0});
    }
    const auto strings = as_text(b.subspan(str_off, str_size));
    std::vector<std::pair<std::string, Named>> kernels, variables;
    SDM_TRY(read_names(strings, names, kernels));
    SDM_TRY(read_names(strings, objects, variables));
    std::vector<std::pair<std::string, Named>> calls;
    SDM_TRY(read_names(strings, undefined, calls));
    for (auto& [name, n] : calls) info.undefined_functions.push_back(std::move(name));
    for (auto& [name, n] : kernels) {
        info.kernels.push_back(std::move(name));
        info.kernel_sections.push_back(n.section);
    }
    for (auto& [name, n] : variables)
        if (!name.empty() && name.front() != '.') info.globals.emplace_back(std::move(name), n.size);
    return {};
}

}  // namespace

Result<ImageInfo> inspect_cubin(Bytes b) {
    SDM_TRY_GET(info, read_elf_header(b));
    SDM_TRY(check_segments(b));
    SDM_TRY_GET(sections, check_sections(b));
    read_notes(b, *sections, *info);
    info->device_bytes = device_section_bytes(b, *sections);
    // The first symbol table only.
    for (uint16_t s = 0; s < sections->shnum; ++s) {
        const size_t sh = sections->shoff + size_t{s} * kSectionHeaderSize;
        if (load_u32(b, sh + 4) != kShtSymtab) continue;
        SDM_TRY(read_symbols(b, *sections, sh, *info));
        break;
    }
    return info;
}

std::optional<Error> link_input_error(const ImageInfo& info, const std::string& what) {
    if (info.kind != Kind::cubin || !info.relocatable || info.undefined_functions.empty()) return std::nullopt;
    std::string names;
    for (size_t i = 0; i < info.undefined_functions.size() && i < 4; ++i) names += (i ? ", " : "") + info.undefined_functions[i];
    if (info.undefined_functions.size() > 4) names += " and " + std::to_string(info.undefined_functions.size() - 4) + " more";
    return make_error(ErrorCode::unsupported, what + " is a relocatable cubin that calls " + std::to_string(info.undefined_functions.size()) +
                                                  " function(s) it does not define (" + names +
                                                  "): the input of a device link (nvJitLink, with the code that defines them), which the driver "
                                                  "cannot load alone. Link it first, or leave it out of the archive (sdm import skips such images)");
}

}  // namespace sdm::archive
