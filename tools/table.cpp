#include "table.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>

#include <sys/ioctl.h>
#include <unistd.h>

namespace sdm::tools {

namespace {

constexpr std::string_view kEllipsis = "\u2026";  // one column, three bytes
constexpr size_t kDefaultWidth = 100;             // a terminal that says nothing of its width

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

}  // namespace

size_t display_width(std::string_view text) {
    return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return !continuation_byte(c); }));
}

std::string cut_to(std::string_view text, size_t width) {
    if (display_width(text) <= width) return std::string(text);
    if (width == 0) return {};
    size_t end = 0, columns = 0;  // the first width - 1 code points, never half of one
    while (end < text.size() && columns < width - 1) {
        ++end;
        while (end < text.size() && continuation_byte(text[end])) ++end;
        ++columns;
    }
    return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

size_t listing_width(bool wide, size_t forced) {
    if (wide) return 0;
    if (forced > 0) return forced;
    if (::isatty(STDOUT_FILENO) == 0) return 0;
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
        size_t value = 0;
        const std::string_view text(columns);
        if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value); ec == std::errc() && end == text.data() + text.size() && value > 0)
            return value;
    }
    return kDefaultWidth;
}

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align) : header_(std::move(header)), align_(std::move(align)) {
    align_.resize(header_.size(), Align::left);
}

void TextTable::add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
}

void TextTable::print(std::FILE* out, size_t width, size_t cut) const {
    std::vector<size_t> column(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) column[c] = display_width(header_[c]);
    for (const auto& row : rows_)
        for (size_t c = 0; c < row.size(); ++c) column[c] = std::max(column[c], display_width(row[c]));
    size_t limit = SIZE_MAX;  // what column `cut` may take
    if (width > 0 && cut < column.size()) {
        size_t others = 2 * (column.size() - 1);
        for (size_t c = 0; c < column.size(); ++c)
            if (c != cut) others += column[c];
        limit = std::max(std::max(kMinCut, display_width(header_[cut])), width > others ? width - others : 0);
        column[cut] = std::min(column[cut], limit);
    }
    const auto line = [&](const std::vector<std::string>& row) {
        std::string text;
        for (size_t c = 0; c < row.size(); ++c) {
            const std::string cell = c == cut ? cut_to(row[c], limit) : row[c];
            const size_t pad = column[c] - display_width(cell);
            const bool last = c + 1 == row.size();
            if (c > 0) text += "  ";
            if (align_[c] == Align::right) text.append(pad, ' ');
            text += cell;
            if (align_[c] == Align::left && !last) text.append(pad, ' ');
        }
        text += '\n';
        std::fwrite(text.data(), 1, text.size(), out);
    };
    line(header_);
    for (const auto& row : rows_) line(row);
}

}  // namespace sdm::tools
