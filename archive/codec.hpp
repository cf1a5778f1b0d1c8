// zstd frames as the format uses them: one frame per payload (or, in an archive with
// kFeatureFrames, several one after another), each with its content size recorded in the frame
// header, its window no larger than limits::max_window_log, its dictionary ID the referenced
// dictionary's (or none). Decompression validates all of that before writing a byte.
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
    // One frame of `raw` (frame_bytes 0), or frames of frame_bytes raw bytes each (the last one
    // shorter), each coded against `reference`; the view lasts until the next call. A context and buffer of more than
    // kKeepBelow bytes are freed after the call rather than kept for the next.
    Result<Bytes> compress(Bytes raw, int level, const CodecReference& reference, size_t frame_bytes = 0);
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

// A payload of several frames (kFeatureFrames): where each frame lies in the payload and in the
// raw bytes.
struct FrameSpan {
    uint64_t stored_offset{0}, stored_size{0}, raw_offset{0}, raw_size{0};
};
// Walks `stored`'s frames (headers and block headers only, nothing decoded or allocated but the
// list): at most limits::max_frames, each a data frame declaring its content size, with a window
// within the limit and `reference`'s dictionary ID, together declaring exactly `raw_size` bytes.
Result<std::vector<FrameSpan>> zstd_check_frames(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what);
// zstd_check_frames, then decodes: one frame as zstd_decompress does; several into one buffer of
// `raw_size` bytes, frames spread over up to `threads` threads (the calling one and threads - 1
// started for the call and joined before it returns; 0: default_decode_threads()). A payload that
// declares more than the one-shot ratio allows decodes frame by frame on the calling thread, its
// memory following the bytes it yields.
Result<ByteVector> zstd_decompress_frames(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what,
                                          unsigned threads = 0);
// The machine's hardware threads, from 1 to 8.
unsigned default_decode_threads() noexcept;

// The dictionary ID a zstd dictionary declares (0: a raw-content dictionary).
uint32_t zstd_dictionary_id(Bytes dictionary) noexcept;

// Trains a zstd dictionary of at most `capacity` bytes over the samples; empty when training fails
// (too few or too small samples), which the packer treats as "no dictionary".
ByteVector zstd_train_dictionary(const std::vector<Bytes>& samples, size_t capacity);

}  // namespace sdm::archive
