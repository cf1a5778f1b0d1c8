#include "signature_check.hpp"

#include <algorithm>

#include "archive.hpp"

namespace sdm::archive {

Result<crypto::Digest> signed_digest(const Archive& a) {
    if (!crypto::available()) return crypto::unsupported("checking the signatures of archive " + a.label());
    const auto& block = a.signature_block();
    if (!block) return make_error(ErrorCode::invalid_argument, "archive " + a.label() + " is not signed");
    return signed_digest_of(a.bytes(), a.header().header_size, block->offset, block->digests);
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
    case Outcome::verified: return "is signed by trusted key " + list(verified);
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
        // A key named by two records: both must verify (a spoiled copy beside a good one is a change too).
        for (auto r = s; r != block->signatures.end(); r = std::find_if(r + 1, block->signatures.end(), [&](const SignatureRecord& x) { return x.key_id == *id; })) {
            const bool holds = intact && crypto::verify(key, std::as_bytes(std::span(*digest)), r->signature);
            auto& into = holds ? check.verified : check.bad;
            if (std::find(into.begin(), into.end(), *id) == into.end()) into.push_back(*id);
        }
    }
    check.outcome = !check.bad.empty()       ? SignatureCheck::Outcome::bad_signature
                    : check.verified.empty() ? SignatureCheck::Outcome::unknown_key
                                             : SignatureCheck::Outcome::verified;
    return check;
}

std::vector<std::string> signer_ids(const Archive& a) {
    std::vector<std::string> ids;
    if (a.signature_block())
        for (const auto& s : a.signature_block()->signatures) ids.push_back(key_id_text(s.key_id));
    return ids;
}

}  // namespace sdm::archive
