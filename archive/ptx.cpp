// PTX header parsing: the directives that say which virtual arch and ISA a module needs, and the
// names of its entry points. PTX is text; comments (// and /* */) are skipped.
#include <algorithm>
#include <charconv>

#include "image.hpp"
#include "ptx_text.hpp"

namespace sdm::archive {

bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.';
}

std::string strip_comments(std::string_view text) {
    // One pass, as ptxas lexes: a "//" or "/*" inside a string literal starts no comment, and a
    // quote inside a comment starts no string. Each literal becomes "" (its bytes are no tokens:
    // a .pragma "..." that reads ".entry x(" defines nothing); an unterminated one ends at its line.
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
            while (i < text.size() && text[i] != '\n') ++i;
            out.push_back('\n');
        } else if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
            const size_t end = text.find("*/", i + 2);
            i = end == std::string_view::npos ? text.size() : end + 1;
            out.push_back(' ');
        } else if (text[i] == '"') {
            ++i;
            while (i < text.size() && text[i] != '"' && text[i] != '\n') i += text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n' ? 2 : 1;
            out += "\"\"";
            if (i < text.size() && text[i] == '\n') out.push_back('\n');
        } else {
            out.push_back(text[i]);
        }
    }
    return out;
}

std::string_view next_token(std::string_view text, size_t& at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) ++at;
    const size_t start = at;
    while (at < text.size() && is_ident_char(text[at])) ++at;
    if (at == start && at < text.size()) ++at;  // a punctuation character is a token of its own
    return text.substr(start, at - start);
}

namespace {

Error bad(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "not a valid PTX module: " + why); }

}  // namespace

Result<ImageInfo> inspect_ptx(Bytes bytes) {
    const std::string_view raw = as_text(bytes);
    if (raw.find('\0') != std::string_view::npos && raw.find('\0') + 1 != raw.size())
        return bad("contains NUL bytes (binary data, not PTX text)");
    const std::string text = strip_comments(raw.substr(0, raw.find('\0')));
    ImageInfo info;
    info.kind = Kind::ptx;
    // ptxas's grammar: the module begins with .version, and .target follows it. Reading the first
    // of each anywhere would let a file show sdm one target and ptxas another.
    size_t at = 0;
    if (next_token(text, at) != ".version") return bad("does not begin with a .version directive");
    const std::string_view v = next_token(text, at);
    const size_t dot = v.find('.');
    unsigned major = 0, minor = 0;
    const auto whole = [](std::string_view digits, unsigned& value) {
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        return ec == std::errc{} && end == digits.data() + digits.size() && !digits.empty();
    };
    if (dot == std::string_view::npos || !whole(v.substr(0, dot), major) || !whole(v.substr(dot + 1), minor) || major > 99 || minor > 9)
        return bad("malformed .version '" + std::string(v) + "'");
    info.ptx_isa = static_cast<uint16_t>(major * 10 + minor);
    if (next_token(text, at) != ".target") return bad("its .version is not followed by a .target directive");
    // `.target sm_90a, texmode_independent, debug`: the first token names the arch.
    const std::string_view t = next_token(text, at);
    if (!t.starts_with("sm_")) return bad(".target names '" + std::string(t) + "', not an sm_XY arch");
    const auto target = parse_target("compute_" + std::string(t.substr(3)));
    if (!target) return bad("malformed .target '" + std::string(t) + "'");
    info.sm = target->sm;
    info.virtual_sm = target->sm;
    info.variant = target->variant;
    for (std::string_view token = next_token(text, at); !token.empty(); token = next_token(text, at)) {
        if (token == ".version" || token == ".target") return bad("a second " + std::string(token) + " directive");
        if (token == ".entry") {
            const std::string_view name = next_token(text, at);
            if (name.empty() || !is_ident_char(name.front())) return bad("malformed .entry");
            info.kernels.emplace_back(name);
        }
    }
    std::sort(info.kernels.begin(), info.kernels.end());
    return info;
}

}  // namespace sdm::archive
