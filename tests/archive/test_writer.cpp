// The writer's memory model: inputs read through a source when the writer needs them (an image
// kept compressed as its fatbin stored it), a work budget that bounds the encoders in flight, and
// the sketches that pick which entries to try as each other's prefix. None of them may change a
// byte of the output.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>

#include "archive/archive.hpp"
#include "archive/similarity.hpp"
#include "support.hpp"
#include "archive/verify.hpp"
#include "archive/writer.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

// Gives `bytes` on every read, counting the reads; from read number `shrink_at` on, one byte fewer.
class CountingSource final : public RawSource {
public:
    explicit CountingSource(ByteVector bytes, size_t shrink_at = SIZE_MAX) : bytes_(std::move(bytes)), shrink_at_(shrink_at) {}
    uint64_t size() const noexcept override { return bytes_.size(); }
    Result<Bytes> read(ByteVector& scratch) const override {
        const size_t n = reads_++;
        scratch = bytes_;  // decoded into the writer's buffer, as a compressed source does
        if (n >= shrink_at_) scratch.pop_back();
        return Bytes(scratch);
    }
    size_t reads() const { return reads_; }

private:
    ByteVector bytes_;
    size_t shrink_at_;
    mutable std::atomic<size_t> reads_{0};
};

ByteVector write(std::vector<WriterInput> inputs, const WriterOptions& options = {}) {
    ArchiveWriter writer(options);
    for (auto& in : inputs) REQUIRE(writer.add(std::move(in)));
    auto bytes = writer.finish();
    if (!bytes) FAIL(bytes.error().message);
    return std::move(*bytes);
}

ByteVector random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    ByteVector out(n);
    for (auto& b : out) b = std::byte(static_cast<uint8_t>(rng()));
    return out;
}

}  // namespace

TEST_CASE("inputs read through a source give the archive their bytes give", "[archive][writer]") {
    const ByteVector expected = write(test::test_inputs());
    std::vector<WriterInput> inputs = test::test_inputs();
    std::vector<std::shared_ptr<CountingSource>> sources;
    for (auto& in : inputs) {
        if (in.kind == Kind::manifest) continue;
        sources.push_back(std::make_shared<CountingSource>(std::move(in.bytes)));
        in.bytes.clear();
        in.source = sources.back();
    }
    CHECK(write(std::move(inputs)) == expected);
    for (const auto& s : sources) {
        // Read when checked, coded, tried against others and laid out; never held in between.
        CHECK(s->reads() >= 2);
        CHECK(s->reads() < 40);
    }
    const Archive a = Archive::open_memory(expected, "test.sdma").value();
    CHECK(verify_archive(a));
}

TEST_CASE("a source whose bytes change while the archive is written is named and nothing is written", "[archive][writer]") {
    std::vector<WriterInput> inputs = test::test_inputs();
    for (auto& in : inputs)
        if (in.kind == Kind::cubin && in.sm == 80) {
            in.source = std::make_shared<CountingSource>(std::move(in.bytes), 1);  // add() reads it whole; the writer's read is short
            in.bytes.clear();
        }
    ArchiveWriter writer;
    for (auto& in : inputs) REQUIRE(writer.add(std::move(in)));
    auto bytes = writer.finish();
    REQUIRE_FALSE(bytes);
    CHECK_THAT(bytes.error().message, Catch::Contains("entry kernels (sm_80)") && Catch::Contains("did the input file change"));
}

TEST_CASE("a source is for an image's bytes only", "[archive][writer]") {
    ArchiveWriter writer;
    WriterInput in = test::test_inputs().front();
    in.source = std::make_shared<CountingSource>(in.bytes);
    CHECK_THAT(writer.add(in).error().message, Catch::Contains("not beside them"));
}

TEST_CASE("the work budget and the thread count change when, not what, the writer codes", "[archive][writer]") {
    WriterOptions one;
    one.threads = 1;
    const ByteVector expected = write(test::test_inputs(), one);
    WriterOptions tight;
    tight.threads = 4;
    tight.work_memory = 1;  // every payload waits for the one before: one at a time
    CHECK(write(test::test_inputs(), tight) == expected);
    WriterOptions wide;
    wide.threads = 8;
    CHECK(write(test::test_inputs(), wide) == expected);
}

TEST_CASE("sketches rank payloads by what they share, not by size", "[archive][similarity]") {
    const ByteVector a = random_bytes(64 << 10, 1);
    ByteVector a_edited = a;  // a few scattered edits: nearly all shingles survive
    for (size_t at = 1000; at < a_edited.size(); at += 9000) a_edited[at] ^= std::byte{0x5a};
    ByteVector half = random_bytes(32 << 10, 2);  // the second half of `a` after new bytes
    half.insert(half.end(), a.begin() + (32 << 10), a.end());
    const ByteVector same_size = random_bytes(64 << 10, 3);  // the size of `a`, nothing in common
    const std::vector<Sketch> sketches{sketch_of(a), sketch_of(a_edited), sketch_of(half), sketch_of(same_size)};
    CHECK(shared_bins(sketches[0], sketches[0]) == kSketchBins);
    CHECK(shared_bins(sketches[0], sketches[1]) > kSketchBins * 3 / 4);
    CHECK(shared_bins(sketches[0], sketches[3]) < 4);
    const auto similar = similar_items(sketches, {0, 0, 0, 0}, 3);
    REQUIRE(similar[0].size() == 2);  // the unrelated one shares too little to be tried
    CHECK(similar[0][0] == 1);
    CHECK(similar[0][1] == 2);
    CHECK(similar[3].empty());
    // Another group is never a candidate, however alike.
    CHECK(similar_items(sketches, {0, 1, 1, 1}, 3)[0].empty());
    // A payload too small for a shingle has an empty sketch and no candidates.
    const std::vector<Sketch> tiny{sketch_of(ByteVector(4)), sketch_of(ByteVector(4))};
    CHECK(similar_items(tiny, {0, 0}, 3)[0].empty());
}

TEST_CASE("prefix coding finds the same kernels in another module", "[archive][writer]") {
    // One module's sm_90 cubin again as a second module, among other modules' cubins: the sketch
    // puts the copy first among the candidates, so one of the two is coded against the other.
    std::vector<WriterInput> inputs;
    const ByteVector kernels = test::data_file("kernels.sm_90.cubin");
    inputs.push_back({"first", Kind::cubin, 90, Variant::base, kernels, {}});
    inputs.push_back({"other", Kind::cubin, 90, Variant::base, test::data_file("templates.sm_90.cubin"), {}});
    inputs.push_back({"long", Kind::cubin, 90, Variant::base, test::data_file("kernels_long.sm_90.cubin"), {}});
    inputs.push_back({"second", Kind::cubin, 90, Variant::base, kernels, {}});
    const ByteVector bytes = write(std::move(inputs));
    const Archive a = Archive::open_memory(bytes, "test.sdma").value();
    const Entry& first = a.entries()[a.find("first", Kind::cubin, 90, Variant::base).value()];
    const Entry& second = a.entries()[a.find("second", Kind::cubin, 90, Variant::base).value()];
    const Entry& referrer = first.codec == Codec::zstd_prefix ? first : second;
    REQUIRE(referrer.codec == Codec::zstd_prefix);
    CHECK(a.entries()[referrer.ref].name == (&referrer == &first ? "second" : "first"));
    CHECK(referrer.stored_size < 64);
    CHECK(verify_archive(a));
}
