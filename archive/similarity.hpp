// Which payloads resemble which: a one-permutation MinHash sketch of each payload's 8-byte
// shingles, and an inverted index over the sketches that finds, for every payload, the others
// sharing most of its sketch. The writer tries prefix coding against those candidates (an sm_90
// kernel beside the same kernel built for sm_100, a template instantiation beside its sibling in
// another module), where size alone picks neighbours that share nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"

namespace sdm::archive {

constexpr size_t kSketchBins = 64;

// The least hash of the payload's shingles that falls in each of kSketchBins bins; kEmptyBin where
// none does (a payload of a few hundred bytes). Two payloads share a bin's value about as often as
// their shingle sets overlap (the Jaccard similarity). One pass, a multiply and a compare a byte.
struct Sketch {
    static constexpr uint32_t kEmptyBin = 0xffffffffu;
    std::array<uint32_t, kSketchBins> bins{};
};
Sketch sketch_of(Bytes payload);

// How many non-empty bins two sketches share.
unsigned shared_bins(const Sketch& a, const Sketch& b);

// For each item, up to `count` other items of the same group sharing at least `min_shared` bins
// with it, most shared first (ties: lower index first, so the answer is deterministic). A bin value
// that more than `max_posting` items of a group share says little and is skipped, which bounds the
// work by items x bins x max_posting whatever the input.
std::vector<std::vector<size_t>> similar_items(const std::vector<Sketch>& sketches, const std::vector<uint32_t>& group, size_t count,
                                               unsigned min_shared = 4, size_t max_posting = 512);

}  // namespace sdm::archive
