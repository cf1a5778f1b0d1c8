// zstd frames as the format uses them: exactly one frame per payload, its content size recorded
// in the frame header, its window no larger than limits::max_window_log, its dictionary ID the
// referenced dictionary's (or none). Decompression validates all of that before writing a byte.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bytes.hpp"
#include "format.hpp"
#include "result.hpp"

namespace sdm::archive {

// How a frame references other bytes: not at all, a zstd dictionary, or a raw prefix.
struct CodecReference {
    Codec codec{Codec::zstd};
    Bytes bytes{};  // the dictionary (zstd_dict) or the prefix (zstd_prefix)
};

Result<ByteVector> zstd_compress(Bytes raw, int level, const CodecReference& reference);

// Checks, without allocating or decoding, that `stored` is exactly one zstd frame that declares
// `raw_size` bytes of content, a window within limits::max_window_log and the dictionary ID of
// `reference`. `what` names the payload in messages.
Result<void> zstd_check_frame(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what);
// zstd_check_frame, then decompresses the frame's `raw_size` bytes. Memory grows with the output
// the frame yields, not with the size it declares.
Result<ByteVector> zstd_decompress(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what);

// The dictionary ID a zstd dictionary declares (0: a raw-content dictionary).
uint32_t zstd_dictionary_id(Bytes dictionary) noexcept;

// Trains a zstd dictionary of at most `capacity` bytes over the samples; empty when training fails
// (too few or too small samples), which the packer treats as "no dictionary".
ByteVector zstd_train_dictionary(const std::vector<Bytes>& samples, size_t capacity);

}  // namespace sdm::archive
