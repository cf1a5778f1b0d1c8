// Text tables for the tool's listings: each column as wide as its longest cell (header included),
// so that names of any length (16 KiB template instantiations) keep the columns after them aligned
// instead of pushing them out of their fixed widths.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace sdm::tools {

enum class Align { left, right };

class TextTable {
public:
    TextTable(std::vector<std::string> header, std::vector<Align> align);
    void add(std::vector<std::string> row);  // as many cells as the header
    void print(std::FILE* out) const;        // two spaces between columns; the last is not padded

private:
    std::vector<std::string> header_;
    std::vector<Align> align_;
    std::vector<std::vector<std::string>> rows_;
};


}  // namespace sdm::tools
