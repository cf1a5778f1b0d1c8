#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader: exported by every libzstd >= 1.4
#include "codec.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <system_error>
#include <thread>

#include <zdict.h>
#include <zstd.h>

namespace sdm::archive {
namespace {

struct CCtxDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

Error zstd_error(const std::string& what, size_t code) {
    return make_error(ErrorCode::archive_corrupt, what + ": zstd: " + ZSTD_getErrorName(code));
}


// The window limit and the reference of the next frame `dctx` decodes.
Result<void> prepare(ZSTD_DCtx* dctx, const CodecReference& reference, const std::string& what) {
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, static_cast<int>(limits::max_window_log));
    size_t rc = 0;
    if (reference.codec == Codec::zstd_dict)
        rc = ZSTD_DCtx_loadDictionary(dctx, reference.bytes.data(), reference.bytes.size());
    else if (reference.codec == Codec::zstd_prefix)
        rc = ZSTD_DCtx_refPrefix(dctx, reference.bytes.data(), reference.bytes.size());
    if (ZSTD_isError(rc)) return zstd_error(what, rc);
    return {};
}

// Frames of at most this many raw bytes decode in one call into a buffer of their size, with the
// calling thread's context: the streaming path's first buffer is this large anyway, and a context
// (about 160 KiB) and stream buffers allocated and freed per payload cost a small image's load
// more than its decoding (measured on the H200: bench/RESULTS.md, issue 17).
constexpr uint64_t kOneShotBytes = uint64_t{1} << 20;
// Larger frames too, where they declare at most this many raw bytes per stored byte: one call
// then writes the image straight into its buffer, where the streaming path fills a window of the
// frame's size and copies it out (a 2 MB cubin stored in 65 KB decoded in 3.9 ms that way on the
// H200). What such a frame can make sdm allocate is bounded by 64 times its real size; a frame
// that claims more (a bomb) takes the streaming path, whose memory follows the bytes it yields.
constexpr uint64_t kOneShotRatio = 64;

Result<ByteVector> decompress_one_shot(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx;
    if (!dctx) dctx.reset(ZSTD_createDCtx());
    if (!dctx) return make_error(ErrorCode::out_of_memory, what + ": cannot create a zstd decompression context");
    ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);  // and the last call's prefix or dictionary
    SDM_TRY(prepare(dctx.get(), reference, what));
    ByteVector out;
    try {
        out.resize(static_cast<size_t>(raw_size));
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, what + ": cannot allocate " + std::to_string(raw_size) + " bytes");
    }
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    ZSTD_inBuffer in{stored.data(), stored.size(), 0};
    // One streaming call with room for the whole output: zstd writes straight into it.
    const size_t rc = ZSTD_decompressStream(dctx.get(), &o, &in);
    if (ZSTD_isError(rc)) return zstd_error(what, rc);
    if (rc != 0 || o.pos != raw_size || in.pos != stored.size())
        return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame does not decode to the " + std::to_string(raw_size) + " bytes it declares");
    return out;
}

}  // namespace

struct ZstdEncoder::State {
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx;
    ByteVector out;
};

ZstdEncoder::ZstdEncoder() : state_(std::make_unique<State>()) {}
ZstdEncoder::~ZstdEncoder() = default;
ZstdEncoder::ZstdEncoder(ZstdEncoder&&) noexcept = default;
ZstdEncoder& ZstdEncoder::operator=(ZstdEncoder&&) noexcept = default;

Result<Bytes> ZstdEncoder::compress(Bytes raw, int level, const CodecReference& reference, size_t frame_bytes) {
    if (!state_->cctx) state_->cctx.reset(ZSTD_createCCtx());
    ZSTD_CCtx* cctx = state_->cctx.get();
    if (!cctx) return make_error(ErrorCode::out_of_memory, "zstd: cannot create a compression context");
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);  // drops the last call's prefix or dictionary too
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);  // the index carries XXH3 of both sides
    size_t rc = 0;
    if (reference.codec == Codec::zstd_dict) rc = ZSTD_CCtx_loadDictionary(cctx, reference.bytes.data(), reference.bytes.size());
    if (ZSTD_isError(rc)) return make_error(ErrorCode::invalid_argument, std::string("zstd: ") + ZSTD_getErrorName(rc));
    if (frame_bytes == 0 || frame_bytes >= raw.size()) frame_bytes = std::max<size_t>(raw.size(), 1);
    size_t bound = 0;
    for (size_t at = 0; at < raw.size() || at == 0; at += frame_bytes) {
        bound += ZSTD_compressBound(std::min(frame_bytes, raw.size() - at));
        if (raw.empty()) break;
    }
    try {
        if (state_->out.size() < bound) {
            state_->out.clear();
            state_->out.shrink_to_fit();  // not kept while the larger one is allocated
            state_->out.resize(bound);
        }
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "zstd: cannot allocate " + std::to_string(bound) + " bytes of output");
    }
    size_t written = 0;
    for (size_t at = 0; at < raw.size() || at == 0; at += frame_bytes) {
        const Bytes chunk = raw.subspan(at, std::min(frame_bytes, raw.size() - at));
        // A prefix serves one frame: referenced again for each (a dictionary stays loaded).
        if (reference.codec == Codec::zstd_prefix) rc = ZSTD_CCtx_refPrefix(cctx, reference.bytes.data(), reference.bytes.size());
        if (ZSTD_isError(rc)) return make_error(ErrorCode::invalid_argument, std::string("zstd: ") + ZSTD_getErrorName(rc));
        rc = ZSTD_compress2(cctx, state_->out.data() + written, bound - written, chunk.data(), chunk.size());
        if (ZSTD_isError(rc)) return make_error(ErrorCode::internal, std::string("zstd: ") + ZSTD_getErrorName(rc));
        written += rc;
        if (raw.empty()) break;
    }
    if (memory(raw.size(), reference.bytes.size(), level) >= kKeepBelow) {
        // Too large to keep for the small payloads most calls code: the frames move to a buffer of
        // their own size, and the context goes.
        state_->cctx.reset();
        ByteVector frames(state_->out.begin(), state_->out.begin() + static_cast<std::ptrdiff_t>(written));
        state_->out = std::move(frames);
        return Bytes(state_->out);
    }
    return Bytes(state_->out).first(written);
}

size_t ZstdEncoder::memory(uint64_t raw_size, uint64_t reference_size, int level) noexcept {
    const ZSTD_compressionParameters p = ZSTD_getCParams(level, raw_size, static_cast<size_t>(reference_size));
    return ZSTD_estimateCCtxSize_usingCParams(p) + ZSTD_compressBound(static_cast<size_t>(raw_size));
}

Result<ByteVector> zstd_compress(Bytes raw, int level, const CodecReference& reference) {
    ZstdEncoder encoder;
    SDM_TRY_GET(frame, encoder.compress(raw, level, reference));
    return ByteVector(frame->begin(), frame->end());
}

namespace {

// One frame's header against what the index and the reference say: a data frame declaring its
// content size (`raw_size`, when given), a window within the limit, the reference's dictionary ID.
Result<uint64_t> check_frame_header(Bytes frame, std::optional<uint64_t> raw_size, const CodecReference& reference, const std::string& what) {
    ZSTD_frameHeader fh{};
    const size_t hrc = ZSTD_getFrameHeader(&fh, frame.data(), frame.size());
    if (hrc != 0) return make_error(ErrorCode::archive_corrupt, what + ": unreadable zstd frame header");
    if (fh.frameType != ZSTD_frame) return make_error(ErrorCode::archive_corrupt, what + ": a skippable frame, not data");
    if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || (raw_size && fh.frameContentSize != *raw_size))
        return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame holds " +
                                                  (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("an undeclared number of")
                                                                                                   : std::to_string(fh.frameContentSize)) +
                                                  " bytes, the index says " + (raw_size ? std::to_string(*raw_size) : std::string("less")));
    if (fh.windowSize > (1ull << limits::max_window_log))
        return make_error(ErrorCode::archive_corrupt, what + ": zstd window of " + std::to_string(fh.windowSize) +
                                                  " bytes exceeds the limit of " + std::to_string(1ull << limits::max_window_log));
    const uint32_t want_dict = reference.codec == Codec::zstd_dict ? zstd_dictionary_id(reference.bytes) : 0;
    if (fh.dictID != want_dict)
        return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame names dictionary " + std::to_string(fh.dictID) +
                                                  ", the index references " + std::to_string(want_dict));
    return static_cast<uint64_t>(fh.frameContentSize);
}

}  // namespace

Result<void> zstd_check_frame(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    const size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
    if (ZSTD_isError(frame)) return zstd_error(what, frame);
    if (frame != stored.size())
        return make_error(ErrorCode::archive_corrupt, what + ": " + std::to_string(stored.size() - frame) +
                                                  " bytes follow the zstd frame (one frame per payload)");
    SDM_TRY(check_frame_header(stored, raw_size, reference, what));
    return {};
}

Result<std::vector<FrameSpan>> zstd_check_frames(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    std::vector<FrameSpan> frames;
    uint64_t at = 0, raw_at = 0;
    while (at < stored.size()) {
        if (frames.size() == limits::max_frames)
            return make_error(ErrorCode::archive_corrupt, what + ": more than " + std::to_string(limits::max_frames) + " zstd frames in one payload");
        const Bytes rest = stored.subspan(static_cast<size_t>(at));
        const size_t size = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
        if (ZSTD_isError(size)) return zstd_error(what + " (frame " + std::to_string(frames.size()) + ")", size);
        SDM_TRY_GET(content, check_frame_header(rest.first(size), std::nullopt, reference, what + " (frame " + std::to_string(frames.size()) + ")"));
        if (*content > raw_size - raw_at)
            return make_error(ErrorCode::archive_corrupt, what + ": its zstd frames hold more than the " + std::to_string(raw_size) +
                                                      " bytes the index says");
        frames.push_back({at, size, raw_at, *content});
        at += size;
        raw_at += *content;
    }
    if (frames.empty()) return make_error(ErrorCode::archive_corrupt, what + ": an empty payload, not a zstd frame");
    if (raw_at != raw_size)
        return make_error(ErrorCode::archive_corrupt, what + ": its zstd frames hold " + std::to_string(raw_at) + " bytes, the index says " +
                                                  std::to_string(raw_size));
    return frames;
}

Result<ByteVector> zstd_decompress(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    SDM_TRY(zstd_check_frame(stored, raw_size, reference, what));
    if (raw_size <= kOneShotBytes || raw_size / kOneShotRatio <= stored.size()) return decompress_one_shot(stored, raw_size, reference, what);
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) return make_error(ErrorCode::out_of_memory, what + ": cannot create a zstd decompression context");
    SDM_TRY(prepare(dctx.get(), reference, what));
    // The output grows as the frame decodes, its capacity four times at a time, each chunk touched
    // just before zstd writes it: memory follows the bytes the frame really yields. A frame that
    // only claims a large size fails at its first bad block having cost a few times its own size,
    // not the size it claimed; a real one of n bytes costs at most about 1.25 n at the last growth.
    constexpr size_t kFirstCapacity = size_t{1} << 20;
    ByteVector out;
    const auto grow = [&](size_t capacity) -> Result<void> {
        try {
            out.reserve(static_cast<size_t>(std::min<uint64_t>(raw_size, capacity)));
        } catch (const std::bad_alloc&) {
            return make_error(ErrorCode::out_of_memory, what + ": cannot allocate " + std::to_string(raw_size) + " bytes");
        }
        return {};
    };
    SDM_TRY(grow(std::max(kFirstCapacity, stored.size() * 8)));
    ZSTD_inBuffer in{stored.data(), stored.size(), 0};
    const size_t chunk = ZSTD_DStreamOutSize();
    while (true) {
        if (out.size() == out.capacity() && out.size() < raw_size) SDM_TRY(grow(out.capacity() * 4));
        const size_t at = out.size(), consumed = in.pos;
        out.resize(static_cast<size_t>(std::min<uint64_t>({raw_size, at + chunk, out.capacity()})));
        ZSTD_outBuffer o{out.data(), out.size(), at};
        const size_t rc = ZSTD_decompressStream(dctx.get(), &o, &in);
        if (ZSTD_isError(rc)) return zstd_error(what, rc);
        out.resize(o.pos);
        if (rc == 0) break;  // the frame is complete
        if (o.pos == at && in.pos == consumed)  // no progress: out of input, or wanting room past raw_size
            return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame does not decode to the " + std::to_string(raw_size) + " bytes it declares");
    }
    if (out.size() != raw_size)
        return make_error(ErrorCode::archive_corrupt, what + ": decompressed to " + std::to_string(out.size()) + " bytes, expected " + std::to_string(raw_size));
    return out;
}

namespace {

// Decodes `frames` of `stored` into `out` (their raw_size bytes each, at their raw_offset): frame
// after frame from an atomic counter, on the calling thread and up to threads - 1 more. Each
// thread has its own context; a dictionary is digested once for all of them.
Result<void> decode_frames_into(Bytes stored, const std::vector<FrameSpan>& frames, ByteVector& out, const CodecReference& reference,
                                const std::string& what, unsigned threads) {
    std::unique_ptr<ZSTD_DDict, decltype(&ZSTD_freeDDict)> ddict(nullptr, ZSTD_freeDDict);
    if (reference.codec == Codec::zstd_dict) {
        ddict.reset(ZSTD_createDDict_advanced(reference.bytes.data(), reference.bytes.size(), ZSTD_dlm_byRef, ZSTD_dct_auto, ZSTD_defaultCMem));
        if (!ddict) return make_error(ErrorCode::archive_corrupt, what + ": its zstd dictionary cannot be loaded");
    }
    std::atomic<size_t> next{0};
    std::mutex failure_mutex;
    std::optional<Error> failure;
    const auto fail = [&](Error e) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::move(e);
        next.store(frames.size());  // the others stop at their next frame
    };
    const auto work = [&] {
        std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
        if (!dctx) return fail(make_error(ErrorCode::out_of_memory, what + ": cannot create a zstd decompression context"));
        for (size_t f; (f = next.fetch_add(1)) < frames.size();) {
            const FrameSpan& span = frames[f];
            ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);
            ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, static_cast<int>(limits::max_window_log));
            size_t rc = 0;
            if (ddict) rc = ZSTD_DCtx_refDDict(dctx.get(), ddict.get());
            else if (reference.codec == Codec::zstd_prefix) rc = ZSTD_DCtx_refPrefix(dctx.get(), reference.bytes.data(), reference.bytes.size());
            if (ZSTD_isError(rc)) return fail(zstd_error(what, rc));
            ZSTD_outBuffer o{out.data() + span.raw_offset, static_cast<size_t>(span.raw_size), 0};
            ZSTD_inBuffer in{stored.data() + span.stored_offset, static_cast<size_t>(span.stored_size), 0};
            rc = ZSTD_decompressStream(dctx.get(), &o, &in);
            if (ZSTD_isError(rc)) return fail(zstd_error(what + " (frame " + std::to_string(f) + ")", rc));
            if (rc != 0 || o.pos != span.raw_size || in.pos != span.stored_size)
                return fail(make_error(ErrorCode::archive_corrupt, what + ": zstd frame " + std::to_string(f) + " does not decode to the " +
                                                                   std::to_string(span.raw_size) + " bytes it declares"));
        }
    };
    std::vector<std::thread> helpers;
    const size_t extra = std::min<size_t>(threads > 0 ? threads - 1 : 0, frames.size() - 1);
    for (size_t t = 0; t < extra; ++t) {
        try {
            helpers.emplace_back(work);
        } catch (const std::system_error&) {
            break;  // no thread to be had: the calling thread decodes the rest
        }
    }
    work();
    for (auto& h : helpers) h.join();
    if (failure) return std::move(*failure);
    return {};
}

}  // namespace

unsigned default_decode_threads() noexcept {
    const unsigned cores = std::thread::hardware_concurrency();
    return std::clamp(cores, 1u, 8u);
}

Result<ByteVector> zstd_decompress_frames(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what, unsigned threads) {
    SDM_TRY_GET(frames, zstd_check_frames(stored, raw_size, reference, what));
    if (frames->size() == 1) return zstd_decompress(stored, raw_size, reference, what);
    if (raw_size > kOneShotBytes && raw_size / kOneShotRatio > stored.size()) {
        // More than the one-shot ratio allows: frame by frame, memory following each frame's real
        // output (zstd_decompress's streaming path), as a single frame of that size would.
        ByteVector out;
        for (size_t f = 0; f < frames->size(); ++f) {
            const FrameSpan& span = (*frames)[f];
            SDM_TRY_GET(part, zstd_decompress(stored.subspan(static_cast<size_t>(span.stored_offset), static_cast<size_t>(span.stored_size)),
                                              span.raw_size, reference, what + " (frame " + std::to_string(f) + ")"));
            out.insert(out.end(), part->begin(), part->end());
        }
        return out;
    }
    ByteVector out;
    try {
        out.resize(static_cast<size_t>(raw_size));
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, what + ": cannot allocate " + std::to_string(raw_size) + " bytes");
    }
    SDM_TRY(decode_frames_into(stored, *frames, out, reference, what, threads == 0 ? default_decode_threads() : threads));
    return out;
}

uint32_t zstd_dictionary_id(Bytes dictionary) noexcept {
    return ZDICT_getDictID(dictionary.data(), dictionary.size());
}

ByteVector zstd_train_dictionary(const std::vector<Bytes>& samples, size_t capacity) {
    ByteVector joined;
    std::vector<size_t> sizes;
    for (const Bytes s : samples) {
        joined.insert(joined.end(), s.begin(), s.end());
        sizes.push_back(s.size());
    }
    ByteVector dictionary(capacity);
    const size_t rc = ZDICT_trainFromBuffer(dictionary.data(), dictionary.size(), joined.data(), sizes.data(),
                                            static_cast<unsigned>(sizes.size()));
    if (ZDICT_isError(rc)) return {};
    dictionary.resize(rc);
    return dictionary;
}

}  // namespace sdm::archive
