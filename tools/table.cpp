#include "table.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>


namespace sdm::tools {

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align) : header_(std::move(header)), align_(std::move(align)) {
    align_.resize(header_.size(), Align::left);
}

void TextTable::add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
}

void TextTable::print(std::FILE* out) const {
    std::vector<size_t> width(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
    for (const auto& row : rows_)
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    const auto line = [&](const std::vector<std::string>& row) {
        std::string text;
        for (size_t c = 0; c < row.size(); ++c) {
            const size_t pad = width[c] - row[c].size();
            const bool last = c + 1 == row.size();
            if (c > 0) text += "  ";
            if (align_[c] == Align::right) text.append(pad, ' ');
            text += row[c];
            if (align_[c] == Align::left && !last) text.append(pad, ' ');
        }
        text += '\n';
        std::fwrite(text.data(), 1, text.size(), out);
    };
    line(header_);
    for (const auto& row : rows_) line(row);
}


}  // namespace sdm::tools
