// Checking a signed archive's signatures against trusted keys (docs/SIGNING.md): the digest they
// sign computed again from the archive's bytes (signature_block.hpp), and what each trusted key says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.hpp"
#include "common/result.hpp"
#include "signature_block.hpp"

namespace sdm::archive {

class Archive;

// The digest the signatures of `archive` sign, computed from its bytes (the block's digest table
// included, the payloads not).
Result<crypto::Digest> signed_digest(const Archive& archive);

// What the signatures of an archive say about it against `trusted` keys.
struct SignatureCheck {
    enum class Outcome { unsigned_archive, unknown_key, bad_signature, verified };
    Outcome outcome{Outcome::unsigned_archive};
    std::vector<KeyId> signers;             // every key id the block names, in order
    std::vector<KeyId> verified;            // every trusted key whose signature holds (outcome verified: at least one)
    std::vector<KeyId> bad;                 // trusted keys whose signature does not hold (any: outcome bad_signature)
    // "is not signed", "is signed by 1a2b.., which this host does not trust (it trusts 3c4d..)".
    std::string why(const std::vector<KeyId>& trusted) const;
};
// Every record of a trusted key is checked: one that does not verify makes the archive
// bad_signature even when another trusted key's holds (the records lie outside the signed digest,
// so anyone can spoil one; an archive that carries a spoiled one was changed and is not admitted).
Result<SignatureCheck> check_signatures(const Archive& archive, std::span<const crypto::PublicKey> trusted);
// The key ids an archive's block names, as text (empty: not signed), for listings; unchecked.
std::vector<std::string> signer_ids(const Archive& archive);

}  // namespace sdm::archive
