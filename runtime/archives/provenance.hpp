// The runtime's signature policy (docs/SIGNING.md): which archives may mount, by whose signature.
// Resolved once per runtime from the host's choice, else the environment ($SDM_REQUIRE_SIGNED,
// $SDM_TRUSTED_KEYS); a host that chose cannot be weakened by the environment. Under `require` an
// archive without a valid signature by a trusted key is refused (ErrorCode::untrusted); under
// `warn` it mounts and the log says why once per archive. An archive whose signature holds has
// every payload checked against its signed digest at first use (Archive::enforce_digests).
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "archive/archive.hpp"
#include "common/crypto.hpp"
#include "runtime/platform/log.hpp"
#include "version_floor.hpp"
#include "common/result.hpp"
#include "archive/key_files.hpp"
#include "archive/signature_block.hpp"
#include "archive/signature_check.hpp"

namespace sdm::runtime {

enum class SignaturePolicy : uint8_t { off, warn, require };
const char* policy_name(SignaturePolicy policy) noexcept;

// The most keys a runtime trusts, from the host (sdm_runtime_params.trusted_keys) or
// SDM_TRUSTED_KEYS: each is tried against every signature of every archive mounted.
inline constexpr size_t kMaxTrustedKeys = 256;

struct SignatureOptions {
    std::optional<SignaturePolicy> policy;                  // unset: $SDM_REQUIRE_SIGNED (1: require, warn: warn), else off
    std::optional<std::vector<crypto::PublicKey>> trusted;  // unset: the key files of $SDM_TRUSTED_KEYS
    VersionFloorOptions versions;                           // the rollback marks' directory, the host's minimum version
};

class Provenance {
public:
    // `embedded_key`: the public key libsdm's build signed its embedded archive with (the text of
    // a .pub file), trusted for that archive alone.
    Provenance(const SignatureOptions& options, std::optional<std::string_view> embedded_key, const Logger& log);

    SignaturePolicy policy() const noexcept { return policy_; }
    const std::vector<crypto::PublicKey>& trusted() const noexcept { return trusted_; }
    const std::vector<archive::KeyId>& trusted_ids() const noexcept { return trusted_ids_; }
    // Whether the cache must authenticate its entries (policy require).
    bool authenticate_cache() const noexcept { return policy_ == SignaturePolicy::require; }
    VersionFloor& versions() noexcept { return floor_; }

    // Admits `archive` under the policy (and turns on its digest checks when its signature holds),
    // or refuses it naming the archive, the key ids it carries and the ones trusted. Then the
    // rollback check (version_floor.hpp): the host's minimum for every archive but the embedded
    // one; under require, its release line's mark, else its signers' (raised by record(), once the
    // mount is sure). Returns the trusted keys whose signatures hold, for record() (empty: no
    // marks to raise).
    Result<std::vector<archive::KeyId>> admit(archive::Archive& archive, bool embedded);
    // After every other check passed: raises the marks of the archive's line and of `signers` to
    // its version (checked again under the state file's lock: another process may have raised them).
    Result<void> record(const archive::Archive& archive, const std::vector<archive::KeyId>& signers);

private:
    const Logger& log_;
    SignaturePolicy policy_{SignaturePolicy::off};
    std::vector<crypto::PublicKey> trusted_;
    std::vector<archive::KeyId> trusted_ids_;
    std::optional<crypto::PublicKey> embedded_key_;
    VersionFloor floor_;
    std::mutex mutex_;
    std::set<std::string> warned_;  // archives the warn policy logged, each once
};

}  // namespace sdm::runtime
