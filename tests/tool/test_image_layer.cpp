// The image variant's tar layer (tools/oci/image_layer.cpp), byte for byte: the ustar headers a
// container runtime's unpacker reads (the fields at their POSIX offsets, octal digits ended by a
// space and a NUL, as libarchive writes them), the fixed times, owners
// and modes that make the same archive push the same digest, and the pax size record of an archive
// of 8 GiB or more (ustar's size field holds 11 octal digits: at most 8 GiB - 1).
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <cstring>
#include <string>

#include "oci/image_layer.hpp"
#include "oci/sha256.hpp"

using namespace sdm;
using namespace sdm::tools::oci;

namespace {

// Keeps the first `keep` bytes and counts them all.
class KeepingSink final : public BodySink {
public:
    explicit KeepingSink(size_t keep = SIZE_MAX) : keep_(keep) {}
    Result<void> write(Bytes bytes) override {
        const size_t kept = std::min(bytes.size(), keep_ - std::min(keep_, kept_.size()));
        kept_.insert(kept_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(kept));
        total_ += bytes.size();
        return {};
    }
    const ByteVector& kept() const { return kept_; }
    uint64_t total() const { return total_; }

private:
    size_t keep_;
    ByteVector kept_;
    uint64_t total_{0};
};

std::string field(const ByteVector& tar, size_t header, size_t offset, size_t length) {
    std::string text(reinterpret_cast<const char*>(tar.data()) + header + offset, length);
    return text.substr(0, text.find('\0'));
}

ByteVector layer_of(Bytes archive) {
    KeepingSink sink;
    REQUIRE(write_image_layer(image_archive_path("kernels"), archive, sink));
    return sink.kept();
}

}  // namespace

TEST_CASE("the layer is the directory, then the archive, with fixed headers") {
    ByteVector archive(1000);
    for (size_t i = 0; i < archive.size(); ++i) archive[i] = std::byte(static_cast<uint8_t>(i * 7));
    const ByteVector tar = layer_of(archive);
    CHECK(image_archive_path("kernels") == "sdm/kernels.sdma");
    // Two headers, the data padded to 1024, then tar's two zero blocks, no padding to a whole 10240-byte block.
    REQUIRE(tar.size() == 512 + 512 + 1024 + 1024);
    const struct {
        size_t at;
        const char *name, *mode, *size, *type;
    } headers[] = {{0, "sdm/", "000555 ", "00000000000 ", "5"}, {512, "sdm/kernels.sdma", "000444 ", "00000001750 ", "0"}};
    for (const auto& h : headers) {
        INFO(h.name);
        CHECK(field(tar, h.at, 0, 100) == h.name);
        CHECK(field(tar, h.at, 100, 8) == h.mode);
        CHECK(field(tar, h.at, 108, 8) == "000000 ");  // uid
        CHECK(field(tar, h.at, 116, 8) == "000000 ");  // gid
        CHECK(field(tar, h.at, 124, 12) == h.size);
        CHECK(field(tar, h.at, 136, 12) == "00000000000 ");  // mtime
        CHECK(field(tar, h.at, 156, 1) == h.type);
        CHECK(field(tar, h.at, 257, 6) == "ustar");
        CHECK(field(tar, h.at, 265, 32).empty());  // no user name
        CHECK(field(tar, h.at, 297, 32).empty());  // no group name
    }
    CHECK(std::memcmp(tar.data() + 1024, archive.data(), archive.size()) == 0);
    for (size_t i = 1024 + archive.size(); i < tar.size(); ++i) REQUIRE(tar[i] == std::byte{0});
    // The same archive, the same bytes; another archive, another digest.
    CHECK(layer_of(archive) == tar);
    archive[999] ^= std::byte{1};
    CHECK(sha256_digest(layer_of(archive)) != sha256_digest(tar));
}

TEST_CASE("an archive of 8 GiB carries its size in a pax record") {
    constexpr uint64_t kSize = uint64_t{8} << 30;  // one byte past ustar's largest size
    // Zero pages that are never written: reading them costs no memory (huge zero pages where the kernel has them).
    void* zeros = ::mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(zeros != MAP_FAILED);
    ::madvise(zeros, kSize, MADV_HUGEPAGE);
    KeepingSink sink(4096);
    const auto written = write_image_layer(image_archive_path("big"), Bytes(static_cast<const std::byte*>(zeros), kSize), sink);
    ::munmap(zeros, kSize);
    REQUIRE(written);
    const ByteVector& tar = sink.kept();
    // The directory, the pax header (its header block and one block of records), the file's ustar header.
    CHECK(field(tar, 512, 156, 1) == "x");
    const std::string records(reinterpret_cast<const char*>(tar.data()) + 1024, 512);
    CHECK(records.find(" size=8589934592\n") != std::string::npos);
    CHECK(field(tar, 1536, 0, 100) == "sdm/big.sdma");
    CHECK(field(tar, 1536, 156, 1) == "0");
    CHECK(sink.total() == 512 + 1024 + 512 + kSize + 1024);
}
