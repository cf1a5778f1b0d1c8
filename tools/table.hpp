// Text tables for the tool's listings: each column as wide as its longest cell (header included),
// so that names of any length (16 KiB template instantiations) keep the columns after them aligned
// instead of pushing them out of their fixed widths. On a terminal, a listing fits its width by
// cutting one column (the name) with an ellipsis; the other columns stay whole.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace sdm::tools {

enum class Align { left, right };

class TextTable {
public:
    TextTable(std::vector<std::string> header, std::vector<Align> align);
    void add(std::vector<std::string> row);  // as many cells as the header
    // Two spaces between columns; the last is not padded. width 0: every cell whole; else the
    // cells of column `cut` are shortened with "…" so that each line fits `width` columns (that
    // column keeps at least kMinCut columns, so a line may still be wider when the others are).
    void print(std::FILE* out, size_t width = 0, size_t cut = 0) const;
    static constexpr size_t kMinCut = 16;

private:
    std::vector<std::string> header_;
    std::vector<Align> align_;
    std::vector<std::vector<std::string>> rows_;
};

// The width a listing on stdout fits, for TextTable::print: 0 (nothing cut) with `wide` or when
// stdout is not a terminal (a pipe or a file gets whole names, for grep); `forced` (--width N)
// when nonzero, terminal or not; else the terminal's width (TIOCGWINSZ), else $COLUMNS, else 100.
size_t listing_width(bool wide, size_t forced);
// The widest `--width` sdm ls takes: wider is no terminal's (--wide cuts nothing).
inline constexpr size_t kMaxListingWidth = 10000;

// Columns `text` takes on a terminal: its UTF-8 code points.
size_t display_width(std::string_view text);

// `text` in at most `width` columns: whole when it fits, else its start and "…".
std::string cut_to(std::string_view text, size_t width);

}  // namespace sdm::tools
