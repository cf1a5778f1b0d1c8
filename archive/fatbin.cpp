// nvcc fatbinary containers. The layout was read off CUDA 13.0 output (nvcc and fatbinary over
// every -compress-mode, -G, -lineinfo, a/f variants, LTO-IR) and the toolkit's own libraries;
// docs/FORMAT.md lists each field and how it was checked.
#include "fatbin.hpp"

#include <lz4.h>

#include <algorithm>
#include <limits>

#include "codec.hpp"

namespace sdm::archive {
namespace {

// Entry header fields (bytes from the entry's first byte).
namespace entry_field {
inline constexpr size_t kind = 0;             // u16
inline constexpr size_t header_size = 4;      // u32: the payload starts here
inline constexpr size_t payload_size = 8;     // u64: stored bytes, padded by nvcc to a multiple of 8
inline constexpr size_t compressed_size = 16; // u32: the compressed stream's exact length (0 when not compressed)
inline constexpr size_t options = 20;         // u32: offset, inside the header, of a {u32 offset, u32 size} descriptor (0: none)
inline constexpr size_t version_minor = 24;   // u16
inline constexpr size_t version_major = 26;   // u16
inline constexpr size_t arch = 28;            // u32
inline constexpr size_t name_offset = 32;     // u32: the source file name, inside the header (0: none)
inline constexpr size_t name_size = 36;       // u32
inline constexpr size_t flags = 40;           // u64
inline constexpr size_t raw_size = 56;        // u64: the size after decompression (0 when not compressed)
}  // namespace entry_field

// An LZ4 sequence's length grows by at most 255 per input byte (a 0xFF extension byte), so no
// block expands further; the exact figure comes from lz4_block_size.
constexpr uint64_t kMaxLz4Expansion = 255;

Error bad(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "not a valid fatbin: " + why); }

// The number of bytes an LZ4 block decodes to, summed over its sequences without writing any; an
// empty optional when the block is malformed (a length or an offset past what exists) or yields
// more than `limit`. One pass over the block.
std::optional<uint64_t> lz4_block_size(Bytes block, uint64_t limit) {
    uint64_t produced = 0;
    size_t at = 0;
    // A length of 15 in the token continues in the bytes after it, each adding up to 255.
    const auto extend = [&](uint64_t& value) {
        while (true) {
            if (at >= block.size()) return false;
            const uint8_t byte = load_u8(block, at++);
            value += byte;
            if (value > limit) return false;
            if (byte != 255) return true;
        }
    };
    while (true) {
        if (at >= block.size()) return std::nullopt;  // a block ends with a sequence of literals
        const uint8_t token = load_u8(block, at++);
        uint64_t literals = token >> 4;
        if (literals == 15 && !extend(literals)) return std::nullopt;
        if (literals > block.size() - at) return std::nullopt;
        at += static_cast<size_t>(literals);
        produced += literals;
        if (produced > limit) return std::nullopt;
        if (at == block.size()) return produced;  // the last sequence: literals only
        if (block.size() - at < 2) return std::nullopt;
        const uint16_t distance = load_u16(block, at);
        at += 2;
        if (distance == 0 || distance > produced) return std::nullopt;
        uint64_t match = token & 15u;
        if (match == 15 && !extend(match)) return std::nullopt;
        produced += match + 4;  // a match is at least 4 bytes
        if (produced > limit) return std::nullopt;
    }
}

}  // namespace

std::string fatbin_entry_label(const FatbinEntry& e) {
    std::string target = e.image_kind ? target_name(*e.image_kind, e.sm, e.variant)
                                      : "kind " + std::to_string(e.kind) + ", arch " + std::to_string(e.sm);
    const char* codec = e.compression == FatbinCompression::lz4 ? ", lz4" : e.compression == FatbinCompression::zstd ? ", zstd" : "";
    return "entry " + std::to_string(e.index) + " (" + target + codec + ")";
}

Result<FatbinContainer> parse_fatbin(Bytes b, size_t* examined) {
    if (examined != nullptr) *examined = 0;
    if (b.size() < kFatbinHeaderSize || load_u32(b, 0) != kFatbinMagic) return bad("no fatbin magic (0xba55ed50)");
    const uint64_t header = load_u16(b, 6), declared = load_u64(b, 8);
    if (header < kFatbinHeaderSize) return bad("header size " + std::to_string(header) + " is below 16");
    const auto total = checked_add(declared, header);
    if (!total || *total > b.size())
        return bad("declares " + std::to_string(declared) + " bytes of entries after its " + std::to_string(header) + "-byte header but holds " +
                   std::to_string(b.size()) + " bytes");
    FatbinContainer container;
    container.bytes = b.first(static_cast<size_t>(*total));
    const Bytes c = container.bytes;
    // The driver walks the entries by their own sizes: each header and payload must lie inside the
    // region the container's header declares, and together they must fill it exactly. Each step
    // advances by at least a header, so the walk is linear in the container.
    size_t at = static_cast<size_t>(header);
    for (size_t n = 0; at < c.size(); ++n) {
        if (examined != nullptr) *examined = at;
        const std::string which = "entry " + std::to_string(n) + " at offset " + std::to_string(at);
        const size_t left = c.size() - at;
        if (left < kFatbinEntryHeaderSize)
            return bad(which + ": its header runs past the end (" + std::to_string(left) + " of at least 64 bytes)");
        const Bytes h = c.subspan(at);
        const uint32_t entry_header = load_u32(h, entry_field::header_size);
        const uint64_t payload = load_u64(h, entry_field::payload_size);
        if (entry_header < kFatbinEntryHeaderSize || entry_header > left)
            return bad(which + ": header size " + std::to_string(entry_header) + " does not fit (at least 64, at most " + std::to_string(left) + ")");
        if (payload > left - entry_header) return bad(which + ": its payload of " + std::to_string(payload) + " bytes runs past the end");
        FatbinEntry e;
        e.index = n;
        e.offset = at;
        e.kind = load_u16(h, entry_field::kind);
        e.image_kind = e.kind == fatbin_kind::cubin ? std::optional(Kind::cubin)
                       : e.kind == fatbin_kind::ptx  ? std::optional(Kind::ptx)
                       : e.kind == fatbin_kind::ltoir ? std::optional(Kind::ltoir)
                                                      : std::nullopt;
        const uint32_t arch = load_u32(h, entry_field::arch);
        if (e.image_kind && (arch < 10 || arch > 999)) return bad(which + ": arch " + std::to_string(arch) + " is not an SM (10..999)");
        e.sm = static_cast<uint16_t>(std::min<uint32_t>(arch, std::numeric_limits<uint16_t>::max()));
        e.flags = load_u64(h, entry_field::flags);
        e.version_major = load_u16(h, entry_field::version_major);
        e.version_minor = load_u16(h, entry_field::version_minor);
        const bool a = (e.flags & fatbin_flag::arch_specific) != 0, f = (e.flags & fatbin_flag::family_specific) != 0;
        if (a && f) return bad(which + ": flags " + hex(e.flags) + " claim both the arch-specific and the family-specific variant");
        e.variant = a ? Variant::a : f ? Variant::f : Variant::base;
        const bool lz4 = (e.flags & fatbin_flag::lz4) != 0, zstd = (e.flags & fatbin_flag::zstd) != 0;
        if (lz4 && zstd) return bad(which + ": flags " + hex(e.flags) + " claim both LZ4 and zstd compression");
        e.compression = lz4 ? FatbinCompression::lz4 : zstd ? FatbinCompression::zstd : FatbinCompression::none;
        const std::string label = fatbin_entry_label(e) + " at offset " + std::to_string(at);
        const Bytes stored = h.subspan(entry_header, static_cast<size_t>(payload));
        if (e.compression == FatbinCompression::none) {
            e.stored = stored;
            e.raw_size = stored.size();
        } else {
            const uint32_t compressed = load_u32(h, entry_field::compressed_size);
            e.raw_size = load_u64(h, entry_field::raw_size);
            if (compressed == 0 || compressed > payload)
                return bad(label + ": compressed size " + std::to_string(compressed) + " does not fit its payload of " + std::to_string(payload) + " bytes");
            e.stored = stored.first(compressed);
            // What decompression may cost is decided here, from the stored bytes alone.
            const uint64_t expansion = e.compression == FatbinCompression::lz4 ? kMaxLz4Expansion : kMaxZstdExpansion;
            if (e.raw_size == 0 || e.raw_size > limits::max_raw_entry)
                return bad(label + ": declares " + std::to_string(e.raw_size) + " bytes decompressed (at least 1, at most " +
                           std::to_string(limits::max_raw_entry) + ")");
            if (e.raw_size > uint64_t{compressed} * expansion)
                return bad(label + ": declares " + std::to_string(e.raw_size) + " bytes decompressed from " + std::to_string(compressed) +
                           ", more than that compression can expand to");
        }
        // The source name and the options block live inside the entry's header.
        const uint32_t name = load_u32(h, entry_field::name_offset), name_size = load_u32(h, entry_field::name_size);
        if (name != 0) {
            if (name < kFatbinEntryHeaderSize || !in_bounds(name, name_size, entry_header))
                return bad(label + ": its source name [" + std::to_string(name) + ", +" + std::to_string(name_size) + ") lies outside its " +
                           std::to_string(entry_header) + "-byte header");
            const auto text = as_text(h.subspan(name, name_size));
            e.source = std::string(text.substr(0, text.find('\0')));
        }
        const uint32_t options = load_u32(h, entry_field::options);
        if (options != 0) {
            if (options < kFatbinEntryHeaderSize || !in_bounds(options, 8, entry_header))
                return bad(label + ": its options descriptor at " + std::to_string(options) + " lies outside its " + std::to_string(entry_header) +
                           "-byte header");
            const uint32_t text = load_u32(h, options), text_size = load_u32(h, options + 4);
            if (text_size != 0) {
                if (text < kFatbinEntryHeaderSize || !in_bounds(text, text_size, entry_header))
                    return bad(label + ": its options [" + std::to_string(text) + ", +" + std::to_string(text_size) + ") lie outside its " +
                               std::to_string(entry_header) + "-byte header");
                e.options = h.subspan(text, text_size);
            }
        }
        container.entries.push_back(std::move(e));
        at += entry_header + static_cast<size_t>(payload);
    }
    return container;
}

Result<ByteVector> fatbin_entry_payload(const FatbinEntry& e) {
    const std::string what = "fatbin " + fatbin_entry_label(e);
    if ((e.flags & fatbin_flag::encoded) != 0)
        return make_error(ErrorCode::unsupported, what + ": its payload is encoded by nvcc (flag 0x10000, LTO-IR), which sdm cannot decode; "
                                                         "import the whole fatbin (nvJitLink reads it) or rebuild with -compress-mode=none");
    ByteVector raw;
    switch (e.compression) {
    case FatbinCompression::none:
        raw.assign(e.stored.begin(), e.stored.end());
        break;
    case FatbinCompression::zstd: {
        SDM_TRY_GET(out, zstd_decompress(e.stored, e.raw_size, CodecReference{Codec::zstd, {}}, what));
        raw = std::move(*out);
        break;
    }
    case FatbinCompression::lz4: {
        // Summed first: nothing is allocated for a block that does not decode to the size declared.
        const auto size = lz4_block_size(e.stored, e.raw_size);
        if (!size || *size != e.raw_size)
            return make_error(ErrorCode::archive_corrupt, what + ": the LZ4 block does not decode to the " + std::to_string(e.raw_size) +
                                                              " bytes its header declares");
        if (e.stored.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
            e.raw_size > static_cast<uint64_t>(std::numeric_limits<int>::max()))
            return make_error(ErrorCode::archive_corrupt, what + ": too large for one LZ4 block");
        try {
            raw.resize(static_cast<size_t>(e.raw_size));
        } catch (const std::bad_alloc&) {
            return make_error(ErrorCode::out_of_memory, what + ": cannot allocate " + std::to_string(e.raw_size) + " bytes");
        }
        const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(e.stored.data()), reinterpret_cast<char*>(raw.data()),
                                          static_cast<int>(e.stored.size()), static_cast<int>(raw.size()));
        if (n < 0 || static_cast<uint64_t>(n) != e.raw_size)
            return make_error(ErrorCode::archive_corrupt, what + ": the LZ4 block does not decode (LZ4 error " + std::to_string(n) + ")");
        break;
    }
    }
    // PTX is a C string: nvcc ends it with a NUL and pads the entry with more.
    if (e.kind == fatbin_kind::ptx) {
        raw.erase(std::find(raw.begin(), raw.end(), std::byte{0}), raw.end());
    }
    return raw;
}

Result<void> refuse_raw_ltoir(const FatbinEntry& entry, const std::string& which) {
    if (entry.kind != fatbin_kind::ltoir || (entry.flags & fatbin_flag::encoded) != 0) return {};
    return make_error(ErrorCode::archive_corrupt, which + ": raw LTO-IR, which nvcc never writes in a fatbin (it encodes every LTO-IR entry); "
                                                          "sdm neither loads nor imports it. Add the LTO-IR as an entry of its own (sdm pack), "
                                                          "which sdm links itself");
}

}  // namespace sdm::archive
