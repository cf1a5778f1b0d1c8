#include "registry.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <utility>

#include "sha256.hpp"

namespace sdm::tools::oci {
namespace {

constexpr uint64_t kMaxTokenAnswer = 64 << 10;

struct Challenge {
    std::string scheme;                         // "bearer" or "basic", lower case
    std::map<std::string, std::string> params;  // realm, service, scope
};

// `Bearer realm="https://auth.example/token",service="registry",scope="repository:a/b:pull"`.
Challenge parse_challenge(const std::string& header) {
    Challenge c;
    size_t i = header.find(' ');
    c.scheme = header.substr(0, i);
    for (auto& ch : c.scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    while (i != std::string::npos && i < header.size()) {
        while (i < header.size() && (header[i] == ' ' || header[i] == ',')) ++i;
        const size_t eq = header.find('=', i);
        if (eq == std::string::npos) break;
        const std::string key = header.substr(i, eq - i);
        std::string value;
        i = eq + 1;
        if (i < header.size() && header[i] == '"') {
            for (++i; i < header.size() && header[i] != '"'; ++i) {
                if (header[i] == '\\' && i + 1 < header.size()) ++i;
                value += header[i];
            }
            ++i;
        } else {
            const size_t end = header.find(',', i);
            value = header.substr(i, end == std::string::npos ? std::string::npos : end - i);
            i = end;
        }
        c.params[key] = value;
    }
    return c;
}

// A token goes into a header: printable ASCII only, so an answer cannot add headers of its own.
bool header_safe(const std::string& text) {
    if (text.empty() || text.size() > 16384) return false;
    for (const char ch : text)
        if (static_cast<unsigned char>(ch) < 0x21 || static_cast<unsigned char>(ch) > 0x7e) return false;
    return true;
}

// Feeds a blob's bytes to the caller's sink and to the digest, counting them.
class CheckingSink final : public BodySink {
public:
    explicit CheckingSink(BodySink& inner) : inner_(inner) {}
    Result<void> write(Bytes bytes) override {
        hash_.update(bytes);
        received_ += bytes.size();
        return inner_.write(bytes);
    }
    uint64_t received() const noexcept { return received_; }
    std::string digest() { return hash_.finish(); }

private:
    BodySink& inner_;
    Sha256 hash_;
    uint64_t received_{0};
};

}  // namespace

Registry::Registry(Reference reference, RegistryOptions options, CredentialLookup credentials)
    : reference_(std::move(reference)), options_(std::move(options)), credentials_(std::move(credentials)),
      name_(reference_.registry + "/" + reference_.repository) {}

Result<Registry> Registry::open(const Reference& reference, const RegistryOptions& options) {
    SDM_TRY_GET(credentials, find_credentials(reference.registry, options.docker_config));
    return Registry(reference, options, std::move(*credentials));
}

std::string Registry::url(const std::string& path) const {
    return std::string(options_.plain_http ? "http://" : "https://") + reference_.registry + "/v2/" + reference_.repository + path;
}

Error Registry::status_error(const std::string& what, const Response& r) const {
    std::string detail;
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_object() && body.contains("errors") && body["errors"].is_array() && !body["errors"].empty() && body["errors"][0].is_object()) {
        const auto& e = body["errors"][0];
        if (e.contains("code") && e["code"].is_string()) detail += e["code"].get<std::string>();
        if (e.contains("message") && e["message"].is_string()) detail += (detail.empty() ? "" : ": ") + e["message"].get<std::string>();
        if (detail.size() > 200) detail = detail.substr(0, 200) + "...";
        for (auto& ch : detail)
            if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e) ch = '?';
    }
    std::string fix;
    if (r.status == 401 || r.status == 403)
        fix = credentials_.credentials ? "; the credentials of " + credentials_.config_path + " are not accepted for this repository"
                                       : "; log in first (docker login or oras login writes the credentials sdm reads)" +
                                             std::string(credentials_.helper_named ? ": credential helpers are not run by sdm, so an \"auths\" entry is needed" : "");
    if (r.status == 404) fix = "; check the reference's repository, tag or digest";
    return make_error(r.status == 404 ? ErrorCode::not_found : ErrorCode::io,
                 "registry " + name_ + ": " + what + ": HTTP " + std::to_string(r.status) + (detail.empty() ? "" : " (" + detail + ")") + fix);
}

Result<void> Registry::authenticate(const Response& answer) {
    const Challenge c = parse_challenge(answer.header("www-authenticate"));
    if (c.scheme == "basic") {
        if (!credentials_.credentials) return status_error("asks for a user name and password", answer);
        authorization_ = credentials_.credentials->basic_header();
        return {};
    }
    if (c.scheme != "bearer" || !c.params.contains("realm"))
        return make_error(ErrorCode::io, "registry " + name_ + ": answered 401 without a Bearer or Basic challenge sdm can follow");
    const std::string& realm = c.params.at("realm");
    if (realm.rfind("https://", 0) != 0 && !(options_.plain_http && realm.rfind("http://", 0) == 0))
        return make_error(ErrorCode::io, "registry " + name_ + ": its token realm '" + realm.substr(0, 200) +
                                             "' is not an https URL (plain http only with --plain-http)");
    std::string query;
    for (const char* key : {"service", "scope"})
        if (c.params.contains(key)) query += std::string(query.empty() ? "?" : "&") + key + "=" + url_escape(c.params.at(key));
    Request token{"GET", realm + (realm.find('?') == std::string::npos ? query : (query.empty() ? "" : "&" + query.substr(1))), {}, {}, kMaxTokenAnswer, nullptr};
    if (credentials_.credentials) token.headers.push_back("Authorization: " + credentials_.credentials->basic_header());
    SDM_TRY_GET(r, oci::send(token, transport()));
    if (r->status != 200) return status_error("its token service " + realm.substr(0, 200) + " refused", *r);
    const auto json = nlohmann::json::parse(r->body, nullptr, false);
    std::string value;
    for (const char* key : {"token", "access_token"})
        if (value.empty() && json.is_object() && json.contains(key) && json[key].is_string()) value = json[key].get<std::string>();
    if (!header_safe(value)) return make_error(ErrorCode::io, "registry " + name_ + ": its token service answered no usable token");
    authorization_ = "Bearer " + value;
    return {};
}

Result<Response> Registry::send(Request request) {
    const size_t plain_headers = request.headers.size();
    for (int attempt = 0;; ++attempt) {
        request.headers.resize(plain_headers);
        if (!authorization_.empty()) request.headers.push_back("Authorization: " + authorization_);
        auto r = oci::send(request, transport());
        if (!r) return make_error(r.error().code, "registry " + name_ + ": " + r.error().message);
        if (r->status != 401 || attempt == 1) return r;
        // The credentials go to the registry's origin alone: a challenge from wherever a redirect
        // led (a blob's storage) is not the registry asking (docs/REGISTRY.md, "Authentication").
        const std::string registry_origin = origin(url("/")), answered_by = origin(r->url);
        if (answered_by != registry_origin)
            return make_error(ErrorCode::untrusted, "registry " + name_ + ": " + request.method + " " + request.url.substr(0, 200) +
                                                        " was redirected to " + (answered_by.empty() ? r->url.substr(0, 200) : answered_by) +
                                                        ", which answered 401 asking for credentials; sdm sends the registry's credentials to " +
                                                        registry_origin + " and the token realm it names, never to where a redirect led. "
                                                        "Ask the registry's operator why its storage wants them");
        SDM_TRY(authenticate(*r));
    }
}

Result<FetchedManifest> Registry::manifest(const std::string& key, const std::string& accept) {
    SDM_TRY_GET(r, send({"GET", url("/manifests/" + key), {"Accept: " + accept}, {}, kMaxManifestBytes, nullptr}));
    if (r->status != 200) return status_error("manifest " + key, *r);
    FetchedManifest m;
    m.bytes.resize(r->body.size());
    std::memcpy(m.bytes.data(), r->body.data(), r->body.size());
    m.media_type = r->header("content-type");
    m.digest = sha256_digest(m.bytes);
    if (is_sha256_digest(key) && m.digest != key)
        return make_error(ErrorCode::mismatch, "registry " + name_ + ": the manifest asked for as " + key + " hashes to " + m.digest +
                                                   ": the registry answered other bytes");
    return m;
}

Result<Registry::Stored> Registry::put_manifest(const std::string& key, Bytes bytes, const std::string& media_type) {
    SDM_TRY_GET(r, send({"PUT", url("/manifests/" + key), {"Content-Type: " + media_type}, bytes, kMaxManifestBytes, nullptr}));
    if (r->status != 201 && r->status != 200) return status_error("storing manifest " + key, *r);
    return Stored{sha256_digest(bytes), !r->header("oci-subject").empty()};
}

Result<bool> Registry::has_blob(const std::string& digest) {
    SDM_TRY_GET(r, send({"HEAD", url("/blobs/" + digest), {}, {}, 0, nullptr}));
    if (r->status == 200) return true;
    if (r->status == 404) return false;
    return status_error("blob " + digest, *r);
}

Result<void> Registry::put_blob(Bytes bytes, const std::string& digest) {
    SDM_TRY_GET(start, send({"POST", url("/blobs/uploads/"), {"Content-Length: 0"}, {}, kMaxManifestBytes, nullptr}));
    if (start->status != 202) return status_error("starting the upload of blob " + digest, *start);
    std::string location = start->header("location");
    const std::string origin = std::string(options_.plain_http ? "http://" : "https://") + reference_.registry + "/";
    if (location.rfind("/", 0) == 0) location = origin + location.substr(1);
    // The upload carries the credentials: it goes to the registry itself, never where an answer points.
    if (location.rfind(origin, 0) != 0 || !header_safe(location))
        return make_error(ErrorCode::io, "registry " + name_ + ": its upload location '" + location.substr(0, 200) + "' is not on " + origin);
    location += std::string(location.find('?') == std::string::npos ? "?" : "&") + "digest=" + url_escape(digest);
    SDM_TRY_GET(put, send({"PUT", location, {"Content-Type: application/octet-stream"}, bytes, kMaxManifestBytes, nullptr}));
    if (put->status != 201) return status_error("uploading blob " + digest, *put);
    return {};
}

Result<void> Registry::get_blob(const std::string& digest, uint64_t size, BodySink& sink) {
    CheckingSink checking(sink);
    SDM_TRY_GET(r, send({"GET", url("/blobs/" + digest), {}, {}, size, &checking}));
    if (r->status != 200) return status_error("blob " + digest, *r);
    if (checking.received() != size)
        return make_error(ErrorCode::mismatch, "registry " + name_ + ": blob " + digest + " ended after " + std::to_string(checking.received()) +
                                                   " of the " + std::to_string(size) + " bytes its manifest declares");
    const std::string got = checking.digest();
    if (got != digest)
        return make_error(ErrorCode::mismatch, "registry " + name_ + ": blob " + digest + " hashes to " + got +
                                                   ": the registry answered other bytes");
    return {};
}

}  // namespace sdm::tools::oci
