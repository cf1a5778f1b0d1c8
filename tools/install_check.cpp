#include "install_check.hpp"

#include <fmt/format.h>

#include "archive/key_files.hpp"
#include "archive/verify.hpp"

namespace sdm::tools {

Result<InstallCheck> InstallCheck::create(const std::vector<std::string>& trusted_files, const std::string& who) {
    runtime::SignatureOptions options;
    if (!trusted_files.empty()) {
        std::vector<crypto::PublicKey> keys;
        for (const auto& file : trusted_files) {
            SDM_TRY_GET(key, archive::read_public_key(file));
            keys.push_back(*key);
        }
        options.policy = runtime::SignaturePolicy::require;
        options.trusted = std::move(keys);
    }
    auto log = std::make_unique<runtime::Logger>([who](runtime::LogLevel, std::string_view m) { fmt::print(stderr, "{}: {}\n", who, m); },
                                                 std::nullopt);
    auto provenance = std::make_unique<runtime::Provenance>(options, std::nullopt, *log);
    return InstallCheck(std::move(log), std::move(provenance));
}

Result<void> InstallCheck::check(archive::Archive& archive, const std::string& target) {
    const auto refused = [&](const Error& e) {
        return make_error(e.code, e.message + "; " + target + " was not replaced");
    };
    // The signature and the rollback check (docs/SIGNING.md, "Rollback": under require, an archive
    // older than its key's mark is refused); the mark is raised only once every check passed.
    auto admitted = provenance_->admit(archive, false);
    if (!admitted) return refused(admitted.error());
    if (auto verified = archive::verify_archive(archive); !verified) return refused(verified.error());
    if (auto recorded = provenance_->record(archive, *admitted); !recorded) return refused(recorded.error());
    return {};
}

}  // namespace sdm::tools
