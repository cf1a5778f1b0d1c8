// What an archive must pass before `sdm pull` installs it (docs/REGISTRY.md, "Pull"): every
// checksum and parse, as `sdm verify` checks them, and a signature under the host's policy, the
// runtime's own (runtime/archives/provenance.hpp: $SDM_REQUIRE_SIGNED and $SDM_TRUSTED_KEYS, or --trust
// keys, which require a signature by one of them). It runs on the bytes staged beside the target,
// after their size and digest held and before the rename: a refusal leaves the old file serving.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "archive/archive.hpp"
#include "common/result.hpp"
#include "runtime/platform/log.hpp"
#include "runtime/archives/provenance.hpp"

namespace sdm::tools {

class InstallCheck {
public:
    // `trusted_files`: public key files (.pub); given, a valid signature by one of them is required;
    // empty: the environment's policy, as a host's runtime reads it. `who` prefixes log lines.
    static Result<InstallCheck> create(const std::vector<std::string>& trusted_files, const std::string& who);

    // Admits `archive` (staged, not yet installed) or says why it may not replace `target`.
    Result<void> check(archive::Archive& archive, const std::string& target);
    // Whether an archive must carry a valid signature by a trusted key (--trust, or the
    // environment's require), and those keys' ids.
    bool requires_signature() const noexcept { return provenance_->policy() == runtime::SignaturePolicy::require; }
    const std::vector<archive::KeyId>& trusted_ids() const noexcept { return provenance_->trusted_ids(); }

private:
    InstallCheck(std::unique_ptr<runtime::Logger> log, std::unique_ptr<runtime::Provenance> provenance)
        : log_(std::move(log)), provenance_(std::move(provenance)) {}
    std::unique_ptr<runtime::Logger> log_;
    std::unique_ptr<runtime::Provenance> provenance_;
};

}  // namespace sdm::tools
