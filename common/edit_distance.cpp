#include "edit_distance.hpp"

#include <algorithm>

namespace sdm {

size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows: two back for the transposition.
    std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, row);
    }
    return previous[b.size()];
}

std::string closest(std::string_view given, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = given.size() / 3 + 1;  // more than this many edits is not a typo
    for (const auto& c : candidates) {
        const size_t d = edit_distance(given, c);
        if (d < best_distance) {
            best_distance = d;
            best = c;
        }
    }
    return best;
}

}  // namespace sdm
