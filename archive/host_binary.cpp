// Fatbin containers in host ELF files and static archives. Section and member tables are read
// field by field and bounded by the input; names are read at most a fixed length each, so no
// table costs more than its size however its entries point.
#include "host_binary.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "elf.hpp"
#include "fatbin.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace {

using namespace elf;

constexpr size_t kMaxSectionName = 256;
// nvcc's sections (fatbinary_section.h): .nv_fatbin holds what the runtime registers, one
// container per linked object; __nv_relfatbin holds -rdc objects' relocatable device code.
constexpr std::string_view kFatbinSection = ".nv_fatbin";
constexpr std::string_view kRelocatableFatbinSection = "__nv_relfatbin";
// Containers in data sections start on 8-byte boundaries (their sizes are multiples of 8 too).
constexpr size_t kScanAlignment = 8;

constexpr std::string_view kArMagic = "!<arch>\n";
constexpr std::string_view kThinArMagic = "!<thin>\n";
constexpr size_t kArHeaderSize = 60;
constexpr size_t kMaxMemberName = 4096;  // PATH_MAX: longer is no file name, and each found container copies it

Error corrupt(const std::string& where, const std::string& why) { return make_error(ErrorCode::archive_corrupt, where + why); }

bool starts_with(Bytes b, std::string_view prefix) {
    return b.size() >= prefix.size() && as_text(b.first(prefix.size())) == prefix;
}
bool is_elf(Bytes b) { return starts_with(b, "\x7f" "ELF"); }
bool is_fatbin(Bytes b) { return b.size() >= 4 && load_u32(b, 0) == kFatbinMagic; }

// Where the containers being found come from: the member (if any), the offset of the bytes being
// searched within the input, and the list they go to.
struct Origin {
    std::string_view member;  // a view into the input
    size_t member_index{0};
    uint64_t base{0};
    std::string where;  // "member 3 (kernels.o): " or empty
    std::vector<EmbeddedFatbin>* out{nullptr};

    void add(std::string_view section, size_t ordinal, uint64_t offset, bool relocatable, bool scanned, Bytes bytes) const {
        out->push_back({member, member_index, section, ordinal, base + offset, relocatable, scanned, bytes});
    }
};

// Containers back to back over the whole of `region` (a fatbin section, or a .fatbin file): zero
// bytes between them are padding, anything else is corrupt.
Result<void> walk_containers(Bytes file, uint64_t offset, uint64_t size, std::string_view section, bool relocatable, const Origin& origin) {
    const std::string where = origin.where + (section.empty() ? std::string() : "section " + printable(section) + ": ");
    size_t at = static_cast<size_t>(offset);
    const size_t end = static_cast<size_t>(offset + size);
    for (size_t ordinal = 0; at < end;) {
        if (file[at] == std::byte{0}) {
            ++at;
            continue;
        }
        const std::string which = "container " + std::to_string(ordinal) + " at offset " + std::to_string(origin.base + at) + ": ";
        if (!is_fatbin(file.subspan(at, end - at)))
            return corrupt(where, which + "neither a fatbin container (magic 0xba55ed50) nor zero padding");
        auto container = parse_fatbin(file.subspan(at, end - at));
        if (!container) return corrupt(where, which + container.error().message);
        origin.add(section, ordinal++, at, relocatable, false, container->bytes);
        at += container->bytes.size();
    }
    return {};
}

// Containers anywhere on an 8-byte boundary of a data section. A candidate must carry the magic,
// version 1 and the 16-byte header nvcc writes, and parse whole; one that does not is data that
// looks like a container, and the scan resumes past the furthest entry its walk reached, so that
// no byte is walked twice.
void scan_section(Bytes file, uint64_t offset, uint64_t size, std::string_view section, const Origin& origin) {
    size_t at = static_cast<size_t>(align_up(offset, kScanAlignment));
    const size_t end = static_cast<size_t>(offset + size);
    size_t ordinal = 0;
    while (at < end && end - at >= kFatbinHeaderSize) {
        if (load_u32(file, at) == kFatbinMagic && load_u16(file, at + 4) == 1 && load_u16(file, at + 6) == kFatbinHeaderSize) {
            size_t examined = 0;
            auto container = parse_fatbin(file.subspan(at, end - at), &examined);
            if (container) {
                origin.add(section, ordinal++, at, false, true, container->bytes);
                at = static_cast<size_t>(align_up(at + container->bytes.size(), kScanAlignment));
                continue;
            }
            at = static_cast<size_t>(align_up(at + std::max<size_t>(examined, 1), kScanAlignment));
            continue;
        }
        at += kScanAlignment;
    }
}

struct Section {
    uint64_t offset{0}, size{0}, flags{0};
    std::string_view name;  // a view into the file's section-name table
    uint64_t index{0};  // in the section table
    bool fatbin{false}, relocatable{false};
};

// The PROGBITS sections of an ELF64 little-endian file, named, in table order: the headers, the
// section table and the name table checked against the bytes; each section's own extent is left
// to the caller (one it does not read may lie anywhere).
Result<std::vector<Section>> progbits_sections(Bytes elf, const std::string& where, std::string_view purpose) {
    if (elf.size() < kElfHeaderSize) return corrupt(where, "shorter than an ELF64 header (" + std::to_string(elf.size()) + " bytes)");
    if (load_u8(elf, 4) != 2)
        return make_error(ErrorCode::unsupported, where + "an ELF32 file; device code is found in ELF64 (x86-64, AArch64) binaries only");
    if (load_u8(elf, 5) != 1) return make_error(ErrorCode::unsupported, where + "a big-endian ELF file; only little-endian ones are read");
    if (load_u8(elf, 6) != 1) return corrupt(where, "ELF version is not 1");
    uint64_t shoff = load_u64(elf, 40);
    const uint16_t shentsize = load_u16(elf, 58);
    uint64_t shnum = load_u16(elf, 60);
    uint32_t shstrndx = load_u16(elf, 62);
    if (shoff == 0) return make_error(ErrorCode::invalid_argument, where + "an ELF file without a section header table; " + std::string(purpose) + " found by section");
    if (shentsize != kSectionHeaderSize) return corrupt(where, "section header size " + std::to_string(shentsize) + ", not 64");
    if (!in_bounds(shoff, kSectionHeaderSize, elf.size()))
        return corrupt(where, "the section header table at " + std::to_string(shoff) + " lies outside the file of " + std::to_string(elf.size()) + " bytes");
    // Extended numbering (more than 0xff00 sections): section 0 holds the real count and index.
    if (shnum == 0) shnum = load_u64(elf, static_cast<size_t>(shoff) + 32);
    if (shstrndx == kShnXindex) shstrndx = load_u32(elf, static_cast<size_t>(shoff) + 40);
    const auto table = checked_mul(shnum, kSectionHeaderSize);
    if (!table || !in_bounds(shoff, *table, elf.size()))
        return corrupt(where, "the section header table [" + std::to_string(shoff) + ", " + std::to_string(shnum) + " x 64 bytes) lies outside the file of " +
                                  std::to_string(elf.size()) + " bytes");
    if (shstrndx == 0 || shstrndx >= shnum) return corrupt(where, "the section-name table index " + std::to_string(shstrndx) + " names no section");
    const auto header = [&](uint64_t s) { return static_cast<size_t>(shoff + s * kSectionHeaderSize); };
    const size_t names_header = header(shstrndx);
    if (load_u32(elf, names_header + 4) != kShtStrtab) return corrupt(where, "the section-name table is not a string table");
    const uint64_t names_offset = load_u64(elf, names_header + 24), names_size = load_u64(elf, names_header + 32);
    if (!in_bounds(names_offset, names_size, elf.size()))
        return corrupt(where, "the section-name table [" + std::to_string(names_offset) + ", +" + std::to_string(names_size) + ") lies outside the file");
    const auto names = as_text(elf.subspan(static_cast<size_t>(names_offset), static_cast<size_t>(names_size)));
    std::vector<Section> sections;
    for (uint64_t s = 1; s < shnum; ++s) {
        const size_t h = header(s);
        if (load_u32(elf, h + 4) != kShtProgbits) continue;
        const uint32_t name = load_u32(elf, h);
        if (name >= names.size()) return corrupt(where, "section " + std::to_string(s) + "'s name lies outside the section-name table");
        const auto text = names.substr(name, kMaxSectionName);
        const size_t nul = text.find('\0');
        if (nul == std::string_view::npos)
            return corrupt(where, "section " + std::to_string(s) + "'s name is not terminated within " + std::to_string(kMaxSectionName) + " bytes");
        sections.push_back(Section{load_u64(elf, h + 24), load_u64(elf, h + 32), load_u64(elf, h + 8), text.substr(0, nul), s});
    }
    return sections;
}

Result<void> search_elf(Bytes elf, const FatbinSearch& search, const Origin& origin) {
    const std::string& where = origin.where;
    SDM_TRY_GET(all, progbits_sections(elf, where, "fatbins are"));
    std::vector<Section> sections;
    for (Section& section : *all) {
        section.fatbin = section.name == kFatbinSection || section.name == kRelocatableFatbinSection;
        section.relocatable = section.name == kRelocatableFatbinSection;
        const bool data = (section.flags & kShfAlloc) != 0 && (section.flags & kShfExecinstr) == 0;
        if (!section.fatbin && !(search.scan_data_sections && data)) continue;
        if (!in_bounds(section.offset, section.size, elf.size()))
            return corrupt(where, "section " + std::to_string(section.index) + " (" + printable(section.name) + ") [" + std::to_string(section.offset) + ", +" +
                                      std::to_string(section.size) + ") lies outside the file of " + std::to_string(elf.size()) + " bytes");
        if (section.size > 0) sections.push_back(std::move(section));
    }
    // Each byte is searched once: the sections searched may not overlap.
    std::sort(sections.begin(), sections.end(), [](const Section& x, const Section& y) { return x.offset < y.offset; });
    for (size_t i = 1; i < sections.size(); ++i)
        if (sections[i].offset < sections[i - 1].offset + sections[i - 1].size)
            return corrupt(where, "sections " + printable(sections[i - 1].name) + " and " + printable(sections[i].name) + " overlap");
    for (const Section& section : sections) {
        if (section.fatbin)
            SDM_TRY(walk_containers(elf, section.offset, section.size, section.name, section.relocatable, origin));
        else
            scan_section(elf, section.offset, section.size, section.name, origin);
    }
    return {};
}

std::optional<uint64_t> parse_decimal(std::string_view field) {
    while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || ec != std::errc{} || end != field.data() + field.size()) return std::nullopt;
    return value;
}

// The GNU long-name table ("//"): names ending in "/\n", referenced by the offset of their first
// byte ("/123"). Indexed in one pass, so that every reference costs a binary search, not a scan.
struct LongNames {
    std::vector<std::pair<size_t, std::string_view>> names;  // (offset, name), by offset
    bool present{false};

    void index(std::string_view table) {
        present = true;
        for (size_t at = 0; at < table.size();) {
            size_t end = table.find('\n', at);
            if (end == std::string_view::npos) end = table.size();
            std::string_view name = table.substr(at, end - at);
            if (name.ends_with('/')) name.remove_suffix(1);
            if (!name.empty()) names.emplace_back(at, name);
            at = end + 1;
        }
    }
    std::optional<std::string_view> find(size_t offset) const {
        const auto it = std::lower_bound(names.begin(), names.end(), offset, [](const auto& n, size_t o) { return n.first < o; });
        if (it == names.end() || it->first != offset) return std::nullopt;
        return it->second;
    }
};

Result<void> search_archive(Bytes ar, const FatbinSearch& search, std::vector<EmbeddedFatbin>& out) {
    LongNames long_names;
    size_t at = kArMagic.size();
    size_t index = 0;  // of the next member with a file in it (the symbol index and the long-name table are not counted)
    while (at < ar.size()) {
        const std::string which = "the member at offset " + std::to_string(at) + ": ";
        if (ar.size() - at < kArHeaderSize) {
            if (ar.size() - at == 1 && ar[at] == std::byte{'\n'}) break;  // the last member's padding byte
            return corrupt(which, "its header runs past the end of the archive");
        }
        const auto h = as_text(ar.subspan(at, kArHeaderSize));
        if (h.substr(58, 2) != "`\n") return corrupt(which, "its header does not end in \"`\\n\"");
        const auto size = parse_decimal(h.substr(48, 10));
        if (!size) return corrupt(which, "its size field '" + printable(h.substr(48, 10)) + "' is not a number");
        if (*size > ar.size() - at - kArHeaderSize)
            return corrupt(which, "its " + std::to_string(*size) + " bytes run past the end of the archive (" +
                                      std::to_string(ar.size() - at - kArHeaderSize) + " left)");
        const uint64_t data_offset = at + kArHeaderSize;
        Bytes data = ar.subspan(static_cast<size_t>(data_offset), static_cast<size_t>(*size));
        at = static_cast<size_t>(data_offset + *size + (*size % 2));  // members start on even offsets
        const std::string_view field = h.substr(0, 16);
        std::string_view name;
        uint64_t skipped = 0;  // a BSD name's bytes before the member's own
        if (field.starts_with("// ")) {
            if (long_names.present) return corrupt(which, "a second long-name table");
            long_names.index(as_text(data));
            continue;
        }
        if (field.starts_with("/ ") || field.starts_with("/SYM64/ ")) continue;  // the symbol index
        if (field.starts_with('/')) {
            const auto offset = parse_decimal(field.substr(1));
            if (!offset) return corrupt(which, "its name field '" + printable(field) + "' is neither a name nor a long-name reference");
            if (!long_names.present) return corrupt(which, "refers to a long name, and no long-name table precedes it");
            const auto found = long_names.find(static_cast<size_t>(*offset));
            if (!found) return corrupt(which, "its long name at offset " + std::to_string(*offset) + " is not the start of a name in the table");
            name = *found;
        } else if (field.starts_with("#1/")) {  // BSD: the name is the first N bytes of the member
            const auto length = parse_decimal(field.substr(3));
            if (!length || *length > data.size()) return corrupt(which, "its BSD name length '" + printable(field.substr(3)) + "' does not fit the member");
            name = as_text(data.first(static_cast<size_t>(*length)));
            name = name.substr(0, name.find('\0'));
            skipped = *length;
            data = data.subspan(static_cast<size_t>(*length));
        } else {
            name = field.substr(0, field.find('/'));  // GNU ends short names with '/'; BSD pads with spaces
            while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
        }
        if (name.size() > kMaxMemberName) return corrupt(which, "its name is longer than " + std::to_string(kMaxMemberName) + " bytes");
        Origin origin{name, index, data_offset + skipped, "member " + std::to_string(index) + " (" + printable(name) + "): ", &out};
        ++index;
        if (is_elf(data)) {
            SDM_TRY(search_elf(data, search, origin));
        } else if (is_fatbin(data)) {
            SDM_TRY(walk_containers(data, 0, data.size(), {}, false, origin));
        }
        // Anything else (a text file, LLVM bitcode) holds no device code nvcc wrote.
    }
    return {};
}

}  // namespace

Result<std::vector<EmbeddedFatbin>> find_fatbins(Bytes input, const FatbinSearch& search) {
    std::vector<EmbeddedFatbin> out;
    const Origin top{{}, 0, 0, {}, &out};
    if (starts_with(input, kThinArMagic))
        return make_error(ErrorCode::unsupported, "a thin archive: its members live in other files; pass those instead");
    if (starts_with(input, kArMagic)) {
        SDM_TRY(search_archive(input, search, out));
    } else if (is_elf(input)) {
        SDM_TRY(search_elf(input, search, top));
    } else if (is_fatbin(input)) {
        SDM_TRY(walk_containers(input, 0, input.size(), {}, false, top));
    } else {
        return make_error(ErrorCode::invalid_argument, "neither an ELF file, a static archive (ar) nor a fatbin");
    }
    return out;
}

Result<std::optional<Bytes>> elf_section(Bytes elf, std::string_view name, const std::string& where) {
    if (!is_elf(elf)) return make_error(ErrorCode::invalid_argument, where + ": not an ELF file");
    SDM_TRY_GET(sections, progbits_sections(elf, where + ": ", "sections are"));
    std::optional<Bytes> found;
    for (const Section& s : *sections) {
        if (s.name != name) continue;
        if (found) return corrupt(where + ": ", "two sections named " + printable(s.name));
        if (!in_bounds(s.offset, s.size, elf.size()))
            return corrupt(where + ": ", "section " + std::to_string(s.index) + " (" + printable(s.name) + ") [" + std::to_string(s.offset) + ", +" + std::to_string(s.size) +
                                             ") lies outside the file of " + std::to_string(elf.size()) + " bytes");
        found = elf.subspan(static_cast<size_t>(s.offset), static_cast<size_t>(s.size));
    }
    return found;
}

}  // namespace sdm::archive
