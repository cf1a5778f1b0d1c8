#include <algorithm>
#include <vector>

#include "commands.hpp"

namespace sdm::tools {

std::string closest(const std::string& given, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = given.size() / 3 + 1;  // more than this many edits is not a typo
    for (const auto& c : candidates) {
        // Levenshtein distance, one row at a time.
        std::vector<size_t> row(c.size() + 1);
        for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
        for (size_t i = 1; i <= given.size(); ++i) {
            size_t diagonal = row[0];
            row[0] = i;
            for (size_t j = 1; j <= c.size(); ++j) {
                const size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (given[i - 1] == c[j - 1] ? 0 : 1)});
                diagonal = up;
            }
        }
        if (row[c.size()] < best_distance) {
            best_distance = row[c.size()];
            best = c;
        }
    }
    return best;
}

}  // namespace sdm::tools
