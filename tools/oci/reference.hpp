// An OCI reference as the distribution spec and ORAS spell it: REGISTRY/REPOSITORY[:TAG][@sha256:HEX].
// Every part is checked against the spec's grammar before it reaches a URL; none ever becomes a path
// (a file name sdm derives is the repository's last component, which the grammar keeps to [a-z0-9._-]).
#pragma once

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace sdm::tools::oci {

struct Reference {
    std::string registry;    // host[:port], as the URL's authority and the Docker config's key
    std::string repository;  // path components: [a-z0-9]+ joined by ., _, __ or -+, split by /
    std::string tag;         // empty when only a digest is given
    std::string digest;      // sha256:<64 lower-case hex>, or empty

    // The manifest to ask for: the digest when there is one (it names the exact bytes), else the tag.
    const std::string& manifest_key() const noexcept { return digest.empty() ? tag : digest; }
    // As written back: registry/repository[:tag][@digest].
    std::string text() const;
    // The repository's last component, the default file name of `sdm pull --into`.
    std::string base_name() const;
};

// Parses and checks `text`; a reference without a tag or digest gets the tag "latest". Errors
// name the reference, the part that does not hold, and the grammar it must follow.
Result<Reference> parse_reference(std::string_view text);
// Whether `digest` is sha256:<64 lower-case hex> (the only algorithm sdm accepts from a registry).
bool is_sha256_digest(std::string_view digest) noexcept;

}  // namespace sdm::tools::oci
