// An archive writer for hostile inputs, written from docs/FORMAT.md alone: it shares no code with
// archive/ (only xxHash and zstd themselves), so a bug in sdm's writer cannot hide the same bug in
// sdm's reader. It lays out whatever it is told, in the order it is told, and then computes every
// checksum honestly, as an attacker who recomputes them would. Nothing here validates anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace forge {

using Bytes = std::vector<uint8_t>;

// Enumerations of docs/FORMAT.md section 4, as numbers.
namespace kind {
inline constexpr uint8_t cubin = 1, ptx = 2, ltoir = 3, fatbin = 4, manifest = 5, dictionary = 6;
}
namespace codec {
inline constexpr uint8_t stored = 0, zstd = 1, zstd_dict = 2, zstd_prefix = 3;
}
inline constexpr uint32_t kNoRef = 0xffffffffu;

struct Record {
    std::string name;
    uint8_t kind{kind::cubin};
    uint8_t codec{codec::stored};
    uint16_t sm{0};
    uint8_t variant{0};
    uint8_t flags{0};
    uint32_t ref{kNoRef};
    Bytes raw;                    // what raw_hash covers
    std::optional<Bytes> stored;  // the payload; default: `raw` (stored codec) or zstd of `raw`
    // Lies a record may tell (the checksums are computed over whatever is written).
    std::optional<uint64_t> raw_size, stored_size, data_offset;
};

struct Archive {
    uint16_t major{1}, minor{0};
    uint16_t kernel_abi_major{0}, kernel_abi_minor{0};
    std::string created_by{"forge"};  // up to 16 bytes, not NUL-terminated when 16
    std::vector<Record> records;      // in this order, unsorted unless sorted by the caller
};

// The archive's bytes: header, records, the names one after another, payloads at their
// alignment (4096 stored, 64 otherwise), every checksum computed.
Bytes write(const Archive& archive);

Bytes zstd(const Bytes& raw, int level = 3);
Bytes zstd_with_prefix(const Bytes& raw, const Bytes& prefix, int level = 3);
// The header of a zstd frame that declares `declared` bytes of content (window 1 MiB, no
// checksum, no dictionary); the caller appends whatever blocks it wants, valid or not.
Bytes zstd_frame_header(uint64_t declared);

// The binary manifest (FORMAT.md section 10): tag-length-value items.
struct Item {
    uint16_t tag{0};
    uint16_t flags{1};  // 1: required to understand
    Bytes payload;
};
Bytes item(uint16_t tag, const Bytes& payload, uint16_t flags = 1);
Bytes item(uint16_t tag, const std::string& text, uint16_t flags = 1);
Bytes concat(const std::vector<Bytes>& parts);
// "SDMM", version, body size, then `body`.
Bytes manifest(const Bytes& body, uint16_t major = 1, uint16_t minor = 0);
// A kernel item: name, module, signature.
Bytes kernel(const std::string& name, const std::string& module, const std::string& signature);
Bytes kernel_abi(uint16_t major, uint16_t minor);

// One PTX module "a-base" of at least `base_bytes` (comment lines after .version/.target) and
// `referrers` small ones "b100", "b101", ...: each prefix-coded against the big one when
// `referenced`, else coded alone (the baseline that holds the same entries). When `manifest`,
// a manifest listing kernel "scale" in module "a-base". The shape that multiplied the work of
// every verify when each referrer decoded its reference again.
Bytes shared_reference_archive(size_t base_bytes, int referrers, bool referenced, bool manifest);

// An nvcc fatbin container (FORMAT.md section 14), entries in the order given: a 16-byte header
// (magic, version 1, header size 16, the entries' size), then per entry a 64-byte header (kind,
// version 0x0101, header size 64, payload size padded to 8, compressed size, no options, version,
// arch, no name, flags, raw size) and its payload, zero-padded to 8.
struct FatbinEntry {
    uint16_t kind{2};          // 1 PTX, 2 cubin, 8 LTO-IR
    uint32_t arch{90};
    uint64_t flags{0x11};      // 64-bit, Linux; 0x8000 zstd (then `payload` is the frame and raw_size counts)
    Bytes payload;
    uint64_t raw_size{0};      // 0 when not compressed
    uint16_t version_major{1}, version_minor{8};
};
Bytes fatbin(const std::vector<FatbinEntry>& entries);

// The hostile cubins the image checks refuse, made from a good one: ELF tables and sections that
// point outside the image, header sizes a reader would trust, the 64-byte header the real driver
// (libcuda 580) crashes on. `expect`: a part of the message sdm's refusal carries.
struct HostileImage {
    std::string name;
    Bytes bytes;
    std::string expect;
};
std::vector<HostileImage> hostile_cubins(const Bytes& good);

Bytes read_file(const std::string& path);
void write_file(const std::string& path, const Bytes& bytes);

// PTX nvJitLink takes minutes over: a chain of 40,000 dependent FMAs over 2,000 live registers
// (24 KB; tests/runtime/jit/test_isolation.cpp, test_fatbin_load.cpp, gpu/test_gpu_hostile.cpp).
std::string fma_chain_ptx();

}  // namespace forge
