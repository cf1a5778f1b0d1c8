#include "reference.hpp"

#include <cctype>

namespace sdm::tools::oci {
namespace {

// The distribution spec bounds a repository name (with the registry) at 255 characters and a tag
// at 128.
constexpr size_t kMaxRepository = 255;
constexpr size_t kMaxTag = 128;
constexpr size_t kMaxRegistry = 255;

bool lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
bool valid_component(std::string_view c) noexcept {
    if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
    for (size_t i = 0; i < c.size();) {
        if (lower_alnum(c[i])) {
            ++i;
            continue;
        }
        size_t run = i;
        while (run < c.size() && !lower_alnum(c[run])) ++run;
        const std::string_view sep = c.substr(i, run - i);
        const bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
        if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
        i = run;
    }
    return true;
}

bool valid_repository(std::string_view r) noexcept {
    if (r.empty() || r.size() > kMaxRepository) return false;
    for (size_t start = 0;;) {
        const size_t slash = r.find('/', start);
        if (!valid_component(r.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start))) return false;
        if (slash == std::string_view::npos) return true;
        start = slash + 1;
    }
}

// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool valid_tag(std::string_view t) noexcept {
    if (t.empty() || t.size() > kMaxTag) return false;
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    if (!word(t.front())) return false;
    for (const char c : t)
        if (!word(c) && c != '.' && c != '-') return false;
    return true;
}

// host[:port]: DNS labels of letters, digits and '-' joined by '.', or "localhost"; a port of 1-5 digits.
bool valid_registry(std::string_view r) noexcept {
    if (r.empty() || r.size() > kMaxRegistry) return false;
    const size_t colon = r.find(':');
    const std::string_view host = r.substr(0, colon);
    if (colon != std::string_view::npos) {
        const std::string_view port = r.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
    }
    if (host.empty() || host.front() == '.' || host.back() == '.' || host.front() == '-') return false;
    for (const char c : host)
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '-') return false;
    return host.find("..") == std::string_view::npos;
}

Error reference_error(std::string_view text, const std::string& why) {
    return make_error(ErrorCode::invalid_argument,
                 "reference '" + std::string(text) + "': " + why + " (write REGISTRY[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST], e.g. "
                 "registry.example.com:5000/kernels/sdm:1.2)");
}

}  // namespace

bool is_sha256_digest(std::string_view d) noexcept {
    constexpr std::string_view prefix = "sha256:";
    if (d.size() != prefix.size() + 64 || d.substr(0, prefix.size()) != prefix) return false;
    return d.substr(prefix.size()).find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string Reference::text() const {
    return registry + "/" + repository + (tag.empty() ? "" : ":" + tag) + (digest.empty() ? "" : "@" + digest);
}

std::string Reference::base_name() const {
    const size_t slash = repository.rfind('/');
    return slash == std::string::npos ? repository : repository.substr(slash + 1);
}

Result<Reference> parse_reference(std::string_view text) {
    for (const char c : text)
        if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
            return reference_error(text, "holds a space, a control character or a non-ASCII byte");
    Reference r;
    std::string_view rest = text;
    if (const size_t at = rest.find('@'); at != std::string_view::npos) {
        r.digest = std::string(rest.substr(at + 1));
        if (!is_sha256_digest(r.digest)) return reference_error(text, "the digest '" + r.digest + "' is not sha256: and 64 lower-case hex digits");
        rest = rest.substr(0, at);
    }
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return reference_error(text, "names no registry (sdm never guesses one)");
    r.registry = std::string(rest.substr(0, slash));
    if (!valid_registry(r.registry)) return reference_error(text, "the registry '" + r.registry + "' is not a host name with an optional port");
    rest = rest.substr(slash + 1);
    const size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) {
        r.tag = std::string(rest.substr(colon + 1));
        if (!valid_tag(r.tag)) return reference_error(text, "the tag '" + r.tag + "' is not [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
        rest = rest.substr(0, colon);
    }
    r.repository = std::string(rest);
    if (!valid_repository(r.repository))
        return reference_error(text, "the repository '" + r.repository + "' is not lower-case [a-z0-9] components joined by '.', '_', '__' or '-' "
                                     "and split by '/' (the distribution spec's grammar; never '..' or an empty component)");
    if (r.tag.empty() && r.digest.empty()) r.tag = "latest";
    return r;
}

}  // namespace sdm::tools::oci
