#include "forge.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

namespace forge {
namespace {

void put(Bytes& b, size_t at, uint64_t value, int width) {
    for (int i = 0; i < width; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(value >> (8 * i));
}
void append(Bytes& b, uint64_t value, int width) {
    for (int i = 0; i < width; ++i) b.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Bytes zstd(const Bytes& raw, int level) {
    Bytes out(ZSTD_compressBound(raw.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    const size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
    out.resize(n);
    return out;
}

Bytes fatbin(const std::vector<FatbinEntry>& entries) {
    Bytes body;
    for (const FatbinEntry& e : entries) {
        const uint64_t padded = (e.payload.size() + 7) / 8 * 8;
        Bytes h(64, 0);
        put(h, 0, e.kind, 2);
        put(h, 2, 0x0101, 2);
        put(h, 4, 64, 4);
        put(h, 8, padded, 8);
        put(h, 16, e.raw_size != 0 ? e.payload.size() : 0, 4);
        put(h, 24, e.version_minor, 2);
        put(h, 26, e.version_major, 2);
        put(h, 28, e.arch, 4);
        put(h, 40, e.flags, 8);
        put(h, 56, e.raw_size, 8);
        body.insert(body.end(), h.begin(), h.end());
        body.insert(body.end(), e.payload.begin(), e.payload.end());
        body.resize(body.size() + (padded - e.payload.size()), 0);
    }
    // Sized once and copied into, not a 16-byte vector grown by insert(): GCC 12 -O3 warns a false
    // -Warray-bounds on that insert's reallocation.
    Bytes out(16 + body.size(), 0);
    put(out, 0, 0xba55ed50u, 4);
    put(out, 4, 1, 2);
    put(out, 6, 16, 2);
    put(out, 8, body.size(), 8);
    std::copy(body.begin(), body.end(), out.begin() + 16);
    return out;
}

std::vector<HostileImage> hostile_cubins(const Bytes& good) {
    const uint64_t far = uint64_t{512} << 20;
    const auto patched = [&](size_t at, uint64_t value, int width) {
        Bytes b = good;
        put(b, at, value, width);
        return b;
    };
    uint64_t shoff = 0;
    for (int i = 0; i < 8; ++i) shoff |= uint64_t{good[40 + static_cast<size_t>(i)]} << (8 * i);
    Bytes header(good.begin(), good.begin() + 64);
    put(header, 32, far, 8);
    put(header, 40, far, 8);
    return {
        {"section header table past the end", patched(40, far, 8), "the section header table [536870912"},
        {"program header table past the end", patched(32, far, 8), "the program header table [536870912"},
        {"ELF header size 32", patched(52, 32, 2), "e_ehsize is 32"},
        {"program header size 40", patched(54, 40, 2), "program header size 40"},
        {"no section-name table", patched(62, 0, 2), "section-name table index 0"},
        {"a section's bytes past the end", patched(static_cast<size_t>(shoff + 64 * 2 + 24), far, 8), "section 2 [536870912"},
        {"the 64-byte header libcuda 580 crashes on", header, "lies outside the image of 64 bytes"},
    };
}

Bytes zstd_with_prefix(const Bytes& raw, const Bytes& prefix, int level) {
    Bytes out(ZSTD_compressBound(raw.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_refPrefix(c, prefix.data(), prefix.size());
    const size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
    out.resize(n);
    return out;
}

Bytes zstd_frame_header(uint64_t declared) {
    // Magic, a frame header descriptor with an 8-byte content size and no window descriptor only
    // when single-segment; here: not single segment, window descriptor for 2^20, 8-byte size.
    Bytes b;
    append(b, 0xFD2FB528u, 4);
    b.push_back(0xC0);                      // FCS field size 8 bytes, not single segment, no checksum, no dictionary
    b.push_back(static_cast<uint8_t>((20 - 10) << 3));  // window 2^20
    append(b, declared, 8);
    return b;
}

Bytes write(const Archive& a) {
    constexpr uint64_t header_size = 128, record_size = 64;
    const uint64_t index_offset = header_size;
    const uint64_t count = a.records.size();
    const uint64_t strings_offset = index_offset + count * record_size;
    std::string strings;
    std::vector<uint64_t> name_at;
    for (const Record& r : a.records) {
        name_at.push_back(strings.size());
        strings += r.name;
    }
    const uint64_t payload_offset = round_up(strings_offset + strings.size(), 64);
    std::vector<Bytes> payloads;
    std::vector<uint64_t> offsets;
    uint64_t at = payload_offset;
    for (const Record& r : a.records) {
        Bytes p = r.stored ? *r.stored : (r.codec == codec::stored ? r.raw : zstd(r.raw));
        at = round_up(at, r.codec == codec::stored ? 4096 : 64);
        offsets.push_back(r.data_offset.value_or(at));
        at += p.size();
        payloads.push_back(std::move(p));
    }
    Bytes b(at, 0);
    const uint8_t magic[8] = {0x89, 'S', 'D', 'M', '\r', '\n', 0x1a, '\n'};
    std::memcpy(b.data(), magic, 8);
    put(b, 8, a.major, 2);
    put(b, 10, a.minor, 2);
    put(b, 12, header_size, 4);
    put(b, 16, b.size(), 8);
    put(b, 24, index_offset, 8);
    put(b, 32, count, 4);
    put(b, 36, record_size, 4);
    put(b, 40, strings_offset, 8);
    put(b, 48, strings.size(), 8);
    put(b, 56, payload_offset, 8);
    put(b, 80, a.kernel_abi_major, 2);
    put(b, 82, a.kernel_abi_minor, 2);
    std::memcpy(b.data() + 88, a.created_by.data(), std::min<size_t>(a.created_by.size(), 16));
    for (size_t i = 0; i < a.records.size(); ++i) {
        const Record& r = a.records[i];
        const size_t rec = index_offset + i * record_size;
        put(b, rec + 0, name_at[i], 4);
        put(b, rec + 4, r.name.size(), 2);
        b[rec + 6] = r.kind;
        b[rec + 7] = r.codec;
        put(b, rec + 8, r.sm, 2);
        b[rec + 10] = r.variant;
        b[rec + 11] = r.flags;
        put(b, rec + 12, r.ref, 4);
        put(b, rec + 16, offsets[i], 8);
        put(b, rec + 24, r.stored_size.value_or(payloads[i].size()), 8);
        put(b, rec + 32, r.raw_size.value_or(r.raw.size()), 8);
        const XXH128_hash_t raw_hash = XXH3_128bits(r.raw.data(), r.raw.size());
        put(b, rec + 40, raw_hash.high64, 8);
        put(b, rec + 48, raw_hash.low64, 8);
        if (!r.data_offset) std::memcpy(b.data() + offsets[i], payloads[i].data(), payloads[i].size());
        // The stored hash covers what the record says is stored, wherever it points.
        const uint64_t size = r.stored_size.value_or(payloads[i].size());
        const uint64_t off = offsets[i];
        const uint64_t hashed = off <= b.size() ? std::min<uint64_t>(size, b.size() - off) : 0;
        put(b, rec + 56, XXH3_64bits(b.data() + std::min<uint64_t>(off, b.size()), hashed), 8);
    }
    std::memcpy(b.data() + strings_offset, strings.data(), strings.size());
    put(b, 104, XXH3_64bits(b.data() + index_offset, strings_offset + strings.size() - index_offset), 8);
    put(b, 120, XXH3_64bits(b.data(), 120), 8);
    return b;
}

Bytes item(uint16_t tag, const Bytes& payload, uint16_t flags) {
    Bytes b;
    append(b, tag, 2);
    append(b, flags, 2);
    append(b, payload.size(), 4);
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

Bytes item(uint16_t tag, const std::string& text, uint16_t flags) { return item(tag, Bytes(text.begin(), text.end()), flags); }

Bytes concat(const std::vector<Bytes>& parts) {
    Bytes b;
    for (const Bytes& p : parts) b.insert(b.end(), p.begin(), p.end());
    return b;
}

Bytes manifest(const Bytes& body, uint16_t major, uint16_t minor) {
    Bytes b = {'S', 'D', 'M', 'M'};
    append(b, major, 2);
    append(b, minor, 2);
    append(b, body.size(), 4);
    b.insert(b.end(), body.begin(), body.end());
    return b;
}

Bytes kernel_abi(uint16_t major, uint16_t minor) {
    Bytes v;
    append(v, major, 2);
    append(v, minor, 2);
    return item(1, v);
}

Bytes kernel(const std::string& name, const std::string& module, const std::string& signature) {
    return item(3, concat({item(1, name), item(2, module), item(3, signature)}));
}

Bytes shared_reference_archive(size_t base_bytes, int referrers, bool referenced, bool manifest_too) {
    std::string text = ".version 8.0\n.target sm_80\n.address_size 64\n";
    for (size_t i = 0; text.size() < base_bytes; ++i) text += "// line " + std::to_string(i * 2654435761u % 1000003) + "\n";
    const Bytes big(text.begin(), text.end());
    Archive a;
    a.kernel_abi_major = 1;
    a.records.push_back({"a-base", kind::ptx, codec::zstd, 80, 0, 0, kNoRef, big, zstd(big, 1), {}, {}, {}});
    for (int i = 0; i < referrers; ++i) {
        const std::string small_text = ".version 8.0\n.target sm_80\n// small " + std::to_string(i) + "\n";
        const Bytes small(small_text.begin(), small_text.end());
        // Appended, not "b" + string: GCC 12 -O3 warns a false -Wrestrict on that (GCC bug 105651).
        Record r{std::string("b").append(std::to_string(100 + i)), kind::ptx, codec::zstd, 80, 0, 0, kNoRef, small, {}, {}, {}, {}};
        if (referenced) {
            r.codec = codec::zstd_prefix;
            r.ref = 0;
            r.stored = zstd_with_prefix(small, big, 1);
        }
        a.records.push_back(std::move(r));
    }
    if (manifest_too) {
        const Bytes m = manifest(concat({kernel_abi(1, 0), kernel("scale", "a-base", "ptr")}));
        a.records.push_back({"manifest", kind::manifest, codec::stored, 0, 0, 0, kNoRef, m, {}, {}, {}, {}});
    }
    return write(a);
}

Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("forge: cannot read " + path);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("forge: cannot write " + path);
}

std::string fma_chain_ptx() {
    std::string ptx = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry scale(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n.reg .f32 %f<2000>;\n"
                      "ld.param.u64 %rd1, [p];\n";
    for (int i = 0; i < 2000; ++i) ptx += "ld.global.f32 %f" + std::to_string(i) + ", [%rd1+" + std::to_string(4 * i) + "];\n";
    for (int i = 0; i < 40000; ++i)
        ptx += "fma.rn.f32 %f" + std::to_string(i % 2000) + ", %f" + std::to_string((i + 1) % 2000) + ", %f" + std::to_string((i + 7) % 2000) + ", %f" +
               std::to_string(i % 2000) + ";\n";
    for (int i = 0; i < 2000; ++i) ptx += "st.global.f32 [%rd1+" + std::to_string(4 * i) + "], %f" + std::to_string(i) + ";\n";
    ptx += "ret;\n}\n";
    return ptx;
}

}  // namespace forge
