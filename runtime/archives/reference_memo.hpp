// The decoded prefix bases and dictionaries of one mounted archive, kept while the entries that
// reference them load: a library imported with cross-module prefix coding (190 of cuBLASLt's 221
// sm_90 cubins reference one of 31 bases) decodes each base once, not once per module that
// references it. Bounded by bytes: the least recently used go first.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <utility>

#include "archive/archive.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class ReferenceMemo {
public:
    explicit ReferenceMemo(size_t max_bytes = size_t{64} << 20) : max_bytes_(max_bytes) {}

    // The verified raw bytes of entry `index` of `archive`, decoded on a miss. A reference larger
    // than the whole bound is decoded and handed out, not kept. `threads`: Archive::read's.
    Result<std::shared_ptr<const ByteVector>> get(const archive::Archive& archive, size_t index, unsigned threads = 0);
    // The verified raw bytes of entry `index`, its reference (if it has one that is not stored)
    // taken from here.
    Result<ByteVector> read(const archive::Archive& archive, size_t index, unsigned threads = 0);
    // The decoded references it keeps, in bytes (for the footprint report).
    uint64_t held_bytes() {
        std::lock_guard lock(mutex_);
        return bytes_;
    }

private:
    const size_t max_bytes_;
    std::mutex mutex_;
    size_t bytes_{0};
    std::list<std::pair<size_t, std::shared_ptr<const ByteVector>>> kept_;  // most recently used first
};

}  // namespace sdm::runtime
