#include "text.hpp"

#include <algorithm>

namespace sdm {

std::string shown_name(std::string_view name) {
    if (name.size() <= kShownNameBytes) return printable(name);
    return printable(name.substr(0, kShownNameBytes)) + "... (" + std::to_string(name.size()) + " bytes)";
}

bool is_printable(std::string_view text) noexcept {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

std::string printable(std::string_view text) {
    if (is_printable(text) && text.find('\\') == std::string_view::npos) return std::string(text);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size() + 8);
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\\': out += "\\\\"; break;
        default:
            if (u >= 0x20 && u <= 0x7e) {
                out.push_back(c);
            } else {
                out += "\\x";
                out.push_back(kHex[u >> 4]);
                out.push_back(kHex[u & 15]);
            }
        }
    }
    return out;
}

std::string hex_text(std::span<const uint8_t> bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const uint8_t b : bytes) {
        out.push_back(kHex[b >> 4]);
        out.push_back(kHex[b & 15]);
    }
    return out;
}

std::optional<std::vector<uint8_t>> parse_hex(std::string_view text, size_t size) {
    if (text.size() != size * 2) return std::nullopt;
    const auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::vector<uint8_t> out(size);
    for (size_t i = 0; i < size; ++i) {
        const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return out;
}

}  // namespace sdm
