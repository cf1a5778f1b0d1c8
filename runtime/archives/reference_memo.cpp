#include "reference_memo.hpp"

namespace sdm::runtime {

Result<std::shared_ptr<const ByteVector>> ReferenceMemo::get(const archive::Archive& archive, size_t index, unsigned threads) {
    {
        std::lock_guard lock(mutex_);
        for (auto it = kept_.begin(); it != kept_.end(); ++it)
            if (it->first == index) {
                kept_.splice(kept_.begin(), kept_, it);
                return it->second;
            }
    }
    // Decoded outside the lock: two threads missing at once both decode, and the second keeps its own.
    SDM_TRY_GET(raw, archive.read(index, threads));
    auto shared = std::make_shared<const ByteVector>(std::move(*raw));
    if (shared->size() > max_bytes_) return shared;
    std::lock_guard lock(mutex_);
    for (const auto& [i, bytes] : kept_)
        if (i == index) return bytes;
    kept_.emplace_front(index, shared);
    bytes_ += shared->size();
    while (bytes_ > max_bytes_) {
        bytes_ -= kept_.back().second->size();
        kept_.pop_back();
    }
    return shared;
}

Result<ByteVector> ReferenceMemo::read(const archive::Archive& archive, size_t index, unsigned threads) {
    if (index >= archive.entries().size()) return archive.read(index);  // its error
    const archive::Entry& e = archive.entries()[index];
    const bool references = e.codec == archive::Codec::zstd_dict || e.codec == archive::Codec::zstd_prefix;
    if (!references || archive.entries()[e.ref].codec == archive::Codec::stored) return archive.read(index, threads);
    SDM_TRY_GET(base, get(archive, e.ref, threads));
    return archive.read_against(index, **base, threads);
}

}  // namespace sdm::runtime
