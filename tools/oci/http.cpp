#include "http.hpp"

#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "sdm_version.h"

namespace sdm::tools::oci {
namespace {

constexpr long kMaxRedirects = 5;            // registries redirect blobs once, to storage
constexpr uint64_t kMaxErrorBody = 64 << 10;  // enough for the spec's error JSON

struct Transfer {
    const Request& request;
    CURL* curl;
    Response response;
    uint64_t received{0};
    std::optional<Error> error;  // why a callback stopped the transfer
};

bool success_status(CURL* curl) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status >= 200 && status < 300;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const size_t n = size * count;
    const bool success = success_status(t.curl);
    const uint64_t bound = success ? t.request.max_body : kMaxErrorBody;
    if (t.received + n > bound) {
        t.error = make_error(ErrorCode::io, "the answer runs past the " + std::to_string(bound) + " bytes it may have (" +
                                           (success ? "the size the manifest declares, or sdm's bound" : "sdm's bound on an error answer") + ")");
        return 0;
    }
    t.received += n;
    const Bytes bytes(reinterpret_cast<const std::byte*>(data), n);
    if (success && t.request.sink != nullptr) {
        if (auto written = t.request.sink->write(bytes); !written) {
            t.error = written.error();
            return 0;
        }
    } else {
        t.response.body.append(data, n);
    }
    return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {  // a new answer (after a redirect or a 100): its headers alone
        t.response.headers.clear();
        return line.size();
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return line.size();
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    const size_t first = value.find_first_not_of(" \t");
    const size_t last = value.find_last_not_of(" \t\r\n");
    t.response.headers[name] = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
    return line.size();
}

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void set_options(CURL* curl, Transfer& t, const TransportOptions& o, curl_slist* headers) {
    const Request& r = t.request;
    const char* protocols = o.plain_http ? "http,https" : "https";
    curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, kMaxRedirects);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, o.low_speed_time_s);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "sdm/" SDM_VERSION_STRING);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    if (r.method == "HEAD") {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else {
        // A Content-Length over the bound is refused before the body is read.
        curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(r.max_body));
    }
    if (r.method == "PUT" || r.method == "POST") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.empty() ? "" : reinterpret_cast<const char*>(r.body.data()));
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
        if (r.method == "PUT") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
    }
}

std::string curl_reason(CURLcode code, const TransportOptions& o) {
    std::string reason = curl_easy_strerror(code);
    if (code == CURLE_TOO_MANY_REDIRECTS) reason += " (more than " + std::to_string(kMaxRedirects) + ": a redirect loop)";
    if (code == CURLE_FILESIZE_EXCEEDED) reason += " (its Content-Length is larger than the size it may have)";
    if (code == CURLE_PARTIAL_FILE) reason += " (the answer ended before its Content-Length: a dropped connection or a lying registry)";
    if (code == CURLE_OPERATION_TIMEDOUT) reason += " (nothing arrived for " + std::to_string(o.low_speed_time_s) + " s)";
    if ((code == CURLE_SSL_CONNECT_ERROR || code == CURLE_PEER_FAILED_VERIFICATION) && !o.plain_http)
        reason += " (a registry that speaks plain HTTP, on a trusted network only: --plain-http)";
    if (code == CURLE_UNSUPPORTED_PROTOCOL)
        reason += o.plain_http ? " (sdm follows only http and https URLs)" : " (sdm follows only https URLs; http only with --plain-http)";
    return reason;
}

}  // namespace

std::string Response::header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

Result<Response> send(const Request& request, const TransportOptions& options) {
    global_init();
    const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return make_error(ErrorCode::out_of_memory, "libcurl could not start a transfer");
    curl_slist* list = nullptr;
    for (const auto& h : request.headers) list = curl_slist_append(list, h.c_str());
    const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list, curl_slist_free_all);
    Transfer t{request, curl.get(), {}, 0, std::nullopt};
    set_options(curl.get(), t, options, headers.get());
    const CURLcode code = curl_easy_perform(curl.get());
    const std::string what = request.method + " " + request.url;
    if (t.error) return make_error(t.error->code, what + ": " + t.error->message);
    if (code != CURLE_OK) return make_error(ErrorCode::io, what + ": " + curl_reason(code, options));
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &t.response.status);
    char* url = nullptr;
    if (curl_easy_getinfo(curl.get(), CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url != nullptr) t.response.url = url;
    return std::move(t.response);
}

std::string url_escape(const std::string& text) {
    global_init();
    char* escaped = curl_escape(text.c_str(), static_cast<int>(text.size()));
    if (escaped == nullptr) return {};
    std::string out(escaped);
    curl_free(escaped);
    return out;
}

std::string origin(const std::string& url) {
    global_init();
    std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
    if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
    std::string out;
    for (const auto& [part, flags, before] : {std::tuple{CURLUPART_SCHEME, 0u, ""}, std::tuple{CURLUPART_HOST, 0u, "://"},
                                              std::tuple{CURLUPART_PORT, static_cast<unsigned>(CURLU_DEFAULT_PORT), ":"}}) {
        char* text = nullptr;
        if (curl_url_get(u.get(), part, &text, flags) != CURLUE_OK || text == nullptr) return {};
        out += before;
        for (const char* c = text; *c != 0; ++c) out += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
        curl_free(text);
    }
    return out;
}

}  // namespace sdm::tools::oci
