#include "signature_block.hpp"

#include <algorithm>
#include <cstring>

#include "format.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace sb = signature_block;
namespace {

constexpr std::string_view kDigestDomain{"sdm archive signature 1\0", 24};
constexpr std::string_view kKeyIdDomain{"sdm key id 1"};

const uint8_t* u8(Bytes b) { return reinterpret_cast<const uint8_t*>(b.data()); }

}  // namespace

uint64_t signature_block_size(uint64_t entries, uint64_t signatures) {
    return sb::header_size + entries * sb::digest_size + signatures * sb::record_size + sb::footer_size;
}

crypto::Digest signed_digest_of(Bytes archive, uint32_t header_size, uint64_t offset, Bytes digests) {
    const uint64_t meta_end = load_u64(archive, header::strings_offset) + load_u64(archive, header::strings_size);
    crypto::Blake2b h;
    h.update(as_bytes(kDigestDomain));
    ByteVector header(archive.begin(), archive.begin() + header_size);
    std::fill_n(header.begin() + header::archive_size, 8, std::byte{0});
    std::fill_n(header.begin() + header::header_hash, 8, std::byte{0});
    h.update(header);
    h.update(archive.subspan(header_size, meta_end - header_size));
    h.update_u64(offset);
    h.update(digests);
    return h.digest();
}

std::string key_id_text(const KeyId& id) { return hex_text(id); }

Result<KeyId> key_id(const crypto::PublicKey& key) {
    crypto::Blake2b h;
    if (!crypto::available()) return crypto::unsupported("naming a key");
    h.update(as_bytes(kKeyIdDomain));
    h.update(std::as_bytes(std::span(key)));
    const auto d = h.digest();
    KeyId id{};
    std::copy_n(d.begin(), id.size(), id.begin());
    return id;
}

Result<SignatureBlock> parse_signature_block(Bytes b, uint32_t entry_count, uint64_t payload_end) {
    const auto fail = [](const std::string& why) { return make_error(ErrorCode::archive_corrupt, "the signature block " + why); };
    const uint64_t size = b.size();
    if (size < sb::footer_size) return fail("is missing: the archive is shorter than its footer");
    const Bytes footer = b.subspan(size - sb::footer_size);
    if (!std::equal(kSignatureMagic.begin(), kSignatureMagic.end(), u8(footer) + 8))
        return fail("is missing: the header says the archive is signed, but its last 16 bytes are not a signature footer");
    SignatureBlock block;
    block.size = load_u64(footer, 0);
    if (block.size < sb::header_size + sb::footer_size || block.size > size - payload_end)
        return fail("size " + std::to_string(block.size) + " does not fit between the last payload (ending at " + std::to_string(payload_end) +
                    ") and the end of the archive (" + std::to_string(size) + ")");
    block.offset = size - block.size;
    if (block.offset % 8 != 0) return fail("at offset " + std::to_string(block.offset) + " is not 8-byte aligned");
    const Bytes h = b.subspan(block.offset, block.size);
    if (!std::equal(kSignatureMagic.begin(), kSignatureMagic.end(), u8(h))) return fail("at offset " + std::to_string(block.offset) + " has no magic");
    if (load_u16(h, sb::version) != sb::kVersion || load_u16(h, sb::digest_algorithm) != sb::kBlake2b256)
        return make_error(ErrorCode::archive_unsupported, "the signature block is version " + std::to_string(load_u16(h, sb::version)) + " with digest algorithm " +
                                                          std::to_string(load_u16(h, sb::digest_algorithm)) +
                                                          "; this sdm reads version 1 (BLAKE2b-256): update sdm");
    if (load_u32(h, sb::entry_count) != entry_count)
        return fail("has digests for " + std::to_string(load_u32(h, sb::entry_count)) + " entries, the index " + std::to_string(entry_count));
    const uint32_t count = load_u32(h, sb::signature_count);
    if (count == 0 || count > sb::max_signatures)
        return fail("holds " + std::to_string(count) + " signatures (1 to " + std::to_string(sb::max_signatures) + " allowed)");
    if (load_u32(h, sb::reserved) != 0) return fail("has reserved bytes that are not zero");
    if (load_u64(h, sb::signed_size) != block.offset)
        return fail("says it starts at " + std::to_string(load_u64(h, sb::signed_size)) + ", its footer at " + std::to_string(block.offset));
    if (block.size != signature_block_size(entry_count, count))
        return fail("is " + std::to_string(block.size) + " bytes, but " + std::to_string(entry_count) + " digests and " + std::to_string(count) +
                    " signatures make " + std::to_string(signature_block_size(entry_count, count)));
    std::copy_n(u8(h) + sb::archive_digest, block.archive_digest.size(), block.archive_digest.begin());
    block.digests = h.subspan(sb::header_size, uint64_t{entry_count} * sb::digest_size);
    const Bytes records = h.subspan(sb::header_size + block.digests.size(), uint64_t{count} * sb::record_size);
    for (uint32_t i = 0; i < count; ++i) {
        const Bytes r = records.subspan(uint64_t{i} * sb::record_size, sb::record_size);
        if (load_u8(r, 0) != sb::kEd25519)
            return make_error(ErrorCode::archive_unsupported, "signature " + std::to_string(i) + " of the signature block uses algorithm " +
                                                              std::to_string(load_u8(r, 0)) + "; this sdm knows 1 (Ed25519): update sdm");
        for (size_t z = 1; z < sb::record_key_id; ++z)
            if (load_u8(r, z) != 0) return fail("signature " + std::to_string(i) + " has reserved bytes that are not zero");
        SignatureRecord& s = block.signatures.emplace_back();
        std::copy_n(u8(r) + sb::record_key_id, s.key_id.size(), s.key_id.begin());
        std::copy_n(u8(r) + sb::record_signature, s.signature.size(), s.signature.begin());
        for (uint32_t j = 0; j < i; ++j)
            if (block.signatures[j].key_id == s.key_id) return fail("holds two signatures by key " + key_id_text(s.key_id));
    }
    return block;
}

}  // namespace sdm::archive
