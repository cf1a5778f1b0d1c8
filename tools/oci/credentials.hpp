// Credentials from the Docker config file, as `docker login`, `oras login` and podman write it:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json, its "auths" keyed by registry, each
// with "auth" (base64 of user:password) or "username" and "password". Credential helpers
// ("credsStore", "credHelpers") are not run: sdm runs no program a config file names.
#pragma once

#include <optional>
#include <string>

#include "common/result.hpp"

namespace sdm::tools::oci {

struct Credentials {
    std::string username;
    std::string password;
    // "Basic <base64 of user:password>", the Authorization header's value.
    std::string basic_header() const;
};

struct CredentialLookup {
    std::optional<Credentials> credentials;  // none: anonymous
    std::string config_path;                 // the file read (empty: none exists)
    bool helper_named{false};                // the file names a credential helper sdm does not run
};

// The credentials `config_path` (empty: the default file) holds for `registry` (host[:port]). A
// missing file is anonymous; a file that does not parse is an error naming it.
Result<CredentialLookup> find_credentials(const std::string& registry, const std::string& config_path);

}  // namespace sdm::tools::oci
