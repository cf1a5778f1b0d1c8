// nvcc fatbinaries: the containers nvcc, fatbinary and nvlink write (a .fatbin file, or one
// translation unit's device code in a host binary's .nv_fatbin section), the entries in them
// (cubins, PTX, LTO-IR) and each entry's payload, decompressed from LZ4 or zstd. Everything comes
// from outside: every size and offset is checked against the bytes given before it is used, and
// no decompression writes more than the entry declares or allocates more than its stream really
// yields. docs/FORMAT.md ("Fatbin containers") has the byte layout and how each fact was verified.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "common/result.hpp"

namespace sdm::archive {

inline constexpr uint32_t kFatbinMagic = 0xba55ed50u;
inline constexpr size_t kFatbinHeaderSize = 16;       // u32 magic, u16 version, u16 header size, u64 size of the entries
inline constexpr size_t kFatbinEntryHeaderSize = 64;  // the fixed part of an entry header; nvcc writes 64 to 144 bytes

// Entry kinds (the u16 at entry +0) as CUDA 13.0's nvcc writes them. Other values are listed with
// no image kind, never refused: a newer toolkit may add kinds.
namespace fatbin_kind {
inline constexpr uint16_t ptx = 1;
inline constexpr uint16_t cubin = 2;
inline constexpr uint16_t ltoir = 8;  // nvcc -gencode ...,code=lto_XY
}  // namespace fatbin_kind

// Entry flags (the u64 at entry +40).
namespace fatbin_flag {
inline constexpr uint64_t address_64 = 0x1;           // 64-bit device code
inline constexpr uint64_t debug = 0x2;                // nvcc -G
inline constexpr uint64_t host_linux = 0x10;
inline constexpr uint64_t lz4 = 0x2000;               // the payload is one LZ4 block (-compress-mode=speed)
inline constexpr uint64_t zstd = 0x8000;              // the payload is one zstd frame (default, balance, size)
inline constexpr uint64_t encoded = 0x10000;          // LTO-IR: nvcc transformed the compressed bytes further; sdm cannot decode them
inline constexpr uint64_t arch_specific = 0x100000;   // sm_90a, compute_100a
inline constexpr uint64_t family_specific = 0x200000; // sm_100f
}  // namespace fatbin_flag

enum class FatbinCompression : uint8_t { none, lz4, zstd };

struct FatbinEntry {
    size_t index{0};                 // position in its container, from 0
    uint64_t offset{0};              // of its header, from the container's first byte
    uint16_t kind{0};                // fatbin_kind::*, or a kind sdm does not know
    std::optional<Kind> image_kind;  // cubin, ptx or ltoir; empty for other kinds
    uint16_t sm{0};                  // the arch: 90 for sm_90, compute_90 and lto_90
    Variant variant{Variant::base};  // from the flags
    uint64_t flags{0};
    uint16_t version_major{0};       // cubins: the ELF code version (1.8 from CUDA 13.0); PTX: its ISA (9.0)
    uint16_t version_minor{0};
    FatbinCompression compression{FatbinCompression::none};
    Bytes stored;                    // the payload as stored: the compressed stream, or the raw bytes with nvcc's zero padding
    uint64_t raw_size{0};            // its size after decompression (stored.size() when not compressed)
    std::string source;              // the source file nvcc recorded (only with -G or -lineinfo: the path as given to nvcc)
    Bytes options;                   // PTX and LTO-IR: the ptxas / NVVM options text; sm_100+ cubins: a binary block; often empty
};

// One container: `bytes` is exactly its header and entries, views into the bytes parsed.
struct FatbinContainer {
    Bytes bytes;
    std::vector<FatbinEntry> entries;
};

// Parses the container that starts at the first byte of `bytes`. Bytes after the size its header
// declares are not part of it (a section holds containers back to back); FatbinContainer::bytes
// says where it ends. ErrorCode::archive_corrupt, naming the entry and its offset, when a header,
// a payload, a name or an options block lies outside the container, an entry claims both
// compressions or both variants, or declares a decompressed size over the limits of
// fatbin_entry_payload. On failure, `examined` (when given) receives how far into `bytes` the walk
// got: the offset of the entry it refused, so that a scan for containers resumes past it.
Result<FatbinContainer> parse_fatbin(Bytes bytes, size_t* examined = nullptr);

// The entry's payload, decompressed. PTX comes back as its text without the NUL terminator and
// the padding after it. The declared size is checked before anything is allocated: at most
// limits::max_raw_entry, at most kMaxZstdExpansion times the stored bytes for zstd, and for LZ4
// exactly what the block decodes to (its sequences are summed first, so a block that lies about
// its size costs nothing). ErrorCode::unsupported for encoded LTO-IR (fatbin_flag::encoded).
Result<ByteVector> fatbin_entry_payload(const FatbinEntry& entry);

// ErrorCode::archive_corrupt for raw LTO-IR (kind 8 without fatbin_flag::encoded), which nvcc
// never writes: every LTO-IR entry it writes is encoded. No fatbin holding one is loaded, packed
// or imported (issue 38: the driver's JIT, given one, killed the host). `which` names the entry.
Result<void> refuse_raw_ltoir(const FatbinEntry& entry, const std::string& which);

// "entry 2 (sm_90a cubin, zstd)", for messages and listings.
std::string fatbin_entry_label(const FatbinEntry& entry);

}  // namespace sdm::archive
