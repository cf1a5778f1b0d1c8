#include "text.hpp"

#include <algorithm>

namespace sdm {

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

}  // namespace sdm
