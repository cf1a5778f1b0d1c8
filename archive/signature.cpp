#include "signature.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "archive.hpp"
#include "file_map.hpp"
#include "format.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace sb = signature_block;
namespace {

constexpr std::string_view kDigestDomain{"sdm archive signature 1\0", 24};
constexpr std::string_view kKeyIdDomain{"sdm key id 1"};
constexpr std::string_view kPublicPrefix{"sdm-ed25519-public "};
constexpr std::string_view kSecretPrefix{"sdm-ed25519-secret "};
constexpr uint64_t kMaxKeyFile = 4096;

const uint8_t* u8(Bytes b) { return reinterpret_cast<const uint8_t*>(b.data()); }

uint64_t block_size_for(uint64_t entries, uint64_t signatures) {
    return sb::header_size + entries * sb::digest_size + signatures * sb::record_size + sb::footer_size;
}

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

// The digest over header (archive_size and header_hash as zero), index and strings, the block's
// offset and the digest table.
crypto::Digest digest_of(Bytes archive, uint32_t header_size, uint64_t meta_end, uint64_t offset, Bytes digests) {
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

uint64_t meta_end_of(Bytes archive) { return load_u64(archive, header::strings_offset) + load_u64(archive, header::strings_size); }

Result<std::string> key_file_text(const std::string& path, const char* what) {
    FileMapOptions options;
    options.private_copy = true;
    options.max_size = kMaxKeyFile;
    auto map = FileMap::open(path, options);
    if (!map) return make_error(map.error().code, std::string(what) + " " + map.error().message);
    std::string text(as_text((*map)->bytes()));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

std::string mode_text(uint32_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

}  // namespace

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
    if (block.size != block_size_for(entry_count, count))
        return fail("is " + std::to_string(block.size) + " bytes, but " + std::to_string(entry_count) + " digests and " + std::to_string(count) +
                    " signatures make " + std::to_string(block_size_for(entry_count, count)));
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

Result<crypto::Digest> signed_digest(const Archive& a) {
    if (!crypto::available()) return crypto::unsupported("checking the signatures of archive " + a.label());
    const auto& block = a.signature_block();
    if (!block) return make_error(ErrorCode::invalid_argument, "archive " + a.label() + " is not signed");
    return digest_of(a.bytes(), a.header().header_size, meta_end_of(a.bytes()), block->offset, block->digests);
}

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
    const uint64_t block_size = block_size_for(a->entries().size(), count);
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
    const crypto::Digest digest = digest_of(out, header_size, meta_end_of(out), offset, Bytes(*table));
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

std::string SignatureCheck::why(const std::vector<KeyId>& trusted) const {
    const auto list = [](const std::vector<KeyId>& ids) {
        std::string s;
        for (const auto& id : ids) s += (s.empty() ? "" : ", ") + key_id_text(id);
        return s;
    };
    const std::string trusts = trusted.empty() ? "it trusts no key: give sdm_runtime_params.trusted_keys or SDM_TRUSTED_KEYS"
                                               : "it trusts " + list(trusted);
    switch (outcome) {
    case Outcome::unsigned_archive: return "is not signed (" + trusts + "); sign it with `sdm sign ARCHIVE --key SECRET`";
    case Outcome::unknown_key: return "is signed by " + list(signers) + ", which this host does not trust (" + trusts + ")";
    case Outcome::bad_signature:
        return "carries a signature by trusted key " + list(bad) + " that does not verify: the archive was changed after it was signed";
    case Outcome::verified: return "is signed by trusted key " + key_id_text(*verified_by);
    }
    return {};
}

Result<SignatureCheck> check_signatures(const Archive& a, std::span<const crypto::PublicKey> trusted) {
    SignatureCheck check;
    const auto& block = a.signature_block();
    if (!block) return check;
    for (const auto& s : block->signatures) check.signers.push_back(s.key_id);
    SDM_TRY_GET(digest, signed_digest(a));
    // The block's copy of the digest is what the signer computed: any difference means the
    // archive changed after signing, whatever the signatures say.
    const bool intact = crypto::equal(*digest, block->archive_digest);
    for (const auto& key : trusted) {
        SDM_TRY_GET(id, key_id(key));
        const auto s = std::find_if(block->signatures.begin(), block->signatures.end(), [&](const SignatureRecord& r) { return r.key_id == *id; });
        if (s == block->signatures.end()) continue;
        if (intact && crypto::verify(key, std::as_bytes(std::span(*digest)), s->signature)) {
            check.outcome = SignatureCheck::Outcome::verified;
            check.verified_by = *id;
            return check;
        }
        check.bad.push_back(*id);
    }
    check.outcome = check.bad.empty() ? SignatureCheck::Outcome::unknown_key : SignatureCheck::Outcome::bad_signature;
    return check;
}

std::vector<std::string> signer_ids(const Archive& a) {
    std::vector<std::string> ids;
    if (a.signature_block())
        for (const auto& s : a.signature_block()->signatures) ids.push_back(key_id_text(s.key_id));
    return ids;
}

Result<crypto::PublicKey> parse_public_key(std::string_view text, const std::string& what) {
    if (text.substr(0, kSecretPrefix.size()) == kSecretPrefix)
        return make_error(ErrorCode::invalid_argument, what + " is a secret key; trust its public half (the .pub file sdm keygen wrote beside it)");
    const auto hex = text.substr(0, kPublicPrefix.size()) == kPublicPrefix ? parse_hex(text.substr(kPublicPrefix.size()), 32) : std::nullopt;
    if (!hex)
        return make_error(ErrorCode::invalid_argument, what + " is not an sdm public key (one line: 'sdm-ed25519-public' and 64 hex digits, as sdm keygen writes)");
    crypto::PublicKey key{};
    std::copy(hex->begin(), hex->end(), key.begin());
    return key;
}

Result<crypto::PublicKey> read_public_key(const std::string& path) {
    SDM_TRY_GET(text, key_file_text(path, "public key"));
    return parse_public_key(*text, "public key " + path);
}

Result<crypto::SecretKey> read_secret_key(const std::string& path) {
    FileMapOptions options;
    options.private_copy = true;
    options.max_size = kMaxKeyFile;
    auto map = FileMap::open(path, options);
    if (!map) return make_error(map.error().code, "secret key " + map.error().message);
    if (((*map)->mode() & 077) != 0)
        return make_error(ErrorCode::invalid_argument, "secret key " + path + " may be read by others (mode " + mode_text((*map)->mode()) +
                                                           "); chmod 600 it, and consider it leaked");
    std::string text(as_text((*map)->bytes()));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    const auto bytes = text.substr(0, kSecretPrefix.size()) == kSecretPrefix ? parse_hex(std::string_view(text).substr(kSecretPrefix.size()), 64) : std::nullopt;
    if (!bytes) return make_error(ErrorCode::invalid_argument, "secret key " + path + " is not an sdm secret key (one line: 'sdm-ed25519-secret' and 128 hex digits, as sdm keygen writes)");
    crypto::SecretKey key{};
    std::copy(bytes->begin(), bytes->end(), key.begin());
    std::fill(text.begin(), text.end(), '\0');
    if (crypto::available() && !crypto::consistent(key))
        return make_error(ErrorCode::invalid_argument, "secret key " + path + " is damaged (its public half does not match its seed)");
    return key;
}

std::string public_key_text(const crypto::PublicKey& key) { return std::string(kPublicPrefix) + hex_text(key) + "\n"; }
std::string secret_key_text(const crypto::SecretKey& key) { return std::string(kSecretPrefix) + hex_text(key) + "\n"; }

}  // namespace sdm::archive
