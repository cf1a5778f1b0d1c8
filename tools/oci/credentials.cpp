#include "credentials.hpp"

#include <nlohmann/json.hpp>
#include <sodium.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace sdm::tools::oci {
namespace {

constexpr off_t kMaxConfig = 1 << 20;  // a config file of a few logins is a few KiB

std::string default_config_path() {
    if (const char* dir = std::getenv("DOCKER_CONFIG"); dir != nullptr && *dir != '\0') return std::string(dir) + "/config.json";
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return std::string(home) + "/.docker/config.json";
    return {};
}

// "https://host:5000/v1/" and "host:5000" name the same registry.
std::string registry_of_key(std::string key) {
    if (const size_t scheme = key.find("://"); scheme != std::string::npos) key = key.substr(scheme + 3);
    return key.substr(0, key.find('/'));
}

std::optional<std::string> base64_decode(const std::string& text) {
    std::string out(text.size(), '\0');
    size_t length = 0;
    if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(), nullptr, &length, nullptr,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return std::nullopt;
    out.resize(length);
    return out;
}

Result<std::optional<Credentials>> entry_credentials(const nlohmann::json& entry, const std::string& path, const std::string& key) {
    if (!entry.is_object()) return std::optional<Credentials>();
    if (entry.contains("auth") && entry["auth"].is_string() && !entry["auth"].get<std::string>().empty()) {
        const auto decoded = base64_decode(entry["auth"].get<std::string>());
        const size_t colon = decoded ? decoded->find(':') : std::string::npos;
        if (colon == std::string::npos)
            return make_error(ErrorCode::invalid_argument, path + ": auths[\"" + key + "\"].auth is not base64 of USER:PASSWORD (docker login writes it)");
        return std::optional<Credentials>(Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)});
    }
    if (entry.contains("username") && entry["username"].is_string() && entry.contains("password") && entry["password"].is_string())
        return std::optional<Credentials>(Credentials{entry["username"].get<std::string>(), entry["password"].get<std::string>()});
    return std::optional<Credentials>();
}

}  // namespace

std::string Credentials::basic_header() const {
    const std::string pair = username + ":" + password;
    std::string out(sodium_base64_ENCODED_LEN(pair.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(pair.data()), pair.size(), sodium_base64_VARIANT_ORIGINAL);
    out.resize(out.find('\0'));
    return "Basic " + out;
}

Result<CredentialLookup> find_credentials(const std::string& registry, const std::string& config_path) {
    CredentialLookup found;
    const std::string path = config_path.empty() ? default_config_path() : config_path;
    struct stat st{};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) {
        if (!config_path.empty()) return make_error(ErrorCode::io, "registry config " + path + " does not exist");
        return found;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > kMaxConfig)
        return make_error(ErrorCode::invalid_argument, "registry config " + path + " is not a regular file of at most 1 MiB");
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto config = nlohmann::json::parse(text.str(), nullptr, false);
    if (config.is_discarded() || !config.is_object())
        return make_error(ErrorCode::invalid_argument, "registry config " + path + " is not a JSON object (docker login writes it)");
    found.config_path = path;
    found.helper_named = config.contains("credsStore") || (config.contains("credHelpers") && config["credHelpers"].contains(registry));
    if (!config.contains("auths") || !config["auths"].is_object()) return found;
    for (const auto& [key, entry] : config["auths"].items()) {
        if (registry_of_key(key) != registry) continue;
        SDM_TRY_GET(credentials, entry_credentials(entry, path, key));
        if (*credentials) {
            found.credentials = **credentials;
            break;
        }
    }
    return found;
}

}  // namespace sdm::tools::oci
