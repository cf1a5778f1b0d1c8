#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader: exported by every libzstd >= 1.4
#include "codec.hpp"

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
    return make_error(ErrorCode::corrupt, what + ": zstd: " + ZSTD_getErrorName(code));
}

}  // namespace

Result<ByteVector> zstd_compress(Bytes raw, int level, const CodecReference& reference) {
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
    if (!cctx) return make_error(ErrorCode::out_of_memory, "zstd: cannot create a compression context");
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 0);  // the index carries XXH3 of both sides
    size_t rc = 0;
    if (reference.codec == Codec::zstd_dict)
        rc = ZSTD_CCtx_loadDictionary(cctx.get(), reference.bytes.data(), reference.bytes.size());
    else if (reference.codec == Codec::zstd_prefix)
        rc = ZSTD_CCtx_refPrefix(cctx.get(), reference.bytes.data(), reference.bytes.size());
    if (ZSTD_isError(rc)) return make_error(ErrorCode::invalid_argument, std::string("zstd: ") + ZSTD_getErrorName(rc));
    ByteVector out(ZSTD_compressBound(raw.size()));
    rc = ZSTD_compress2(cctx.get(), out.data(), out.size(), raw.data(), raw.size());
    if (ZSTD_isError(rc)) return make_error(ErrorCode::internal, std::string("zstd: ") + ZSTD_getErrorName(rc));
    out.resize(rc);
    return out;
}

Result<void> zstd_check_frame(Bytes stored, uint64_t raw_size, const CodecReference& reference, const std::string& what) {
    const size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
    if (ZSTD_isError(frame)) return zstd_error(what, frame);
    if (frame != stored.size())
        return make_error(ErrorCode::corrupt, what + ": " + std::to_string(stored.size() - frame) +
                                                  " bytes follow the zstd frame (one frame per payload)");
    ZSTD_frameHeader fh{};
    const size_t hrc = ZSTD_getFrameHeader(&fh, stored.data(), stored.size());
    if (hrc != 0) return make_error(ErrorCode::corrupt, what + ": unreadable zstd frame header");
    if (fh.frameType != ZSTD_frame) return make_error(ErrorCode::corrupt, what + ": a skippable frame, not data");
    if (fh.frameContentSize != raw_size)
        return make_error(ErrorCode::corrupt, what + ": the zstd frame holds " +
                                                  (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("an undeclared number of")
                                                                                                   : std::to_string(fh.frameContentSize)) +
                                                  " bytes, the index says " + std::to_string(raw_size));
    if (fh.windowSize > (1ull << limits::max_window_log))
        return make_error(ErrorCode::corrupt, what + ": zstd window of " + std::to_string(fh.windowSize) +
                                                  " bytes exceeds the limit of " + std::to_string(1ull << limits::max_window_log));
    const uint32_t want_dict = reference.codec == Codec::zstd_dict ? zstd_dictionary_id(reference.bytes) : 0;
    if (fh.dictID != want_dict)
        return make_error(ErrorCode::corrupt, what + ": the zstd frame names dictionary " + std::to_string(fh.dictID) +
                                                  ", the index references " + std::to_string(want_dict));
    return {};
}

Result<void> zstd_decompress(Bytes stored, std::span<std::byte> out, const CodecReference& reference, const std::string& what) {
    SDM_TRY(zstd_check_frame(stored, out.size(), reference, what));
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) return make_error(ErrorCode::out_of_memory, what + ": cannot create a zstd decompression context");
    ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, static_cast<int>(limits::max_window_log));
    size_t rc = 0;
    if (reference.codec == Codec::zstd_dict)
        rc = ZSTD_DCtx_loadDictionary(dctx.get(), reference.bytes.data(), reference.bytes.size());
    else if (reference.codec == Codec::zstd_prefix)
        rc = ZSTD_DCtx_refPrefix(dctx.get(), reference.bytes.data(), reference.bytes.size());
    if (ZSTD_isError(rc)) return zstd_error(what, rc);
    rc = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), stored.data(), stored.size());
    if (ZSTD_isError(rc)) return zstd_error(what, rc);
    if (rc != out.size())
        return make_error(ErrorCode::corrupt, what + ": decompressed to " + std::to_string(rc) + " bytes, expected " +
                                                  std::to_string(out.size()));
    return {};
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
