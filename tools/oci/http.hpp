// HTTP for the registry client, over libcurl: TLS unless the user asked for plain HTTP, only the
// http(s) protocols (redirects included), a bounded number of redirects, connect and low-speed
// timeouts, and every body bounded: a Content-Length above the bound is refused before a byte is
// read, and a body that runs past it (an endless one) is cut at the bound with an error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools::oci {

// Where a successful answer's body goes when it is not kept in memory (a blob to a file).
class BodySink {
public:
    virtual ~BodySink() = default;
    virtual Result<void> write(Bytes bytes) = 0;
};

struct Request {
    std::string method{"GET"};  // GET, HEAD, PUT, POST
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    Bytes body;                        // what PUT and POST send
    uint64_t max_body{0};              // the most bytes a successful answer may carry
    BodySink* sink{nullptr};           // null: a successful answer's body is kept in Response::body
};

struct Response {
    long status{0};
    std::map<std::string, std::string> headers;  // the final answer's, names in lower case
    std::string body;                            // an error answer's (bounded), or a success's without a sink
    std::string url;                             // where the last redirect led

    std::string header(const std::string& lower_name) const;
};

struct TransportOptions {
    bool plain_http{false};     // http:// to the registry (and realms); otherwise https only
    long connect_timeout_s{30};
    long low_speed_time_s{30};  // an answer slower than 1 byte/s for this long is cut
};

// Sends one request. A transport failure (refused, TLS, too many redirects, a body over its
// bound, a stalled answer) is an error naming the method, the URL and the reason; an HTTP error
// status is a Response, for the caller to word.
Result<Response> send(const Request& request, const TransportOptions& options);

// A URL's origin, "scheme://host:port" in lower case with the scheme's default port written out
// ("https://reg.example:443"); empty for a URL that does not parse.
std::string origin(const std::string& url);

// `text` escaped for a URL's query.
std::string url_escape(const std::string& text);

}  // namespace sdm::tools::oci
