// The sdm archive format, version 1.0: constants, on-disk field offsets and hard limits.
// docs/FORMAT.md documents every byte; this header is its machine-readable twin. Fields are
// little-endian and read through bytes.hpp, never by casting a struct over the mapping, so the
// same code reads an archive embedded in a library, mmapped, or at any alignment.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sdm::archive {

// PNG-style magic: a high-bit byte catches 7-bit transports, CR LF and LF catch newline
// conversion in either direction, ^Z stops `type` on DOS-descended systems.
inline constexpr std::array<uint8_t, 8> kMagic{0x89, 'S', 'D', 'M', '\r', '\n', 0x1a, '\n'};

inline constexpr uint16_t kFormatMajor = 1;  // a reader refuses any other major
inline constexpr uint16_t kFormatMinor = 0;  // what the writer writes unless an input needs 1.1
inline constexpr uint16_t kFormatMinor11 = 1;  // format 1.1: written only with kFeatureFormat11
inline constexpr uint16_t kFormatMinor12 = 2;  // format 1.2: the header's extension (below), written only when it is used

inline constexpr uint32_t kHeaderSize = 128;  // minimum; a later minor may grow it (multiple of 8)
inline constexpr uint32_t kRecordSize = 64;   // minimum; a later minor may grow it (multiple of 8)
inline constexpr uint32_t kZstdAlignment = 64;     // compressed payloads start on 64-byte boundaries
inline constexpr uint32_t kStoredAlignment = 4096; // stored payloads start on page boundaries
inline constexpr uint32_t kNoRef = 0xffffffffu;

// Header field offsets (bytes from the archive start).
namespace header {
inline constexpr size_t magic = 0;             // 8 bytes
inline constexpr size_t format_major = 8;      // u16
inline constexpr size_t format_minor = 10;     // u16
inline constexpr size_t header_size = 12;      // u32
inline constexpr size_t archive_size = 16;     // u64
inline constexpr size_t index_offset = 24;     // u64, == header_size
inline constexpr size_t index_count = 32;      // u32
inline constexpr size_t record_size = 36;      // u32
inline constexpr size_t strings_offset = 40;   // u64, == index_offset + count * record_size
inline constexpr size_t strings_size = 48;     // u64
inline constexpr size_t payload_offset = 56;   // u64, first byte a payload may occupy
inline constexpr size_t required_features = 64;  // u64, an unknown bit means reject
inline constexpr size_t optional_features = 72;  // u64, unknown bits are ignored
inline constexpr size_t kernel_abi_major = 80;   // u16
inline constexpr size_t kernel_abi_minor = 82;   // u16
inline constexpr size_t flags = 84;              // u32, reserved, zero in 1.0
inline constexpr size_t created_by = 88;         // 16 bytes, NUL-padded ASCII of the writer ("sdm 0.1.0")
inline constexpr size_t meta_hash = 104;         // u64 XXH3-64 of index + string table
inline constexpr size_t reserved = 112;          // 8 bytes, zero in 1.0
inline constexpr size_t header_hash = 120;       // u64 XXH3-64 of header bytes [0,120) and [128,header_size)
// Format 1.2's extension (header_size >= kHeaderSize12), each field meaningful only when its
// optional feature bit is set (zero otherwise):
inline constexpr size_t archive_version = 128;   // u64, kFeatureArchiveVersion: the monotonic version rollbacks are judged by
inline constexpr size_t base_identity = 136;     // 16 bytes, kFeatureBase: the identity (identity.hpp) of the archive this overlay was built from
inline constexpr size_t extension_end = 152;
// Then, in a header of at least kHeaderSizeLine bytes (still format 1.2):
inline constexpr size_t release_line = 152;      // 32 bytes, kFeatureReleaseLine: the release line's name, NUL-padded ASCII
inline constexpr size_t release_line_size = 32;
inline constexpr size_t release_line_end = 184;
}  // namespace header
inline constexpr uint32_t kHeaderSize12 = static_cast<uint32_t>(header::extension_end);  // what the writer writes with the extension
inline constexpr uint32_t kHeaderSizeLine = static_cast<uint32_t>(header::release_line_end);  // ... and with a release line

// Index record field offsets (bytes from the record start).
namespace record {
inline constexpr size_t name_offset = 0;   // u32, into the string table
inline constexpr size_t name_length = 4;   // u16
inline constexpr size_t kind = 6;          // u8
inline constexpr size_t codec = 7;         // u8
inline constexpr size_t sm = 8;            // u16, major*10+minor (90, 100, 103, 120); 0 for arch-free kinds
inline constexpr size_t variant = 10;      // u8
inline constexpr size_t flags = 11;        // u8, reserved, zero in 1.0
inline constexpr size_t ref = 12;          // u32, entry index of the dictionary or prefix; kNoRef otherwise
inline constexpr size_t data_offset = 16;  // u64
inline constexpr size_t stored_size = 24;  // u64
inline constexpr size_t raw_size = 32;     // u64
inline constexpr size_t raw_hash = 40;     // 16 bytes, XXH3-128 of the raw bytes (high 64 bits first)
inline constexpr size_t stored_hash = 56;  // u64, XXH3-64 of the stored bytes
}  // namespace record

enum class Kind : uint8_t {
    cubin = 1,       // ELF64 for one SM (sm_XY[a|f])
    ptx = 2,         // PTX text for one virtual arch (compute_XY[a|f])
    ltoir = 3,       // NVVM LTO-IR for one virtual arch (nvJitLink input)
    fatbin = 4,      // an nvcc fatbinary; arch-free in the index (sm 0)
    manifest = 5,    // the binary manifest (manifest.hpp); at most one per archive
    dictionary = 6,  // a zstd dictionary other entries reference (codec zstd_dict)
};

enum class Codec : uint8_t {
    stored = 0,       // raw bytes, page-aligned: can go to the driver straight from the mapping
    zstd = 1,         // one zstd frame
    zstd_dict = 2,    // one zstd frame compressed with the dictionary entry `ref`
    zstd_prefix = 3,  // one zstd frame compressed with the raw bytes of entry `ref` as prefix
};

enum class Variant : uint8_t {
    base = 0,  // sm_90: runs on 9.x with minor >= 0 (cubin), or any later arch (PTX)
    a = 1,     // sm_90a: arch-specific features; runs on exactly 9.0
    f = 2,     // sm_100f: family-specific; runs on the same family (10.x) with minor >= its own
};

// Hard limits a reader enforces before allocating anything. Generous for real kernels
// (PyTorch's largest cubin is a few tens of MB); a file that exceeds them is refused.
namespace limits {
inline constexpr uint32_t max_entries = 65536;
inline constexpr uint32_t max_name_length = 256;         // format 1.0
inline constexpr uint32_t max_long_name_length = 65535;  // format 1.1 (kFeatureFormat11): what name_length holds
inline constexpr uint64_t max_raw_entry = 1ull << 30;        // 1 GiB per entry
inline constexpr uint64_t max_raw_total = 16ull << 30;       // 16 GiB across the archive
inline constexpr uint64_t max_strings = 16ull << 20;         // 16 MiB of names
inline constexpr uint32_t max_window_log = 27;               // zstd window up to 128 MiB
inline constexpr uint32_t max_frames = 4096;                 // zstd frames in one payload (kFeatureFrames)
inline constexpr uint32_t max_header_size = 4096;
inline constexpr uint32_t max_record_size = 1024;
// The manifest is decoded (and every plan expression in it parsed) at every mount and reload: at
// most 64 MiB of it, and at most 4 MiB when compressed, so that what a mount costs grows with the
// file's size (a stored manifest is its own bytes in the file; a compressed one could otherwise
// expand 32768-fold). The sdm writer always stores the manifest.
inline constexpr uint64_t max_manifest = 64ull << 20;
inline constexpr uint64_t max_compressed_manifest = 4ull << 20;
}  // namespace limits

// The most a zstd frame can expand: every block decodes to at most 128 KiB, and the smallest
// block (3-byte header, one RLE byte) is 4 bytes. A record whose raw size exceeds its stored size
// times this cannot be a zstd frame, and is refused before anything is allocated for it.
inline constexpr uint64_t kMaxZstdExpansion = (128 * 1024) / 4;

// Feature bits. A bit set in required_features that a reader does not know makes it refuse the
// archive as unsupported; bits in optional_features are ignored.
// kFeatureFormat11 (format 1.1, sdm 0.3): names up to 65535 bytes (index and manifest), and a
// manifest of minor 1 (the extended signature types, capability-range plan rules). The writer
// sets it, with format_minor 1, only when an input needs one of these; otherwise it writes 1.0,
// byte for byte as before, which every 1.0 reader reads.
inline constexpr uint64_t kFeatureFormat11 = 1;
// kFeatureFrames (sdm 0.3): a compressed entry's payload may be several zstd frames one after
// another (at most limits::max_frames), each declaring its content size and coded against the
// entry's reference, so that one entry decodes on several cores (codec.hpp). The writer sets it
// only when it wrote such a payload; without it, a payload is exactly one frame.
inline constexpr uint64_t kFeatureFrames = 2;
inline constexpr uint64_t kKnownRequiredFeatures = kFeatureFormat11 | kFeatureFrames;
// Optional bits of format 1.2 (bit 0, kFeatureSigned, is signature_block.hpp's): a reader that does
// not know them reads the archive as before, only without the rollback check or the overlay's binding.
// kFeatureArchiveVersion: header::archive_version holds the archive's version (a signed archive's
// is signed: the signature covers the header). kFeatureBase: the archive is an overlay (sdm jit)
// and header::base_identity names the archive it was built from.
inline constexpr uint64_t kFeatureArchiveVersion = 2;
inline constexpr uint64_t kFeatureBase = 4;
// kFeatureReleaseLine: header::release_line names the line of releases whose versions compare
// (docs/SIGNING.md, "Rollback"): the rollback mark is kept per line, whichever trusted key signed.
inline constexpr uint64_t kFeatureReleaseLine = 8;
inline constexpr uint64_t kHeaderExtensionFeatures = kFeatureArchiveVersion | kFeatureBase | kFeatureReleaseLine;
// The release that first reads each bit, for the message that refuses an archive.
inline constexpr std::pair<uint64_t, const char*> kFeatureReleases[] = {{kFeatureFormat11, "format 1.1 (sdm 0.3)"},
                                                                      {kFeatureFrames, "entries in several frames (sdm 0.3)"}};

// The header_hash of the archive starting at `archive`: XXH3-64 of header bytes [0,120) followed by
// [128, header_size) (the caller checked that header_size bytes are there).
uint64_t header_hash_of(std::span<const std::byte> archive, uint32_t header_size);

const char* kind_name(Kind kind) noexcept;      // "cubin", "ptx", ..., "kind-7" is never returned: see is_known
const char* codec_name(Codec codec) noexcept;
const char* variant_suffix(Variant variant) noexcept;  // "", "a", "f"
bool is_known(Kind kind) noexcept;
bool is_known(Codec codec) noexcept;
bool is_known(Variant variant) noexcept;
bool kind_has_arch(Kind kind) noexcept;  // cubin, ptx, ltoir
std::optional<Kind> parse_kind(std::string_view name) noexcept;

// A target as written on the command line and in messages: sm_90a (cubin), compute_90 (PTX),
// lto_90 (LTO-IR). Kind + sm + variant in, text out, and back.
struct Target {
    Kind kind{Kind::cubin};
    uint16_t sm{0};
    Variant variant{Variant::base};
};
std::string target_name(Kind kind, uint16_t sm, Variant variant);
std::optional<Target> parse_target(std::string_view text) noexcept;
std::string sm_capability(uint16_t sm);  // 90 -> "9.0", 103 -> "10.3"

// Names of modules and kernels are data, never paths (docs/FORMAT.md, section 5): 1 to
// max_name_length bytes, each printable ASCII (0x21..0x7E: no space, no control character, no byte
// >= 0x80), none of the bytes a path or a file system gives a meaning (kNameForbidden), and not
// starting with '.' (which rules out "." and ".." and hidden files). `sdm extract` may then use a
// name as a file name inside its directory on any system.
inline constexpr std::string_view kNameForbidden = "/\\:*?\"<>|";
// `max_length`: 256 in format 1.0, 65535 in 1.1.
bool valid_name(std::string_view name, size_t max_length = limits::max_name_length) noexcept;
// Why `name` breaks the rules ("contains '/'"), or empty when it is valid.
std::string name_problem(std::string_view name, size_t max_length = limits::max_name_length);
// A release line's name (header::release_line): 1 to 32 bytes of [a-z0-9], '.', '_', '-' and '/',
// starting with a letter or digit ("example.com/fleet-kernels"). Empty when `name` is one; else why not.
std::string release_line_problem(std::string_view name);
// The rules in one sentence, for messages that refuse a name.
inline constexpr const char* kNameRules =
    "names are printable ASCII characters without spaces (1-256 of them in format 1.0, up to 65535 in 1.1), none of / \\ : * ? \" < > |, "
    "not starting with '.'";

}  // namespace sdm::archive
