// The golden test archive (tests/data's images and manifest.toml) and its damaged copies: what the
// archive tests build on. Apart from support.cpp because the manifest's TOML is read by the tool's
// parser (tools/manifest_source), which the Windows build does not build.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "archive/archive.hpp"
#include "archive/codec.hpp"
#include "common/hash.hpp"
#include "tools/manifest_source.hpp"

namespace sdm::test {

archive::Manifest test_manifest() {
    const auto bytes = data_file("manifest.toml");
    auto m = tools::parse_manifest_source(std::string(as_text(bytes)), data_path("manifest.toml"));
    if (!m) FAIL(m.error().message);
    return std::move(*m);
}

std::vector<archive::WriterInput> test_inputs() {
    using archive::Kind;
    using archive::Variant;
    std::vector<archive::WriterInput> in;
    const auto add = [&](Kind kind, uint16_t sm, Variant variant, const std::string& file) {
        in.push_back({"kernels", kind, sm, variant, data_file(file)});
    };
    add(Kind::cubin, 80, Variant::base, "kernels.sm_80.cubin");
    add(Kind::cubin, 86, Variant::base, "kernels.sm_86.cubin");
    add(Kind::cubin, 90, Variant::base, "kernels.sm_90.cubin");
    add(Kind::cubin, 90, Variant::a, "kernels.sm_90a.cubin");
    add(Kind::cubin, 100, Variant::f, "kernels.sm_100f.cubin");
    add(Kind::cubin, 120, Variant::base, "kernels.sm_120.cubin");
    add(Kind::ptx, 80, Variant::base, "kernels.compute_80.ptx");
    add(Kind::ptx, 90, Variant::base, "kernels.compute_90.ptx");
    add(Kind::ltoir, 90, Variant::base, "kernels.lto_90.ltoir");
    in.push_back({"kernels", Kind::fatbin, 0, Variant::base, data_file("kernels.fatbin")});
    auto manifest = archive::encode_manifest(test_manifest());
    if (!manifest) FAIL(manifest.error().message);
    in.push_back({"manifest", Kind::manifest, 0, Variant::base, std::move(*manifest)});
    return in;
}

ByteVector build_archive(const archive::WriterOptions& options) {
    archive::ArchiveWriter writer(options);
    for (auto& input : test_inputs()) {
        auto added = writer.add(std::move(input));
        if (!added) FAIL(added.error().message);
    }
    auto bytes = writer.finish();
    if (!bytes) FAIL(bytes.error().message);
    return std::move(*bytes);
}

std::vector<CorruptCase> corrupt_cases() {
    using namespace archive;
    WriterOptions o;
    o.dictionary = o.prefix = false;
    const ByteVector good = build_archive(o);
    auto a = Archive::open_memory(good, "good");
    if (!a) FAIL(a.error().message);
    const size_t sm80 = a->find("kernels", Kind::cubin, 80, Variant::base).value();
    const size_t sm86 = a->find("kernels", Kind::cubin, 86, Variant::base).value();
    const size_t sm90 = a->find("kernels", Kind::cubin, 90, Variant::base).value();
    const Entry& e90 = a->entries()[sm90];

    std::vector<CorruptCase> out;
    const auto add = [&](std::string name, bool opens, std::string expect, auto&& edit) {
        ByteVector b = good;
        edit(b);
        out.push_back({std::move(name), std::move(b), opens, std::move(expect)});
    };
    add("truncated", false, "truncated: the header says", [](ByteVector& b) { b.resize(b.size() - 100); });
    add("text-mode", false, "text-mode transfer", [](ByteVector& b) { b.insert(b.begin() + 4, std::byte{'\r'}); });
    add("header-flip", false, "header checksum mismatch", [](ByteVector& b) { b[header::archive_size] ^= std::byte{1}; });
    add("index-flip", false, "index checksum mismatch", [&](ByteVector& b) { b[record_field(b, sm90, record::raw_size)] ^= std::byte{1}; });
    add("payload-flip", true, "stored bytes fail their checksum", [&](ByteVector& b) { b[e90.data_offset + e90.stored_size / 2] ^= std::byte{1}; });
    add("trailing-bytes", false, "bytes follow the end of the archive", [](ByteVector& b) { b.push_back(std::byte{0}); });
    add("newer-major", false, "cannot be read by this sdm", [](ByteVector& b) {
        store_u16(b, header::format_major, 2);
        reseal(b);
    });
    add("unknown-feature", false, "needs format features", [](ByteVector& b) {
        store_u64(b, header::required_features, 4);  // bit 0 is format 1.1's
        reseal(b);
    });
    add("duplicate", false, "duplicate entry", [&](ByteVector& b) {
        store_u16(b, record_field(b, sm86, record::sm), 80);
        reseal(b);
    });
    add("overlap", false, "overlap", [&](ByteVector& b) {
        store_u64(b, record_field(b, sm90, record::data_offset), load_u64(b, record_field(b, sm80, record::data_offset)));
        reseal(b);
    });
    add("oversized", false, "exceeds the per-entry limit", [&](ByteVector& b) {
        store_u64(b, record_field(b, sm90, record::raw_size), uint64_t{1} << 31);
        reseal(b);
    });
    add("two-frames", true, "bytes follow the zstd frame", [&](ByteVector& b) {
        // A second frame right after the last compressed payload: in the padding before the
        // (stored, page-aligned) payload that follows it, or at the end of the file.
        size_t z = 0;
        for (size_t i = 0; i < a->entries().size(); ++i)
            if (a->entries()[i].codec != Codec::stored && a->entries()[i].data_offset >= a->entries()[z].data_offset) z = i;
        const auto frame = zstd_compress(as_bytes("a second frame"), 3, {}).value();
        const uint64_t at = a->entries()[z].data_offset + a->entries()[z].stored_size;
        if (at + frame.size() > b.size()) b.resize(at + frame.size());
        for (size_t i = 0; i < a->entries().size(); ++i)
            if (i != z && a->entries()[i].data_offset >= at && a->entries()[i].data_offset < at + frame.size())
                throw std::logic_error("two-frames: no room for a second frame after entry " + std::to_string(z));
        std::copy(frame.begin(), frame.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
        store_u64(b, header::archive_size, b.size());
        store_u64(b, record_field(b, z, record::stored_size), a->entries()[z].stored_size + frame.size());
        rehash_stored(b, z);
        reseal(b);
    });
    add("raw-checksum", true, "decompressed bytes fail their checksum", [&](ByteVector& b) {
        store_u64(b, record_field(b, sm90, record::raw_hash), 0);  // the stored bytes are fine; the raw digest is not
        reseal(b);
    });
    add("wrong-arch", true, "declared sm_81 but its bytes are for sm_80", [&](ByteVector& b) {
        store_u16(b, record_field(b, sm80, record::sm), 81);
        reseal(b);
    });
    add("padding", true, "padding byte at offset", [&](ByteVector& b) {
        // The last byte before the first payload that does not directly follow another one.
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        for (const Entry& e : a->entries()) ranges.emplace_back(e.data_offset, e.data_offset + e.stored_size);
        std::sort(ranges.begin(), ranges.end());
        for (size_t i = 1; i < ranges.size(); ++i)
            if (ranges[i].first > ranges[i - 1].second) {
                b[ranges[i].first - 1] = std::byte{0x55};
                return;
            }
        FAIL("the test archive has no padding");
    });
    return out;
}

}  // namespace sdm::test
