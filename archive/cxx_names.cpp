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

// Every qualification of `whole`, which begins with `name` ("a::b::f(int)", "b::f(int)", "f(int)"):
// cut after each "::" of `name` outside <> and ().
void qualifications(std::string_view name, std::vector<std::string_view>& out, std::string_view whole) {
    size_t depth = 0;
    const size_t offset = static_cast<size_t>(name.data() - whole.data());
    out.push_back(whole.substr(offset));
    for (size_t i = 0; i + 1 < name.size(); ++i) {
        const char c = name[i];
        if (c == '<' || c == '(') ++depth;
        else if ((c == '>' || c == ')') && depth > 0) --depth;
        else if (c == ':' && name[i + 1] == ':' && depth == 0) out.push_back(whole.substr(offset + i + 2));
    }
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

}  // namespace sdm::archive
