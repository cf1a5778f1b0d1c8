// Entries coded in several zstd frames (format feature kFeatureFrames): the writer frames large
// images, the reader decodes their frames on several threads into one buffer, and every hostile
// framing is refused before a byte is written, with a message naming the entry and the frame.
#include <catch2/catch.hpp>

#include <random>

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_frameHeaderSize
#include <zstd.h>

#include "archive/codec.hpp"
#include "archive/verify.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

// Bytes that compress as cubins do (repeated instruction-like words, some noise), `n` of them.
ByteVector compressible(size_t n, unsigned seed = 1) {
    std::mt19937 rng(seed);
    ByteVector b(n);
    for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>((i % 64 < 48) ? (i * 7) & 0xff : rng() & 0xff));
    return b;
}

ByteVector concat(const std::vector<ByteVector>& parts) {
    ByteVector out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// One frame as plain zstd writes it, with or without its content size in the header.
ByteVector frame_of(Bytes raw, bool content_size = true) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
    ByteVector out(ZSTD_compressBound(raw.size()));
    const size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
    ZSTD_freeCCtx(c);
    REQUIRE(!ZSTD_isError(n));
    out.resize(n);
    return out;
}


}  // namespace

TEST_CASE("frames: the encoder cuts an image into frames that decode alike on one thread or several", "[archive][frames]") {
    const ByteVector raw = compressible(3 * 1024 * 1024 + 12345);
    const ByteVector base = compressible(512 * 1024, 7);
    const CodecReference plain{Codec::zstd, {}}, prefix{Codec::zstd_prefix, Bytes(base)};
    for (const auto* reference : {&plain, &prefix}) {
        ZstdEncoder encoder;
        auto coded = encoder.compress(raw, 3, *reference, 1024 * 1024);
        REQUIRE(coded);
        const ByteVector stored(coded->begin(), coded->end());
        auto frames = zstd_check_frames(stored, raw.size(), *reference, "entry x");
        REQUIRE(frames);
        REQUIRE(frames->size() == 4);
        CHECK((*frames)[3].raw_size == 12345);
        for (unsigned threads : {1u, 2u, 4u, 16u}) {
            auto decoded = zstd_decompress_frames(stored, raw.size(), *reference, "entry x", threads);
            REQUIRE(decoded);
            CHECK(*decoded == raw);
        }
        // A reader of one frame per payload (an archive without kFeatureFrames) refuses it.
        CHECK_THAT(zstd_decompress(stored, raw.size(), *reference, "entry x").error().message,
                   Catch::Contains("bytes follow the zstd frame (one frame per payload)"));
    }
    SECTION("a dictionary is shared by every frame") {
        std::vector<Bytes> samples;
        std::vector<ByteVector> sample_bytes;
        for (unsigned s = 0; s < 64; ++s) sample_bytes.push_back(compressible(4096, s));
        for (const auto& s : sample_bytes) samples.push_back(s);
        const ByteVector dictionary = zstd_train_dictionary(samples, 16384);
        REQUIRE(!dictionary.empty());
        const CodecReference dict{Codec::zstd_dict, Bytes(dictionary)};
        ZstdEncoder encoder;
        auto coded = encoder.compress(raw, 3, dict, 700 * 1024);
        REQUIRE(coded);
        const ByteVector stored(coded->begin(), coded->end());
        auto decoded = zstd_decompress_frames(stored, raw.size(), dict, "entry x", 3);
        REQUIRE(decoded);
        CHECK(*decoded == raw);
        CHECK_THAT(zstd_decompress_frames(stored, raw.size(), plain, "entry x").error().message, Catch::Contains("names dictionary"));
    }
}

TEST_CASE("frames: hostile framings are refused before anything is decoded", "[archive][frames][hostile]") {
    const ByteVector a = compressible(200000, 1), b = compressible(300000, 2);
    const ByteVector fa = frame_of(a), fb = frame_of(b);
    const CodecReference plain{Codec::zstd, {}};
    const auto error = [&](const ByteVector& stored, uint64_t raw_size) {
        auto r = zstd_decompress_frames(stored, raw_size, plain, "entry k", 4);
        return r ? std::string() : r.error().message;
    };
    CHECK(error(concat({fa, fb}), a.size() + b.size()).empty());
    CHECK_THAT(error(concat({fa, fb}), a.size() + b.size() + 1), Catch::Contains("its zstd frames hold 500000 bytes, the index says 500001"));
    CHECK_THAT(error(concat({fa, fb}), a.size() + 10), Catch::Contains("hold more than the 200010 bytes the index says"));
    CHECK_THAT(error(concat({fa, frame_of(b, false)}), a.size() + b.size()), Catch::Contains("(frame 1): the zstd frame holds an undeclared number of"));
    // A skippable frame between two data frames.
    ByteVector skippable{std::byte{0x50}, std::byte{0x2a}, std::byte{0x4d}, std::byte{0x18}, std::byte{4}, std::byte{0}, std::byte{0}, std::byte{0},
                         std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    CHECK_THAT(error(concat({fa, skippable, fb}), a.size() + b.size()), Catch::Contains("a skippable frame, not data"));
    // Trailing bytes that are no frame.
    CHECK_THAT(error(concat({fa, fb, ByteVector(7, std::byte{0})}), a.size() + b.size()), Catch::Contains("entry k (frame 2): zstd:"));
    // More frames than limits::max_frames, each an empty frame of 9 bytes.
    const ByteVector empty = frame_of({});
    std::vector<ByteVector> many(limits::max_frames + 1, empty);
    CHECK_THAT(error(concat(many), 0), Catch::Contains("more than 4096 zstd frames in one payload"));
    many.pop_back();
    CHECK(error(concat(many), 0).empty());
    CHECK_THAT(error({}, 0), Catch::Contains("an empty payload, not a zstd frame"));
    // A damaged block in the second of three frames, decoded by several threads: an error naming
    // that frame, the others' work discarded.
    // (Its first block header made a reserved block type: damaged literals would decode, wrong,
    // with no error here; the entry's XXH3 catches those.)
    ByteVector damaged = concat({fa, fb, fa});
    const size_t block = fa.size() + ZSTD_frameHeaderSize(fb.data(), fb.size());
    damaged[block] = std::byte{0x07};
    const std::string message = error(damaged, 2 * a.size() + b.size());
    CHECK_THAT(message, Catch::Contains("entry k") && Catch::Contains("frame 1"));
}

TEST_CASE("frames: a bomb of frames decodes frame by frame, memory following what it yields", "[archive][frames][hostile]") {
    // Two frames of 4 MiB of zeros each, a few hundred bytes stored: past the one-shot ratio, so
    // nothing of the declared size is allocated up front; the frames are real and decode.
    const ByteVector zeros(4 << 20, std::byte{0});
    const ByteVector fz = frame_of(zeros);
    const CodecReference plain{Codec::zstd, {}};
    auto decoded = zstd_decompress_frames(concat({fz, fz}), 2 * zeros.size(), plain, "entry z", 4);
    REQUIRE(decoded);
    CHECK(decoded->size() == 2 * zeros.size());
    // The second frame truncated: the error names it.
    ByteVector cut = concat({fz, fz});
    cut.resize(cut.size() - 3);
    CHECK_THAT(zstd_decompress_frames(cut, 2 * zeros.size(), plain, "entry z", 4).error().message, Catch::Contains("entry z (frame 1)"));
}

TEST_CASE("frames: the writer frames large images and marks the archive; readers decode them", "[archive][frames]") {
    WriterOptions o;
    o.frame_bytes = 1024;  // the test kernels' images are a few KB: several frames each
    const ByteVector bytes = test::build_archive(o);
    auto a = Archive::open_memory(bytes, "framed.sdma");
    REQUIRE(a);
    CHECK((a->header().required_features & kFeatureFrames) != 0);
    size_t framed = 0;
    for (const WriterInput& in : test::test_inputs()) {
        if (in.kind == Kind::manifest) continue;
        const auto index = a->find(in.name, in.kind, in.sm, in.variant);
        REQUIRE(index);
        auto raw = a->read(*index);
        REQUIRE(raw);
        CHECK(*raw == in.bytes);
        const Entry& e = a->entries()[*index];
        if (e.codec != Codec::stored && e.raw_size > 1024) {
            const Bytes stored = Bytes(bytes).subspan(e.data_offset, e.stored_size);
            ByteVector reference_bytes;
            if (e.codec == Codec::zstd_prefix) reference_bytes = a->read(e.ref).value();
            if (e.codec == Codec::zstd_dict) reference_bytes = a->read(e.ref).value();
            auto frames = zstd_check_frames(stored, e.raw_size, {e.codec, Bytes(reference_bytes)}, "x");
            REQUIRE(frames);
            CHECK(frames->size() == (e.raw_size + 1023) / 1024);
            ++framed;
        }
    }
    CHECK(framed > 0);
    CHECK(verify_archive(*a));
    SECTION("without the feature bit, a reader takes a payload for one frame and refuses the rest") {
        ByteVector b = bytes;
        store_u64(b, header::required_features, load_u64(b, header::required_features) & ~kFeatureFrames);
        test::reseal(b);
        auto plain = Archive::open_memory(b, "unmarked.sdma");
        REQUIRE(plain);
        bool refused = false;
        for (size_t i = 0; i < plain->entries().size(); ++i) {
            const Entry& e = plain->entries()[i];
            if (e.codec == Codec::zstd && e.raw_size > 1024) {
                CHECK_THAT(plain->read(i).error().message, Catch::Contains("one frame per payload"));
                refused = true;
            }
        }
        CHECK(refused);
    }
    SECTION("no frames without frame_bytes, and no feature bit") {
        const ByteVector plain_bytes = test::build_archive();
        auto plain = Archive::open_memory(plain_bytes, "plain.sdma");
        REQUIRE(plain);
        CHECK((plain->header().required_features & kFeatureFrames) == 0);
    }
}
