#include <algorithm>
#include <vector>

#include "commands.hpp"

namespace sdm::tools {

std::string closest(const std::string& given, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = given.size() / 3 + 1;  // more than this many edits is not a typo
    for (const auto& c : candidates) {
        // Edit distance with adjacent transpositions as one edit (optimal string alignment): "pakc"
        // is one slip from "pack". Three rows: two back for the transposition.
        std::vector<size_t> before(c.size() + 1), previous(c.size() + 1), row(c.size() + 1);
        for (size_t j = 0; j <= c.size(); ++j) previous[j] = j;
        for (size_t i = 1; i <= given.size(); ++i) {
            row[0] = i;
            for (size_t j = 1; j <= c.size(); ++j) {
                row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (given[i - 1] == c[j - 1] ? 0 : 1)});
                if (i > 1 && j > 1 && given[i - 1] == c[j - 2] && given[i - 2] == c[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
            }
            std::swap(before, previous);
            std::swap(previous, row);
        }
        if (previous[c.size()] < best_distance) {
            best_distance = previous[c.size()];
            best = c;
        }
    }
    return best;
}

}  // namespace sdm::tools
