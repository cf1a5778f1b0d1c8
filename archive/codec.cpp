#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader: exported by every libzstd >= 1.4
#include "codec.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

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

Result<Bytes> ZstdEncoder::compress(Bytes raw, int level, const CodecReference& reference) {
    if (!state_->cctx) state_->cctx.reset(ZSTD_createCCtx());
    ZSTD_CCtx* cctx = state_->cctx.get();
    if (!cctx) return make_error(ErrorCode::out_of_memory, "zstd: cannot create a compression context");
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);  // drops the last call's prefix or dictionary too
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);  // the index carries XXH3 of both sides
    size_t rc = 0;
    if (reference.codec == Codec::zstd_dict)
        rc = ZSTD_CCtx_loadDictionary(cctx, reference.bytes.data(), reference.bytes.size());
    else if (reference.codec == Codec::zstd_prefix)
        rc = ZSTD_CCtx_refPrefix(cctx, reference.bytes.data(), reference.bytes.size());
    if (ZSTD_isError(rc)) return make_error(ErrorCode::invalid_argument, std::string("zstd: ") + ZSTD_getErrorName(rc));
    const size_t bound = ZSTD_compressBound(raw.size());
    try {
        if (state_->out.size() < bound) {
            state_->out.clear();
            state_->out.shrink_to_fit();  // not kept while the larger one is allocated
            state_->out.resize(bound);
        }
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "zstd: cannot allocate " + std::to_string(bound) + " bytes of output");
    }
    rc = ZSTD_compress2(cctx, state_->out.data(), bound, raw.data(), raw.size());
    if (ZSTD_isError(rc)) return make_error(ErrorCode::internal, std::string("zstd: ") + ZSTD_getErrorName(rc));
    if (memory(raw.size(), reference.bytes.size(), level) >= kKeepBelow) {
        // Too large to keep for the small payloads most calls code: the frame moves to a buffer of
        // its own size, and the context goes.
        state_->cctx.reset();
        ByteVector frame(state_->out.begin(), state_->out.begin() + static_cast<std::ptrdiff_t>(rc));
        state_->out = std::move(frame);
        return Bytes(state_->out);
    }
    return Bytes(state_->out).first(rc);
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

Result<void> zstd_check_frame(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    const size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
    if (ZSTD_isError(frame)) return zstd_error(what, frame);
    if (frame != stored.size())
        return make_error(ErrorCode::archive_corrupt, what + ": " + std::to_string(stored.size() - frame) +
                                                  " bytes follow the zstd frame (one frame per payload)");
    ZSTD_frameHeader fh{};
    const size_t hrc = ZSTD_getFrameHeader(&fh, stored.data(), stored.size());
    if (hrc != 0) return make_error(ErrorCode::archive_corrupt, what + ": unreadable zstd frame header");
    if (fh.frameType != ZSTD_frame) return make_error(ErrorCode::archive_corrupt, what + ": a skippable frame, not data");
    if (fh.frameContentSize != raw_size)
        return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame holds " +
                                                  (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("an undeclared number of")
                                                                                                   : std::to_string(fh.frameContentSize)) +
                                                  " bytes, the index says " + std::to_string(raw_size));
    if (fh.windowSize > (1ull << limits::max_window_log))
        return make_error(ErrorCode::archive_corrupt, what + ": zstd window of " + std::to_string(fh.windowSize) +
                                                  " bytes exceeds the limit of " + std::to_string(1ull << limits::max_window_log));
    const uint32_t want_dict = reference.codec == Codec::zstd_dict ? zstd_dictionary_id(reference.bytes) : 0;
    if (fh.dictID != want_dict)
        return make_error(ErrorCode::archive_corrupt, what + ": the zstd frame names dictionary " + std::to_string(fh.dictID) +
                                                  ", the index references " + std::to_string(want_dict));
    return {};
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
