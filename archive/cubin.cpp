// ELF64 parsing of cubins: every offset and count is checked against the buffer before use.
#include <algorithm>
#include <optional>

#include "image.hpp"

namespace sdm::archive {
namespace {

constexpr uint16_t kEmCuda = 190;
constexpr uint8_t kOsAbiCuda = 0x41;
constexpr uint32_t kShtSymtab = 2;
constexpr uint8_t kStoCudaEntry = 0x10;  // st_other bit nvcc sets on __global__ functions
constexpr uint8_t kSttFunc = 2;
constexpr size_t kElfHeaderSize = 64;
constexpr size_t kSectionHeaderSize = 64;
constexpr size_t kSymbolSize = 24;

Error bad(const std::string& why) { return make_error(ErrorCode::corrupt, "not a valid cubin: " + why); }

// The name of a section, or "" when the section-name table does not hold it.
std::string_view section_name(Bytes b, uint64_t shoff, uint16_t shstrndx, uint32_t name) {
    const size_t sh = shoff + size_t{shstrndx} * kSectionHeaderSize;
    const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
    if (!in_bounds(off, size, b.size()) || name >= size) return {};
    const auto names = as_text(b.subspan(off, size));
    const auto end = names.find('\0', name);
    return end == std::string_view::npos ? std::string_view{} : names.substr(name, end - name);
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

}  // namespace

Result<ImageInfo> inspect_cubin(Bytes b) {
    if (b.size() < kElfHeaderSize) return bad("shorter than an ELF64 header (" + std::to_string(b.size()) + " bytes)");
    if (load_u8(b, 0) != 0x7f || load_u8(b, 1) != 'E' || load_u8(b, 2) != 'L' || load_u8(b, 3) != 'F')
        return bad("no ELF magic");
    if (load_u8(b, 4) != 2 || load_u8(b, 5) != 1) return bad("not ELF64 little-endian");
    if (load_u16(b, 18) != kEmCuda)
        return bad("e_machine is " + std::to_string(load_u16(b, 18)) + ", not 190 (NVIDIA CUDA)");
    if (load_u8(b, 7) != kOsAbiCuda) return bad("EI_OSABI is " + hex(load_u8(b, 7), 2) + ", not 0x41 (CUDA)");

    ImageInfo info;
    info.kind = Kind::cubin;
    info.elf_abi_version = load_u8(b, 8);
    const uint32_t flags = load_u32(b, 48);
    if (info.elf_abi_version >= 8)
        info.sm = static_cast<uint16_t>((flags >> 8) & 0xff);
    else
        info.sm = static_cast<uint16_t>(flags & 0xff);
    if (info.sm < 10) return bad("e_flags " + hex(flags, 8) + " names no SM");

    // Section headers: find the symbol table and its string table for the kernel names.
    const uint64_t shoff = load_u64(b, 40);
    const uint16_t shentsize = load_u16(b, 58);
    const uint16_t shnum = load_u16(b, 60);
    if (shnum == 0) return info;
    if (shentsize != kSectionHeaderSize) return bad("section header size " + std::to_string(shentsize));
    const auto table = checked_mul(shnum, kSectionHeaderSize);
    if (!table || !in_bounds(shoff, *table, b.size())) return bad("section headers out of bounds");
    const uint16_t shstrndx = load_u16(b, 62);
    for (uint16_t s = 0; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * kSectionHeaderSize;
        if (s == 0 || shstrndx >= shnum) continue;
        const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
        const auto name = section_name(b, shoff, shstrndx, load_u32(b, sh));
        if (name == ".note.nv.tkinfo" && in_bounds(off, size, b.size())) info.variant = tool_kit_variant(b.subspan(off, size));
        if (name == ".note.nv.cuinfo" && in_bounds(off, size, b.size())) info.virtual_sm = cuinfo_virtual_sm(b.subspan(off, size));
    }
    for (uint16_t s = 0; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * kSectionHeaderSize;
        if (load_u32(b, sh + 4) != kShtSymtab) continue;
        const uint64_t sym_off = load_u64(b, sh + 24), sym_size = load_u64(b, sh + 32);
        const uint32_t link = load_u32(b, sh + 40);
        if (!in_bounds(sym_off, sym_size, b.size())) return bad("symbol table out of bounds");
        if (link >= shnum) return bad("symbol table links to a missing string table");
        const size_t strh = shoff + size_t{link} * kSectionHeaderSize;
        const uint64_t str_off = load_u64(b, strh + 24), str_size = load_u64(b, strh + 32);
        if (!in_bounds(str_off, str_size, b.size())) return bad("string table out of bounds");
        for (uint64_t at = sym_off; at + kSymbolSize <= sym_off + sym_size; at += kSymbolSize) {
            const uint32_t name = load_u32(b, at);
            const uint8_t st_info = load_u8(b, at + 4), st_other = load_u8(b, at + 5);
            if ((st_info & 0xf) != kSttFunc || (st_other & kStoCudaEntry) == 0) continue;
            if (name >= str_size) return bad("symbol name out of bounds");
            const auto strings = as_text(b.subspan(str_off, str_size));
            const auto end = strings.find('\0', name);
            if (end == std::string_view::npos) return bad("unterminated symbol name");
            info.kernels.emplace_back(strings.substr(name, end - name));
        }
        break;
    }
    std::sort(info.kernels.begin(), info.kernels.end());
    return info;
}

}  // namespace sdm::archive
