#include "signing.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "archive.hpp"
#include "format.hpp"
#include "signature_block.hpp"
#include "signature_check.hpp"

namespace sdm::archive {
namespace sb = signature_block;
namespace {

// BLAKE2b-256 of every entry's stored bytes, in index order.
Result<ByteVector> payload_digests(const Archive& a) {
    ByteVector table(a.entries().size() * sb::digest_size);
    for (size_t i = 0; i < a.entries().size(); ++i) {
        const Entry& e = a.entries()[i];
        SDM_TRY_GET(d, crypto::blake2b(a.bytes().subspan(e.data_offset, e.stored_size)));
        std::memcpy(table.data() + i * sb::digest_size, d->data(), d->size());
    }
    return table;
}

}  // namespace

Result<ByteVector> sign_archive(Bytes bytes, const std::string& label, const crypto::SecretKey& key) {
    if (!crypto::available()) return crypto::unsupported("signing archive " + label);
    if (!crypto::consistent(key)) return make_error(ErrorCode::invalid_argument, "the secret key is damaged (its two halves disagree); generate one with sdm keygen");
    SDM_TRY_GET(a, Archive::open_memory(bytes, label));
    SDM_TRY(a->verify());  // never sign damaged bytes
    SDM_TRY_GET(table, payload_digests(*a));
    const crypto::PublicKey pub = crypto::public_half(key);
    SDM_TRY_GET(id, key_id(pub));
    std::vector<SignatureRecord> kept;
    uint64_t offset = (bytes.size() + 7) / 8 * 8;
    if (const auto& block = a->signature_block()) {
        offset = block->offset;
        SDM_TRY_GET(digest, signed_digest(*a));
        if (!std::equal(table->begin(), table->end(), block->digests.begin()) || *digest != block->archive_digest)
            return make_error(ErrorCode::archive_corrupt, "archive " + label + ": its signature block does not match its contents (changed after it was signed); "
                                                          "repack it and sign it again");
        for (const auto& s : block->signatures)
            if (s.key_id != *id) kept.push_back(s);
        if (kept.size() >= sb::max_signatures)
            return make_error(ErrorCode::invalid_argument, "archive " + label + " already holds " + std::to_string(kept.size()) + " signatures, the most a block holds");
    }
    const uint64_t count = kept.size() + 1;
    const uint64_t block_size = signature_block_size(a->entries().size(), count);
    ByteVector out;
    try {
        out.assign(offset + block_size, std::byte{0});
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(offset + block_size) + " bytes to sign " + label);
    }
    std::copy_n(bytes.begin(), std::min<uint64_t>(bytes.size(), offset), out.begin());
    const std::span<std::byte> o(out);
    store_u64(o, header::optional_features, load_u64(bytes, header::optional_features) | kFeatureSigned);
    store_u64(o, header::archive_size, out.size());
    const std::span<std::byte> blk = o.subspan(offset, block_size);
    std::copy(kSignatureMagic.begin(), kSignatureMagic.end(), reinterpret_cast<uint8_t*>(blk.data()));
    store_u16(blk, sb::version, sb::kVersion);
    store_u16(blk, sb::digest_algorithm, sb::kBlake2b256);
    store_u32(blk, sb::entry_count, static_cast<uint32_t>(a->entries().size()));
    store_u32(blk, sb::signature_count, static_cast<uint32_t>(count));
    store_u64(blk, sb::signed_size, offset);
    std::copy(table->begin(), table->end(), blk.begin() + sb::header_size);
    const uint32_t header_size = a->header().header_size;
    const crypto::Digest digest = signed_digest_of(out, header_size, offset, Bytes(*table));
    std::memcpy(blk.data() + sb::archive_digest, digest.data(), digest.size());
    SDM_TRY_GET(signature, crypto::sign(key, std::as_bytes(std::span(digest))));
    kept.push_back({*id, *signature});
    const size_t records = sb::header_size + table->size();
    for (size_t i = 0; i < kept.size(); ++i) {
        const std::span<std::byte> r = blk.subspan(records + i * sb::record_size, sb::record_size);
        store_u8(r, 0, sb::kEd25519);
        std::memcpy(r.data() + sb::record_key_id, kept[i].key_id.data(), kept[i].key_id.size());
        std::memcpy(r.data() + sb::record_signature, kept[i].signature.data(), kept[i].signature.size());
    }
    const std::span<std::byte> footer = blk.subspan(block_size - sb::footer_size);
    store_u64(footer, 0, block_size);
    std::copy(kSignatureMagic.begin(), kSignatureMagic.end(), reinterpret_cast<uint8_t*>(footer.data()) + 8);
    store_u64(o, header::header_hash, header_hash_of(out, header_size));
    return out;
}

}  // namespace sdm::archive
