// zstd frames as the format uses them: exactly one frame per payload, its content size recorded
// in the frame header, its window no larger than limits::max_window_log, its dictionary ID the
// referenced dictionary's (or none). Decompression validates all of that before writing a byte.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "common/result.hpp"

namespace sdm::archive {

// How a frame references other bytes: not at all, a zstd dictionary, or a raw prefix.
struct CodecReference {
    Codec codec{Codec::zstd};
    Bytes bytes{};  // the dictionary (zstd_dict) or the prefix (zstd_prefix)
};

// One thread's zstd encoder: its compression context and output buffer are reused from call to
// call (a level-19 context is tens of MiB to set up), so a writer's memory is one context and one
// buffer per thread however many payloads it codes.
class ZstdEncoder {
public:
    ZstdEncoder();
    ~ZstdEncoder();
    ZstdEncoder(const ZstdEncoder&) = delete;
    ZstdEncoder& operator=(const ZstdEncoder&) = delete;
    ZstdEncoder(ZstdEncoder&&) noexcept;
    ZstdEncoder& operator=(ZstdEncoder&&) noexcept;
    // One frame of `raw`; the view lasts until the next call. A context and buffer of more than
    // kKeepBelow bytes are freed after the call rather than kept for the next.
    Result<Bytes> compress(Bytes raw, int level, const CodecReference& reference);
    // The memory compress() takes for `raw_size` bytes against `reference_size` bytes of
    // reference: the context zstd sizes for them, and the output buffer.
    static size_t memory(uint64_t raw_size, uint64_t reference_size, int level) noexcept;
    static constexpr size_t kKeepBelow = size_t{16} << 20;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// One frame of `raw` in a vector of exactly its size.
Result<ByteVector> zstd_compress(Bytes raw, int level, const CodecReference& reference);

// Checks, without allocating or decoding, that `stored` is exactly one zstd frame that declares
// `raw_size` bytes of content, a window within limits::max_window_log and the dictionary ID of
// `reference`. `what` names the payload in messages.
Result<void> zstd_check_frame(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what);
// zstd_check_frame, then decompresses the frame's `raw_size` bytes. Up to 1 MiB, into one buffer
// of that size with the thread's reused context; past it, memory grows with the output the frame
// yields, not with the size it declares.
Result<ByteVector> zstd_decompress(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what);

// The dictionary ID a zstd dictionary declares (0: a raw-content dictionary).
uint32_t zstd_dictionary_id(Bytes dictionary) noexcept;

// Trains a zstd dictionary of at most `capacity` bytes over the samples; empty when training fails
// (too few or too small samples), which the packer treats as "no dictionary".
ByteVector zstd_train_dictionary(const std::vector<Bytes>& samples, size_t capacity);

}  // namespace sdm::archive
