#include "key_files.hpp"

#include <algorithm>
#include <cstdio>

#include "file_map.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace {

constexpr std::string_view kPublicPrefix{"sdm-ed25519-public "};
constexpr std::string_view kSecretPrefix{"sdm-ed25519-secret "};
constexpr uint64_t kMaxKeyFile = 4096;

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
