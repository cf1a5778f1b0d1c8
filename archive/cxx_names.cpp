#include "cxx_names.hpp"

#include <cstdlib>
#include <cxxabi.h>
#include <memory>

namespace sdm::archive {

namespace {

bool word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The index of the '(' matching the ')' that ends `text`, at nesting depth 0; npos when `text`
// does not end in a balanced parenthesised group.
size_t parameter_list(std::string_view text) {
    if (text.empty() || text.back() != ')') return std::string_view::npos;
    size_t depth = 0;
    for (size_t i = text.size(); i-- > 0;) {
        if (text[i] == ')') ++depth;
        else if (text[i] == '(' && --depth == 0) return i;
    }
    return std::string_view::npos;
}

// The start of the name in `text` (a declaration without its parameters): after the last space
// outside <> and () (a template's return type), else 0.
size_t name_start(std::string_view text) {
    size_t depth = 0, start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '<' || c == '(') ++depth;
        else if ((c == '>' || c == ')') && depth > 0) --depth;
        else if (c == ' ' && depth == 0) start = i + 1;
    }
    return start;
}

// The qualifications of `whole`, which begins with `name` ("a::b::f(int)", "b::f(int)", "f(int)"):
// cut after each "::" of `name` outside <> and (); the whole and the kMaxQualifications - 1
// shortest, so that a name of n levels adds a bounded number of keys, not n (each as long as the name).
void qualifications(std::string_view name, std::vector<std::string_view>& out, std::string_view whole) {
    size_t depth = 0;
    const size_t offset = static_cast<size_t>(name.data() - whole.data());
    std::vector<size_t> cuts;
    for (size_t i = 0; i + 1 < name.size(); ++i) {
        const char c = name[i];
        if (c == '<' || c == '(') ++depth;
        else if ((c == '>' || c == ')') && depth > 0) --depth;
        else if (c == ':' && name[i + 1] == ':' && depth == 0) cuts.push_back(i + 2);
    }
    out.push_back(whole.substr(offset));
    const size_t first = cuts.size() > kMaxQualifications - 1 ? cuts.size() - (kMaxQualifications - 1) : 0;
    for (size_t k = first; k < cuts.size(); ++k) out.push_back(whole.substr(offset + cuts[k]));
}

// The end of `name` without its trailing template argument list ("ns::fill" of "ns::fill<float,256>").
size_t without_template(std::string_view name) {
    if (name.empty() || name.back() != '>') return name.size();
    size_t depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
        if (name[i] == '>') ++depth;
        else if (name[i] == '<' && --depth == 0) return i;
    }
    return name.size();
}

}  // namespace

std::optional<std::string> demangle(std::string_view symbol) {
    if (symbol.size() < 3 || symbol.size() > kMaxDemangledSymbol || !symbol.starts_with("_Z")) return std::nullopt;
    const std::string text(symbol);  // NUL-terminated
    int status = 0;
    const std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status), &std::free);
    if (status != 0 || !out) return std::nullopt;
    return std::string(out.get());
}

std::string normalize_cxx(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool pending = false;  // whitespace seen since the last character kept
    for (const char c : text) {
        if (space(c)) {
            pending = !out.empty();
            continue;
        }
        if (pending && word_char(c) && word_char(out.back())) out += ' ';
        pending = false;
        out += c;
    }
    return out;
}

CxxSpellings cxx_spellings(std::string_view declaration) {
    CxxSpellings s;
    s.declaration = declaration;
    const size_t params = parameter_list(declaration);
    const std::string_view head = params == std::string_view::npos ? declaration : declaration.substr(0, params);
    const std::string_view name = head.substr(name_start(head));
    if (params != std::string_view::npos) {
        const std::string_view signature(name.data(), static_cast<size_t>(declaration.data() + declaration.size() - name.data()));
        qualifications(signature.substr(0, name.size()), s.signatures, signature);
    }
    qualifications(name, s.expressions, name);
    const std::string_view base = name.substr(0, without_template(name));
    if (base.size() != name.size()) qualifications(base, s.bases, base);
    return s;
}

Result<void> check_cxx_brackets(std::string_view text) {
    std::string open;  // the brackets open, innermost last
    constexpr std::string_view kOpen = "<([", kClose = ">)]";
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (kOpen.find(c) != std::string_view::npos) {
            if (open.size() >= 256) return make_error(ErrorCode::invalid_argument, "more than 256 brackets nested");
            open += c;
        } else if (const size_t k = kClose.find(c); k != std::string_view::npos) {
            // A '>' of "->" in a declaration's return type would close nothing here: kernels return void.
            if (open.empty() || open.back() != kOpen[k])
                return make_error(ErrorCode::invalid_argument, std::string("a '") + c + "' without its '" + kOpen[k] + "' at byte " + std::to_string(i));
            open.pop_back();
        }
    }
    if (!open.empty()) return make_error(ErrorCode::invalid_argument, std::string("an unclosed '") + open.back() + "'");
    return {};
}

std::string_view cxx_base_name(std::string_view text) {
    const size_t params = parameter_list(text);
    const std::string_view head = params == std::string_view::npos ? text : text.substr(0, params);
    std::string_view name = head.substr(name_start(head));
    name = name.substr(0, without_template(name));
    size_t depth = 0, start = 0;
    for (size_t i = 0; i + 1 < name.size(); ++i) {
        const char c = name[i];
        if (c == '<' || c == '(') ++depth;
        else if ((c == '>' || c == ')') && depth > 0) --depth;
        else if (c == ':' && name[i + 1] == ':' && depth == 0) start = i + 2;
    }
    name = name.substr(start);
    return name.empty() ? text : name;
}

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// The length prefix of a <source-name> at `at` ("8sdm_test"), its text past `at`: 0 when there is
// none or it runs past the end.
size_t source_name_length(std::string_view symbol, size_t& at) {
    size_t n = 0;
    while (at < symbol.size() && digit(symbol[at]) && n <= symbol.size()) n = n * 10 + static_cast<size_t>(symbol[at++] - '0');
    return n <= symbol.size() - at ? n : 0;
}

// Past a <substitution> or <template-param> at `at` ("S_", "S1_", "St", "T_", "T0_").
void skip_reference(std::string_view symbol, size_t& at) {
    ++at;  // 'S' or 'T'
    if (at < symbol.size() && symbol[at] >= 'a' && symbol[at] <= 'z') {  // St, Sa, Ss, ...
        ++at;
        return;
    }
    while (at < symbol.size() && (digit(symbol[at]) || (symbol[at] >= 'A' && symbol[at] <= 'Z'))) ++at;
    if (at < symbol.size() && symbol[at] == '_') ++at;
}

// Past the template arguments "I...E" at `at` (after its 'I'): every construct an 'E' closes (I, N, L, X, J, F, Z)
// counted, source names skipped whole (their letters are no grammar). One pass.
void skip_template_arguments(std::string_view symbol, size_t& at) {
    size_t depth = 0;
    while (at < symbol.size()) {
        const char c = symbol[at];
        if (digit(c)) {
            const size_t n = source_name_length(symbol, at);
            at += n;
            if (n == 0) return;
            continue;
        }
        ++at;
        if (c == 'I' || c == 'N' || c == 'L' || c == 'X' || c == 'J' || c == 'F' || c == 'Z') {
            ++depth;
        } else if (c == 'E') {
            if (depth == 0) return;
            --depth;
        }
    }
}

}  // namespace

std::string_view mangled_base_name(std::string_view symbol) {
    if (!symbol.starts_with("_Z")) return symbol;
    size_t at = 2;
    if (at < symbol.size() && symbol[at] == 'L') ++at;  // internal linkage
    std::string_view last;
    const auto source_name = [&] {
        const size_t n = source_name_length(symbol, at);
        if (n == 0) return false;
        last = symbol.substr(at, n);
        at += n;
        return true;
    };
    if (at < symbol.size() && symbol[at] == 'N') {
        ++at;
        while (at < symbol.size() && (symbol[at] == 'r' || symbol[at] == 'V' || symbol[at] == 'K' || symbol[at] == 'R' || symbol[at] == 'O')) ++at;
        while (at < symbol.size() && symbol[at] != 'E') {
            const char c = symbol[at];
            if (digit(c)) {
                if (!source_name()) break;
            } else if (c == 'I') {
                skip_template_arguments(symbol, ++at);
            } else if (c == 'S' || c == 'T') {
                skip_reference(symbol, at);
            } else if ((c == 'C' || c == 'D') && at + 1 < symbol.size() && digit(symbol[at + 1])) {
                at += 2;  // a constructor or destructor: the class's name is the base
            } else {
                break;
            }
        }
    } else {
        if (symbol.substr(at).starts_with("St")) at += 2;
        source_name();
    }
    return last.empty() ? symbol : last;
}

}  // namespace sdm::archive
