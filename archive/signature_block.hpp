// The signature block at the end of a signed archive (docs/FORMAT.md section 19, docs/SIGNING.md):
// its layout, key ids, the structural checks Archive::open runs on it (no cryptography), and the
// one digest its signatures sign. What signs an archive is signing.hpp; what checks its signatures
// against trusted keys, signature_check.hpp; key files, key_files.hpp.
//
// What a signature covers: one BLAKE2b-256 digest over the header (its archive_size and
// header_hash read as zero, so that adding a signature does not change what the others signed),
// the index and the string table, the block's offset, and the block's table of every entry's
// BLAKE2b-256 over its stored bytes. Checking a signature therefore costs the same whatever the
// payloads weigh; each payload is checked against its digest the first time it is read
// (Archive::enforce_digests).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.hpp"
#include "common/crypto.hpp"
#include "common/result.hpp"

namespace sdm::archive {

// optional_features bit 0: the archive ends with a signature block. Optional: a reader that does
// not know it sees zero padding's place taken and reads the archive all the same.
inline constexpr uint64_t kFeatureSigned = 1;
inline constexpr uint64_t kKnownOptionalFeatures = kFeatureSigned;

inline constexpr std::array<uint8_t, 8> kSignatureMagic{0x89, 'S', 'I', 'G', '\r', '\n', 0x1a, '\n'};
namespace signature_block {
inline constexpr size_t magic = 0;            // 8 bytes, kSignatureMagic
inline constexpr size_t version = 8;          // u16, 1
inline constexpr size_t digest_algorithm = 10;  // u16, 1: BLAKE2b-256
inline constexpr size_t entry_count = 12;     // u32, == the index's count
inline constexpr size_t signature_count = 16; // u32, 1..max_signatures
inline constexpr size_t reserved = 20;        // u32, zero
inline constexpr size_t signed_size = 24;     // u64, the block's own offset (the archive before it)
inline constexpr size_t archive_digest = 32;  // 32 bytes: the digest every signature signs
inline constexpr size_t header_size = 64;     // then entry_count digests, then the signatures
inline constexpr size_t digest_size = 32;
// One signature: u8 algorithm (1: Ed25519), 7 zero bytes, 8-byte key id, 64-byte signature.
inline constexpr size_t record_size = 80;
inline constexpr size_t record_key_id = 8;
inline constexpr size_t record_signature = 16;
// The footer, the archive's last 16 bytes: u64 block size (header to footer inclusive), magic.
inline constexpr size_t footer_size = 16;
inline constexpr uint16_t kVersion = 1;
inline constexpr uint16_t kBlake2b256 = 1;
inline constexpr uint8_t kEd25519 = 1;
inline constexpr uint32_t max_signatures = 64;
}  // namespace signature_block

// A key's short id: the first 8 bytes of BLAKE2b-256("sdm key id 1" || public key), printed as 16
// hex digits. It names a key in messages and in the block; it does not authenticate anything.
using KeyId = std::array<uint8_t, 8>;
std::string key_id_text(const KeyId& id);
Result<KeyId> key_id(const crypto::PublicKey& key);

struct SignatureRecord {
    KeyId key_id{};
    crypto::Signature signature{};
};

// The block of an opened archive: views into its bytes.
struct SignatureBlock {
    uint64_t offset{0};  // == signed_size
    uint64_t size{0};
    crypto::Digest archive_digest{};
    Bytes digests;  // entry_count * 32 bytes
    std::vector<SignatureRecord> signatures;
    Bytes digest(size_t entry) const { return digests.subspan(entry * signature_block::digest_size, signature_block::digest_size); }
};

// Finds and checks the block of an archive whose header sets kFeatureSigned: `bytes` is the whole
// archive, `payload_end` the end of its last payload. Structure only; errors are the message's
// tail ("the signature block ...").
Result<SignatureBlock> parse_signature_block(Bytes bytes, uint32_t entry_count, uint64_t payload_end);

// The digest the signatures sign, from an archive's bytes: its header (archive_size and header_hash
// read as zero), index and strings, the block's offset and its digest table.
crypto::Digest signed_digest_of(Bytes archive, uint32_t header_size, uint64_t offset, Bytes digests);
// The size of a block of `entries` digests and `signatures` records, footer included.
uint64_t signature_block_size(uint64_t entries, uint64_t signatures);

}  // namespace sdm::archive
