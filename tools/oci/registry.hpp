// A client of one repository of an OCI distribution registry (the distribution spec, v1.1): the
// manifest and blob requests sdm push and sdm pull make, each answer checked before it is used.
// Authentication: anonymous first; on 401, the challenge's Bearer token flow (realm, service,
// scope; the Docker config's credentials sent to the realm when it has some) or Basic with them.
// Every error names the registry and repository and, where there is one, the fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/result.hpp"
#include "credentials.hpp"
#include "http.hpp"
#include "reference.hpp"

namespace sdm::tools::oci {

// The OCI recommendation: a registry need not accept a manifest over 4 MiB, and a client need not read one.
inline constexpr uint64_t kMaxManifestBytes = 4 << 20;

struct RegistryOptions {
    bool plain_http{false};     // --plain-http
    std::string docker_config;  // empty: $DOCKER_CONFIG/config.json, else ~/.docker/config.json
    long stall_timeout_s{30};   // an answer that sends nothing for this long is cut
};

struct FetchedManifest {
    ByteVector bytes;
    std::string media_type;  // the answer's Content-Type
    std::string digest;      // sha256 of `bytes`, computed here
};

class Registry {
public:
    // The registry and repository of `reference`; reads the credentials, sends nothing yet.
    static Result<Registry> open(const Reference& reference, const RegistryOptions& options);

    // The manifest named by `key` (a tag or a digest), at most kMaxManifestBytes; asked by
    // digest, its bytes must hash to it.
    Result<FetchedManifest> manifest(const std::string& key, const std::string& accept);
    // Stores `bytes` under `media_type` as the manifest `key` (a tag or its digest).
    struct Stored {
        std::string digest;             // sha256 of the bytes
        bool subject_indexed{false};    // the registry answered OCI-Subject: it indexes referrers itself
    };
    Result<Stored> put_manifest(const std::string& key, Bytes bytes, const std::string& media_type);
    // Whether the repository holds the blob `digest` (HEAD).
    Result<bool> has_blob(const std::string& digest);
    // Uploads `bytes` as the blob `digest` (POST, then one PUT: a monolithic upload).
    Result<void> put_blob(Bytes bytes, const std::string& digest);
    // Streams the blob `digest`, which must be `size` bytes, into `sink`: cut at `size`, hashed as
    // it arrives, refused unless its digest and size match.
    Result<void> get_blob(const std::string& digest, uint64_t size, BodySink& sink);
    const std::string& name() const noexcept { return name_; }  // registry/repository, for messages

private:
    Registry(Reference reference, RegistryOptions options, CredentialLookup credentials);
    std::string url(const std::string& path) const;
    TransportOptions transport() const noexcept { return {options_.plain_http, 30, options_.stall_timeout_s}; }
    // Sends `request` with the authorization held; on 401 authenticates once and sends it again.
    Result<Response> send(Request request);
    Result<void> authenticate(const Response& challenge);
    Error status_error(const std::string& what, const Response& response) const;

    Reference reference_;
    RegistryOptions options_;
    CredentialLookup credentials_;
    std::string name_;
    std::string authorization_;  // the Authorization header's value once authenticated
};

}  // namespace sdm::tools::oci
