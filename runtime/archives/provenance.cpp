#include "provenance.hpp"

#include "runtime/platform/settings.hpp"

namespace sdm::runtime {
namespace {

std::optional<SignaturePolicy> policy_from_environment(const Logger& log) {
    // (Anything else reads as 1, the strictest, with a warning: a typo must not turn the check off.)
    const auto value = settings::value_or(settings::choice(settings::Id::require_signed, log), "");
    if (value.empty() || value == "0") return std::nullopt;
    return value == "warn" ? SignaturePolicy::warn : SignaturePolicy::require;
}

std::vector<crypto::PublicKey> keys_from_environment(const Logger& log) {
    std::vector<crypto::PublicKey> keys;
    for (const auto& file : settings::paths(settings::Id::trusted_keys)) {
        if (keys.size() == kMaxTrustedKeys) {
            log.warn("SDM_TRUSTED_KEYS names more than " + std::to_string(kMaxTrustedKeys) + " keys; the rest are not trusted");
            break;
        }
        auto key = archive::read_public_key(file);
        if (key) keys.push_back(*key);
        else log.warn("skipped trusted key " + file + " of SDM_TRUSTED_KEYS (archives it signed are not trusted): " + key.error().message);
    }
    return keys;
}

}  // namespace

const char* policy_name(SignaturePolicy policy) noexcept {
    switch (policy) {
    case SignaturePolicy::off: return "off";
    case SignaturePolicy::warn: return "warn";
    case SignaturePolicy::require: return "require";
    }
    return "?";
}

Provenance::Provenance(const SignatureOptions& options, std::optional<std::string_view> embedded_key, const Logger& log)
    : log_(log), floor_(options.versions) {
    const auto from_env = policy_from_environment(log);
    if (options.policy) {
        policy_ = *options.policy;
        if (from_env && *from_env != policy_)
            log.info(std::string("SDM_REQUIRE_SIGNED is ignored: the host set the signature policy (") + policy_name(policy_) + ")");
    } else {
        policy_ = from_env.value_or(SignaturePolicy::off);
    }
    if (options.trusted) {
        trusted_ = *options.trusted;
        if (!settings::paths(settings::Id::trusted_keys).empty()) log.info("SDM_TRUSTED_KEYS is ignored: the host gave the trusted keys");
    } else if (policy_ != SignaturePolicy::off) {
        trusted_ = keys_from_environment(log);
    }
    if (policy_ == SignaturePolicy::off || !crypto::available()) return;
    for (const auto& key : trusted_)
        if (auto id = archive::key_id(key)) trusted_ids_.push_back(*id);
    if (embedded_key) {
        if (auto key = archive::parse_public_key(*embedded_key, "the embedded archive's key")) embedded_key_ = *key;
        else log.error(key.error().message);
    }
}

Result<void> Provenance::record(const archive::Archive& a, const std::vector<archive::KeyId>& signers) {
    if (signers.empty()) return {};
    return floor_.admit(a, signers, true);
}

Result<std::vector<archive::KeyId>> Provenance::admit(archive::Archive& a, bool embedded) {
    using Admitted = std::vector<archive::KeyId>;
    if (!embedded) SDM_TRY(floor_.check_minimum(a));
    if (policy_ == SignaturePolicy::off) return Admitted{};
    if (!crypto::available())
        return crypto::unsupported(std::string("mounting archive ") + a.label() + " under signature policy " + policy_name(policy_));
    std::vector<crypto::PublicKey> keys = trusted_;
    std::vector<archive::KeyId> ids = trusted_ids_;
    if (embedded && embedded_key_) {
        keys.push_back(*embedded_key_);
        if (auto id = archive::key_id(*embedded_key_)) ids.push_back(*id);
    }
    SDM_TRY_GET(check, archive::check_signatures(a, keys));
    if (check->outcome == archive::SignatureCheck::Outcome::verified) {
        SDM_TRY(a.enforce_digests());
        log_.debug("archive " + a.label() + " " + check->why(ids));
        if (policy_ != SignaturePolicy::require || embedded) return Admitted{};
        SDM_TRY(floor_.admit(a, check->verified, false));
        return check->verified;
    }
    const std::string why = "archive " + a.label() + " " + check->why(ids);
    if (policy_ == SignaturePolicy::require)
        return make_error(ErrorCode::untrusted, why + "; it is not mounted (the signature policy requires a valid signature by a trusted key)");
    std::lock_guard lock(mutex_);
    if (warned_.insert(a.label()).second) log_.warn(why + "; it is mounted anyway (signature policy warn)");
    return Admitted{};
}

}  // namespace sdm::runtime
