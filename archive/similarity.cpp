#include "similarity.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace sdm::archive {

Sketch sketch_of(Bytes payload) {
    Sketch s;
    s.bins.fill(Sketch::kEmptyBin);
    if (payload.size() < 8) return s;
    const std::byte* p = payload.data();
    const size_t last = payload.size() - 8;
    for (size_t at = 0; at <= last; ++at) {
        uint64_t w;
        std::memcpy(&w, p + at, sizeof w);
        // A multiply-xorshift mix of the shingle: the top 6 bits pick the bin, the low 32 rank it.
        uint64_t h = w * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 32;
        const size_t bin = static_cast<size_t>(h >> 58);
        const auto value = static_cast<uint32_t>(h);
        if (value < s.bins[bin]) s.bins[bin] = value;
    }
    return s;
}

unsigned shared_bins(const Sketch& a, const Sketch& b) {
    unsigned n = 0;
    for (size_t i = 0; i < kSketchBins; ++i) n += a.bins[i] != Sketch::kEmptyBin && a.bins[i] == b.bins[i];
    return n;
}

std::vector<std::vector<size_t>> similar_items(const std::vector<Sketch>& sketches, const std::vector<uint32_t>& group, size_t count,
                                               unsigned min_shared, size_t max_posting) {
    const size_t n = sketches.size();
    std::vector<std::vector<size_t>> out(n);
    if (count == 0) return out;
    // The inverted index: (group, bin, value) -> items, as one sorted vector.
    using Key = std::tuple<uint32_t, uint32_t, uint32_t>;
    std::vector<std::pair<Key, uint32_t>> postings;
    postings.reserve(n * kSketchBins);
    for (size_t i = 0; i < n; ++i)
        for (uint32_t b = 0; b < kSketchBins; ++b)
            if (sketches[i].bins[b] != Sketch::kEmptyBin) postings.push_back({{group[i], b, sketches[i].bins[b]}, static_cast<uint32_t>(i)});
    std::sort(postings.begin(), postings.end());
    std::vector<unsigned> shared(n, 0);
    std::vector<size_t> touched;
    for (size_t i = 0; i < n; ++i) {
        touched.clear();
        for (uint32_t b = 0; b < kSketchBins; ++b) {
            if (sketches[i].bins[b] == Sketch::kEmptyBin) continue;
            const Key key{group[i], b, sketches[i].bins[b]};
            const auto lo = std::lower_bound(postings.begin(), postings.end(), key, [](const auto& p, const Key& k) { return p.first < k; });
            const auto hi = std::upper_bound(lo, postings.end(), key, [](const Key& k, const auto& p) { return k < p.first; });
            if (static_cast<size_t>(hi - lo) > max_posting) continue;
            for (auto it = lo; it != hi; ++it) {
                if (it->second == i) continue;
                if (shared[it->second]++ == 0) touched.push_back(it->second);
            }
        }
        std::vector<std::pair<unsigned, size_t>> ranked;
        for (size_t j : touched) {
            if (shared[j] >= min_shared) ranked.emplace_back(shared[j], j);
            shared[j] = 0;
        }
        const size_t keep = std::min(count, ranked.size());
        std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(),
                          [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
        for (size_t k = 0; k < keep; ++k) out[i].push_back(ranked[k].second);
    }
    return out;
}

}  // namespace sdm::archive
