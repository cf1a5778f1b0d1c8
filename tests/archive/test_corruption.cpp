// Exhaustive damage: every single-byte flip and every truncation of a small archive holding every
// kind and codec either fails to open or fails verification with a message naming the archive.
// verify_archive is exactly what `sdm verify` runs.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "archive/verify.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {
std::string open_or_verify_error(Bytes bytes) {
    auto a = Archive::open_memory(bytes, "flipped.sdma");
    if (!a) return a.error().message;
    auto v = verify_archive(*a);
    return v ? std::string() : v.error().message;
}
}  // namespace

TEST_CASE("every single-byte flip is detected", "[corruption]") {
    WriterOptions o;
    o.store_cubins = true;  // stored, zstd and prefix entries side by side
    const ByteVector good = test::build_archive(o);
    REQUIRE(open_or_verify_error(good).empty());
    size_t detected = 0;
    ByteVector b = good;
    for (size_t i = 0; i < b.size(); ++i) {
        b[i] ^= std::byte{0xff};
        const std::string error = open_or_verify_error(b);
        b[i] ^= std::byte{0xff};
        if (error.empty()) FAIL("flipping byte " << i << " of " << b.size() << " went unnoticed");
        if (error.find("flipped.sdma") == std::string::npos) FAIL("the message for byte " << i << " does not name the archive: " << error);
        ++detected;
    }
    CHECK(detected == good.size());
    // Single-bit flips in the header and index, where a bit means most.
    const size_t meta_end = load_u64(good, header::strings_offset) + load_u64(good, header::strings_size);
    for (size_t i = 0; i < meta_end; ++i)
        for (int bit = 0; bit < 8; ++bit) {
            b[i] ^= std::byte(1 << bit);
            if (open_or_verify_error(b).empty()) FAIL("flipping bit " << bit << " of byte " << i << " went unnoticed");
            b[i] ^= std::byte(1 << bit);
        }
}

TEST_CASE("every truncation is refused at open", "[corruption]") {
    const ByteVector good = test::build_archive();
    for (size_t n = 0; n < good.size(); ++n) {
        const std::string error = test::open_error(Bytes(good).first(n));
        if (error.empty()) FAIL("a truncation to " << n << " bytes opened");
        if (n >= 128 && error.find("truncated") == std::string::npos) FAIL("truncation to " << n << ": " << error);
    }
}
