#include "cxx_names.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cxxabi.h>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>

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

namespace {

// Whether the quote at `at` opens a character literal: not a digit separator ("1'000"), so after
// no identifier or number but a literal's prefix (L, u, U, u8).
bool character_literal_at(std::string_view text, size_t at) {
    size_t start = at;
    while (start > 0 && word_char(text[start - 1])) --start;
    const std::string_view before = text.substr(start, at - start);
    return before.empty() || before == "L" || before == "u" || before == "U" || before == "u8";
}

}  // namespace

Result<void> check_cxx_brackets(std::string_view text) {
    std::string open;  // the brackets open, innermost last
    bool literals = true;
    constexpr std::string_view kOpen = "<([", kClose = ">)]";
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\'' && literals && character_literal_at(text, i)) {  // '<' is no bracket
            size_t k = i + 1;
            while (k < text.size() && text[k] != '\'') k += text[k] == '\\' ? 2 : 1;
            if (k < text.size()) {
                i = k;
                continue;
            }
            literals = false;  // none closes past here: no quote after it opens one (one pass)
        }
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

namespace {

// canonical_cxx's tokens: identifiers (and keywords), pp-numbers, character literals (with their
// prefix), "::", and single punctuation characters; views into the text, or into the tables below.
enum class TokenKind { word, number, character, punctuation };
struct Token {
    TokenKind kind;
    std::string_view text;
};

bool is_scope(const Token& t) { return t.kind == TokenKind::punctuation && t.text == "::"; }

std::vector<Token> tokenize(std::string_view text) {
    std::vector<Token> out;
    const size_t n = text.size();
    size_t i = 0;
    bool literals = true;  // false past a quote that nothing closes: no quote after it opens a literal (one pass)
    while (i < n) {
        const char c = text[i];
        size_t j = i + 1;
        if (space(c)) {
            ++i;
            continue;
        }
        if (digit(c) || (c == '.' && j < n && digit(text[j]))) {  // a pp-number: digits, letters, '.', e+ p-, digit separators
            while (j < n) {
                const char d = text[j], before = text[j - 1];
                if (word_char(d) || d == '.') ++j;
                else if ((d == '+' || d == '-') && (before == 'e' || before == 'E' || before == 'p' || before == 'P')) ++j;
                else if (d == '\'' && j + 1 < n && word_char(text[j + 1])) j += 2;
                else break;
            }
            out.push_back({TokenKind::number, text.substr(i, j - i)});
        } else if (word_char(c) || (c == '\'' && literals)) {
            if (c != '\'') {
                while (j < n && word_char(text[j])) ++j;
                const std::string_view word = text.substr(i, j - i);
                const bool prefix = word == "L" || word == "u" || word == "U" || word == "u8";
                if (!(prefix && literals && j < n && text[j] == '\'')) {
                    out.push_back({TokenKind::word, word});
                    i = j;
                    continue;
                }
            } else {
                j = i;
            }
            size_t k = j + 1;  // past the opening quote
            while (k < n && text[k] != '\'') k += text[k] == '\\' ? 2 : 1;
            if (k < n) {
                out.push_back({TokenKind::character, text.substr(i, k + 1 - i)});
                j = k + 1;
            } else {  // no closing quote: the text up to it as it is, the quote as punctuation
                if (j > i) out.push_back({TokenKind::word, text.substr(i, j - i)});
                out.push_back({TokenKind::punctuation, text.substr(j, 1)});
                ++j;
                literals = false;
            }
        } else if (c == ':' && j < n && text[j] == ':') {
            out.push_back({TokenKind::punctuation, text.substr(i, 2)});
            j = i + 2;
        } else {
            out.push_back({TokenKind::punctuation, text.substr(i, 1)});
        }
        i = j;
    }
    return out;
}

// The toolkit's inline namespaces, which a user never writes: libcu++'s ABI namespace "__4" (and
// libc++'s "__1"), "__cxx11"/"__cxx17"/"__cxx20", libcu++'s "__cpo", thrust's
// "THRUST_<version>_SM_<arch list>_NS" and CUB's "CUB_<version>_SM_<arch list>" (each also with
// "_NVHPC" under nvc++). The names are reserved to the implementation (a leading "__"), or
// spliced by CCCL's macros (THRUST_DETAIL_ABI_NS_BEGIN, CUB_DETAIL_MAGIC_NS_BEGIN).
bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), digit); }
bool versioned_namespace(std::string_view word, std::string_view library) {
    if (!word.starts_with(library)) return false;
    word.remove_prefix(library.size());
    size_t k = 0;
    while (k < word.size() && digit(word[k])) ++k;
    if (k == 0 || !word.substr(k).starts_with("_SM_")) return false;
    for (const char c : word.substr(k)) if (!(digit(c) || (c >= 'A' && c <= 'Z') || c == '_')) return false;
    return true;
}
bool inline_namespace(std::string_view word) {
    if (word.starts_with("__")) {
        const std::string_view rest = word.substr(2);
        return all_digits(rest) || (rest.starts_with("cxx") && all_digits(rest.substr(3))) || rest == "cpo";
    }
    return (versioned_namespace(word, "THRUST_") && word.ends_with("_NS")) || versioned_namespace(word, "CUB_");
}

// Typedefs of the target ABI (LP64 Linux: glibc's <stdint.h>, GCC's <stddef.h>; CUDA device code
// has its host's) and of the CUDA headers, as the types they name. `scope`: how they may be
// qualified: global (unqualified or "::"), standard (also "std::" and "cuda::std::", which
// libcu++ declares by using ::size_t), std_only (only so: an unqualified dynamic_extent is a user's).
enum class Scope { global, standard, std_only };
struct Alias {
    std::string_view name, means;
    Scope scope;
};
constexpr std::array kAliases{
    Alias{"size_t", "unsigned long", Scope::standard},        Alias{"ptrdiff_t", "long", Scope::standard},
    Alias{"intptr_t", "long", Scope::standard},               Alias{"uintptr_t", "unsigned long", Scope::standard},
    Alias{"intmax_t", "long", Scope::standard},               Alias{"uintmax_t", "unsigned long", Scope::standard},
    Alias{"int8_t", "signed char", Scope::standard},          Alias{"uint8_t", "unsigned char", Scope::standard},
    Alias{"int16_t", "short", Scope::standard},               Alias{"uint16_t", "unsigned short", Scope::standard},
    Alias{"int32_t", "int", Scope::standard},                 Alias{"uint32_t", "unsigned int", Scope::standard},
    Alias{"int64_t", "long", Scope::standard},                Alias{"uint64_t", "unsigned long", Scope::standard},
    Alias{"int_least8_t", "signed char", Scope::standard},    Alias{"uint_least8_t", "unsigned char", Scope::standard},
    Alias{"int_least16_t", "short", Scope::standard},         Alias{"uint_least16_t", "unsigned short", Scope::standard},
    Alias{"int_least32_t", "int", Scope::standard},           Alias{"uint_least32_t", "unsigned int", Scope::standard},
    Alias{"int_least64_t", "long", Scope::standard},          Alias{"uint_least64_t", "unsigned long", Scope::standard},
    Alias{"int_fast8_t", "signed char", Scope::standard},     Alias{"uint_fast8_t", "unsigned char", Scope::standard},
    Alias{"int_fast16_t", "long", Scope::standard},           Alias{"uint_fast16_t", "unsigned long", Scope::standard},
    Alias{"int_fast32_t", "long", Scope::standard},           Alias{"uint_fast32_t", "unsigned long", Scope::standard},
    Alias{"int_fast64_t", "long", Scope::standard},           Alias{"uint_fast64_t", "unsigned long", Scope::standard},
    Alias{"nullptr_t", "decltype(nullptr)", Scope::standard}, Alias{"ssize_t", "long", Scope::global},
    Alias{"uint", "unsigned int", Scope::global},             Alias{"ushort", "unsigned short", Scope::global},
    Alias{"ulong", "unsigned long", Scope::global},           Alias{"half", "__half", Scope::global},
    Alias{"half2", "__half2", Scope::global},                 Alias{"nv_half", "__half", Scope::global},
    Alias{"nv_half2", "__half2", Scope::global},              Alias{"__nv_half", "__half", Scope::global},
    Alias{"__nv_half2", "__half2", Scope::global},            Alias{"nv_bfloat16", "__nv_bfloat16", Scope::global},
    Alias{"nv_bfloat162", "__nv_bfloat162", Scope::global},   Alias{"dynamic_extent", "18446744073709551615", Scope::std_only},
};

const Alias* find_alias(std::string_view word) {
    static const std::unordered_map<std::string_view, const Alias*> by_name = [] {
        std::unordered_map<std::string_view, const Alias*> m;
        for (const Alias& a : kAliases) m.emplace(a.name, &a);
        return m;
    }();
    const auto it = by_name.find(word);
    return it == by_name.end() ? nullptr : it->second;
}

bool scope_allows(Scope scope, std::string_view qualifier) {
    if (qualifier.empty() || qualifier == "::") return scope != Scope::std_only;
    return scope != Scope::global && (qualifier == "std::" || qualifier == "::std::" || qualifier == "cuda::std::" || qualifier == "::cuda::std::");
}

// Pass 1: inline namespaces left out, aliases replaced by what they name.
std::vector<Token> without_aliases(const std::vector<Token>& tokens) {
    std::vector<Token> out;
    out.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        const Token& t = tokens[i];
        const bool qualifies = i + 1 < tokens.size() && is_scope(tokens[i + 1]);
        if (t.kind == TokenKind::word && qualifies && inline_namespace(t.text)) {
            ++i;  // and its "::"
            continue;
        }
        const Alias* alias = t.kind == TokenKind::word && !qualifies ? find_alias(t.text) : nullptr;
        if (alias != nullptr) {
            // The qualifier written before it: words and "::" back to a leading "::" or a word.
            size_t q = out.size();
            bool plain = true;
            while (q > 0 && is_scope(out[q - 1])) {
                if (q >= 2 && out[q - 2].kind == TokenKind::word) {
                    q -= 2;
                    continue;
                }
                // "X<int>::size_t" is a member of X, not the global name
                if (q >= 2 && (out[q - 2].text == ">" || out[q - 2].text == ")" || out[q - 2].text == "]")) plain = false;
                --q;
                break;
            }
            std::string qualifier;
            for (size_t k = q; k < out.size(); ++k) qualifier += out[k].text;
            if (plain && scope_allows(alias->scope, qualifier)) {
                out.resize(q);
                for (const Token& m : tokenize(alias->means)) out.push_back(m);
                continue;
            }
        }
        out.push_back(t);
    }
    return out;
}

// A run of builtin type words in the demangler's spelling ("long unsigned int" -> "unsigned
// long"), or "" when the words make no type (they are then kept as written).
std::string_view builtin_type(std::span<const Token> words) {
    size_t sign = 0, unsign = 0, shorts = 0, longs = 0, ints = 0, chars = 0, int128 = 0, doubles = 0;
    for (const Token& w : words) {
        const std::string_view t = w.text;
        if (t == "signed") ++sign;
        else if (t == "unsigned") ++unsign;
        else if (t == "short") ++shorts;
        else if (t == "long") ++longs;
        else if (t == "int") ++ints;
        else if (t == "char") ++chars;
        else if (t == "__int128") ++int128;
        else ++doubles;
    }
    if (sign + unsign > 1 || shorts > 1 || longs > 2 || ints > 1 || chars > 1 || int128 > 1 || doubles > 1) return {};
    const bool u = unsign == 1;
    if (doubles == 1) return sign + unsign + shorts + ints + chars + int128 == 0 ? (longs == 0 ? "double" : longs == 1 ? "long double" : "") : "";
    if (int128 == 1) return shorts + longs + ints + chars == 0 ? (u ? "unsigned __int128" : "__int128") : "";
    if (chars == 1) return shorts + longs + ints == 0 ? (u ? "unsigned char" : sign == 1 ? "signed char" : "char") : "";
    if (shorts == 1) return longs == 0 ? (u ? "unsigned short" : "short") : "";
    if (longs == 2) return u ? "unsigned long long" : "long long";
    if (longs == 1) return u ? "unsigned long" : "long";
    return u ? "unsigned int" : "int";
}

bool builtin_word(const Token& t) {
    constexpr std::array<std::string_view, 8> kWords{"signed", "unsigned", "short", "long", "int", "char", "__int128", "double"};
    return t.kind == TokenKind::word && std::find(kWords.begin(), kWords.end(), t.text) != kWords.end();
}

// Pass 2: runs of builtin type words as one token in the demangler's spelling.
std::vector<Token> builtin_types(const std::vector<Token>& tokens) {
    std::vector<Token> out;
    out.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size();) {
        size_t j = i;
        while (j < tokens.size() && builtin_word(tokens[j])) ++j;
        if (j == i) {
            out.push_back(tokens[i++]);
            continue;
        }
        const std::span<const Token> run(tokens.data() + i, j - i);
        if (const std::string_view type = builtin_type(run); !type.empty()) out.push_back({TokenKind::word, type});
        else out.insert(out.end(), run.begin(), run.end());
        i = j;
    }
    return out;
}

bool integral_type(std::string_view type) {
    constexpr std::array<std::string_view, 17> kIntegral{"int",      "unsigned int", "long",     "unsigned long",     "long long",
                                                          "unsigned long long", "short", "unsigned short", "char", "signed char",
                                                          "unsigned char", "__int128", "unsigned __int128", "wchar_t", "char8_t",
                                                          "char16_t", "char32_t"};
    return std::find(kIntegral.begin(), kIntegral.end(), type) != kIntegral.end();
}

// An integer literal's value in decimal ("0x1Fu" -> "31", "3ul" -> "3", "1'000" -> "1000"); nullopt
// for anything else (a floating literal, a user-defined one, a value past 64 bits written other than
// in decimal: a decimal literal of any length is its own digits).
std::optional<std::string> integer_value(std::string_view literal) {
    std::string separated;  // without its digit separators, where it has any
    if (literal.find('\'') != std::string_view::npos) {
        for (size_t i = 0; i < literal.size(); ++i)
            if (literal[i] != '\'' || i == 0 || !word_char(literal[i - 1])) separated += literal[i];
        literal = separated;
    }
    const std::string_view text = literal;
    size_t end = text.size();  // without the suffix: u, l, ll, z in any order and case, each once
    bool u = false, l = false, z = false;
    while (end > 0) {
        const char c = static_cast<char>(text[end - 1] | 0x20);
        if (c == 'u' && !u) u = true;
        else if (c == 'z' && !z) z = true;
        else if (c == 'l' && !l) {
            l = true;
            if (end >= 2 && (text[end - 2] | 0x20) == 'l') --end;
        } else {
            break;
        }
        --end;
    }
    std::string_view body = text.substr(0, end);
    unsigned base = 10;
    if (body.size() > 2 && body[0] == '0' && (body[1] | 0x20) == 'x') base = 16, body.remove_prefix(2);
    else if (body.size() > 2 && body[0] == '0' && (body[1] | 0x20) == 'b') base = 2, body.remove_prefix(2);
    else if (body.size() > 1 && body[0] == '0') base = 8, body.remove_prefix(1);
    if (body.empty()) return std::nullopt;
    if (base == 10) return std::all_of(body.begin(), body.end(), digit) ? std::optional<std::string>(body) : std::nullopt;
    uint64_t value = 0;
    constexpr uint64_t kMax = ~uint64_t{0};
    for (const char c : body) {
        const unsigned d = digit(c) ? static_cast<unsigned>(c - '0') : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? static_cast<unsigned>((c | 0x20) - 'a' + 10) : 99;
        if (d >= base || value > (kMax - d) / base) return std::nullopt;
        value = value * base + d;
    }
    return std::to_string(value);
}

// A character literal's value in decimal ("'A'" -> "65", "'\n'" -> "10"): one character or escape
// below 128 (whether a plain char is signed is the platform's: a byte past 127 is kept as written).
std::optional<std::string> character_value(std::string_view literal) {
    const size_t quote = literal.find('\'');
    const std::string_view body = literal.substr(quote + 1, literal.size() - quote - 2);
    if (body.empty()) return std::nullopt;
    unsigned value = 0;
    if (body[0] != '\\') {
        if (body.size() != 1) return std::nullopt;
        value = static_cast<unsigned char>(body[0]);
    } else if (body.size() == 2 && std::string_view("ntrabfv\\'\"?").find(body[1]) != std::string_view::npos) {
        constexpr std::string_view kEscapes = "ntrabfv\\'\"?", kValues = "\n\t\r\a\b\f\v\\'\"?";
        value = static_cast<unsigned char>(kValues[kEscapes.find(body[1])]);
    } else if (body.size() >= 3 && body[1] == 'x' && body.size() <= 4) {
        auto v = integer_value("0x" + std::string(body.substr(2)));
        if (!v) return std::nullopt;
        value = static_cast<unsigned>(std::stoul(*v));
    } else if (body.size() <= 4 && std::all_of(body.begin() + 1, body.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        for (const char c : body.substr(1)) value = value * 8 + static_cast<unsigned>(c - '0');
    } else {
        return std::nullopt;
    }
    if (value >= 128) return std::nullopt;
    return std::to_string(value);
}

std::optional<std::string> literal_value(const Token& t) {
    if (t.kind == TokenKind::number) return integer_value(t.text);
    if (t.kind == TokenKind::character) return character_value(t.text);
    return std::nullopt;
}

}  // namespace

std::string canonical_cxx(std::string_view text) {
    const std::vector<Token> tokens = builtin_types(without_aliases(tokenize(text)));
    // Pass 3: literals as their values, and a cast of a value to an integral type folded into it
    // ("(unsigned long)3" -> "3", "(short)-5" -> "-5", a cast of a cast too), as each value comes.
    std::deque<std::string> values;  // the texts of the value tokens
    std::vector<Token> out;
    out.reserve(tokens.size());
    const auto is = [&](size_t from_end, std::string_view punctuation) {
        const Token& t = out[out.size() - from_end];
        return t.kind == TokenKind::punctuation && t.text == punctuation;
    };
    for (const Token& t : tokens) {
        const std::optional<std::string> value = literal_value(t);
        if (!value) {
            out.push_back(t);
            continue;
        }
        out.push_back({TokenKind::number, values.emplace_back(*value)});
        for (;;) {
            const bool negative = out.size() >= 5 && is(2, "-");
            const size_t cast = negative ? 5 : 4;  // tokens "(" type ")" ["-"] value
            if (out.size() < cast || !is(cast, "(") || out[out.size() - cast + 1].kind != TokenKind::word || !is(cast - 2, ")")) break;
            const std::string_view type = out[out.size() - cast + 1].text, number = out.back().text;
            if (integral_type(type)) {
                out.erase(out.end() - static_cast<std::ptrdiff_t>(cast), out.end() - (negative ? 2 : 1));
                continue;
            }
            if (type == "bool" && !negative && (number == "0" || number == "1")) {
                out.erase(out.end() - static_cast<std::ptrdiff_t>(cast), out.end());
                out.push_back({TokenKind::word, number == "1" ? "true" : "false"});
            }
            break;
        }
    }
    std::string joined;
    joined.reserve(text.size());
    const Token* previous = nullptr;
    for (const Token& t : out) {
        // A space where the two would read as one token: words and numbers, ": :", "u8 'ab'", "1. u".
        const char last = joined.empty() ? ' ' : joined.back(), first = t.text.empty() ? ' ' : t.text.front();
        const bool number = previous != nullptr && previous->kind == TokenKind::number;
        if ((word_char(last) && (word_char(first) || first == '\'')) || (last == ':' && first == ':') ||
            (number && (word_char(first) || first == '.' || first == '\'')))
            joined += ' ';
        joined += t.text;
        previous = &t;
    }
    return joined;
}

std::string_view cxx_template_arguments(std::string_view name) { return name.substr(without_template(name)); }

bool template_arguments_prefix(std::string_view requested, std::string_view symbol) {
    if (requested.size() < 2 || requested.front() != '<' || requested.back() != '>' || symbol.size() < 3 || symbol.front() != '<') return false;
    if (requested == "<>") return true;
    const std::string_view head = requested.substr(0, requested.size() - 1);
    return symbol.size() > head.size() && symbol.starts_with(head) && symbol[head.size()] == ',';
}

namespace {

// Reads mangled template arguments ("I...E") far enough to know that none is an argument pack:
// builtin types, qualified and pointer types, names with their own arguments, substitutions,
// template parameters and literals. Anything else (a pack, an expression, a function type) is a
// "don't know". Each step consumes input; nesting is bounded.
class ArgumentReader {
public:
    ArgumentReader(std::string_view symbol, size_t at) : s_(symbol), at_(at) {}
    size_t at() const { return at_; }

    // After the 'I': every argument, then the 'E'.
    bool arguments() {
        if (++depth_ > 64) return false;
        while (at_ < s_.size() && s_[at_] != 'E')
            if (!argument()) return false;
        --depth_;
        return next('E');
    }

private:
    bool next(char c) {
        if (at_ >= s_.size() || s_[at_] != c) return false;
        ++at_;
        return true;
    }
    bool argument() {
        if (s_[at_] == 'L') return literal();
        return type();
    }
    bool literal() {
        ++at_;
        if (at_ >= s_.size()) return false;
        const char c = s_[at_];
        if (c >= 'a' && c <= 'z') ++at_;                    // a builtin type
        else if (c == 'D' && at_ + 1 < s_.size()) at_ += 2;  // decltype(nullptr), char8_t ...
        else if (!type()) return false;                      // an enumeration
        while (at_ < s_.size() && (digit(s_[at_]) || (s_[at_] >= 'a' && s_[at_] <= 'z') || s_[at_] == '.')) ++at_;  // n42, hex of a float
        return next('E');
    }
    bool source_name() {
        size_t n = 0;
        while (at_ < s_.size() && digit(s_[at_]) && n <= s_.size()) n = n * 10 + static_cast<size_t>(s_[at_++] - '0');
        if (n == 0 || n > s_.size() - at_) return false;
        at_ += n;
        return true;
    }
    bool reference() {
        skip_reference(s_, at_);
        return true;
    }
    bool type() {
        if (at_ >= s_.size() || ++depth_ > 64) return false;
        bool ok = false;
        const char c = s_[at_];
        if (std::string_view("vwbcahstijlmxynofdegz").find(c) != std::string_view::npos) {
            ++at_;
            ok = true;
        } else if (c == 'D' && at_ + 1 < s_.size() && std::string_view("nisuhfdea").find(s_[at_ + 1]) != std::string_view::npos) {
            at_ += 2;
            ok = true;
        } else if (std::string_view("PROKVr").find(c) != std::string_view::npos) {
            ++at_;
            ok = type();
        } else if (digit(c)) {
            ok = source_name() && (at_ >= s_.size() || s_[at_] != 'I' || (++at_, arguments()));
        } else if (c == 'S' || c == 'T') {
            const bool std_prefix = c == 'S' && at_ + 1 < s_.size() && s_[at_ + 1] == 't';
            ok = reference() && (!std_prefix || source_name()) && (at_ >= s_.size() || s_[at_] != 'I' || (++at_, arguments()));
        } else if (c == 'N') {
            ++at_;
            while (at_ < s_.size() && std::string_view("rVK").find(s_[at_]) != std::string_view::npos) ++at_;
            ok = true;
            while (ok && at_ < s_.size() && s_[at_] != 'E') {
                if (digit(s_[at_])) ok = source_name();
                else if (s_[at_] == 'I') ok = (++at_, arguments());
                else if (s_[at_] == 'S' || s_[at_] == 'T') ok = reference();
                else ok = false;
            }
            ok = ok && next('E');
        }
        --depth_;
        return ok;
    }

    std::string_view s_;
    size_t at_;
    size_t depth_{0};
};

}  // namespace

bool mangled_template_pack(std::string_view symbol) {
    if (!symbol.starts_with("_Z")) return true;
    size_t at = 2;
    if (at < symbol.size() && symbol[at] == 'L') ++at;
    bool arguments = false;  // whether the last component has template arguments, all read
    const auto read_arguments = [&] {
        ArgumentReader reader(symbol, ++at);
        if (!reader.arguments()) return false;
        at = reader.at();
        arguments = true;
        return true;
    };
    const auto source_name = [&] {
        const size_t n = source_name_length(symbol, at);
        if (n == 0) return false;
        at += n;
        arguments = false;
        return true;
    };
    if (at < symbol.size() && symbol[at] == 'N') {
        ++at;
        while (at < symbol.size() && (symbol[at] == 'r' || symbol[at] == 'V' || symbol[at] == 'K')) ++at;
        while (at < symbol.size() && symbol[at] != 'E') {
            const char c = symbol[at];
            if (digit(c)) {
                if (!source_name()) return true;
            } else if (c == 'I') {
                if (!read_arguments()) return true;
            } else if (c == 'S' || c == 'T') {
                skip_reference(symbol, at);
                arguments = false;
            } else {
                return true;
            }
        }
        if (at >= symbol.size()) return true;
    } else {
        if (symbol.substr(at).starts_with("St")) at += 2;
        if (!source_name()) return true;
        if (at < symbol.size() && symbol[at] == 'I' && !read_arguments()) return true;
    }
    return !arguments;
}

}  // namespace sdm::archive
