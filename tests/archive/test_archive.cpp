// Archive round trips over every kind and codec, the committed golden archives, and the
// reader's refusal of each structural defect with its own message.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <zstd.h>

#include "archive/codec.hpp"
#include "archive/file_map.hpp"
#include "archive/identity.hpp"
#include "archive/signing.hpp"
#include "common/crypto.hpp"
#include "common/hash.hpp"
#include "support.hpp"
#include "archive/verify.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

// The golden archives were written by the zstd below (Debian 12); a writer linked with another
// zstd may choose other matches, so the byte-exact check of compressed output needs this version.
constexpr unsigned kGoldenZstdVersion = 10504;

Archive open_ok(Bytes bytes) {
    auto a = Archive::open_memory(bytes, "test.sdma");
    if (!a) FAIL(a.error().message);
    return std::move(*a);
}

// Reads every entry back and compares it with the input it came from.
void check_round_trip(const Archive& a) {
    for (const WriterInput& in : test::test_inputs()) {
        INFO(in.name << " " << target_name(in.kind, in.sm, in.variant));
        const auto index = a.find(in.name, in.kind, in.sm, in.variant);
        REQUIRE(index);
        auto raw = a.read(*index);
        REQUIRE(raw);
        if (in.kind == Kind::manifest) {
            // The manifest entry holds the binary encoding; compare decoded.
            CHECK(decode_manifest(*raw)->kernels.size() == 2);
        } else {
            CHECK(*raw == in.bytes);
        }
    }
    REQUIRE(verify_archive(a));
}

size_t count_codec(const Archive& a, Codec codec) {
    return static_cast<size_t>(std::count_if(a.entries().begin(), a.entries().end(), [&](const Entry& e) { return e.codec == codec; }));
}

void write_golden(const std::string& name, Bytes bytes) {
    auto w = write_file_atomic(std::string(SDM_TEST_SOURCE) + "/golden/" + name, bytes);
    REQUIRE(w);
}

}  // namespace

TEST_CASE("round trip of every kind with plain zstd, stored, prefix and dictionary codecs", "[archive]") {
    SECTION("plain zstd") {
        WriterOptions o;
        o.prefix = o.dictionary = false;
        const auto bytes = test::build_archive(o);
        const Archive a = open_ok(bytes);
        check_round_trip(a);
        CHECK(count_codec(a, Codec::zstd) + count_codec(a, Codec::stored) == a.entries().size());
    }
    SECTION("stored cubins are page-aligned and viewable without a copy") {
        WriterOptions o;
        o.store_cubins = true;
        const auto bytes = test::build_archive(o);
        const Archive a = open_ok(bytes);
        check_round_trip(a);
        const auto i = a.find("kernels", Kind::cubin, 90, Variant::a).value();
        CHECK(a.entries()[i].codec == Codec::stored);
        CHECK(a.entries()[i].data_offset % 4096 == 0);
        auto view = a.view(i);
        REQUIRE(view);
        CHECK(view->data() == bytes.data() + a.entries()[i].data_offset);
        CHECK(ByteVector(view->begin(), view->end()) == test::data_file("kernels.sm_90a.cubin"));
        const auto ptx = a.find("kernels", Kind::ptx, 90, Variant::base).value();
        CHECK_THAT(a.view(ptx).error().message, Catch::Contains("is compressed"));
        // The manifest is always stored, so a mount decodes it from the mapping with no decompressor.
        const auto manifest = a.find_manifest().value();
        CHECK(a.entries()[manifest].codec == Codec::stored);
        CHECK(a.view(manifest));
    }
    SECTION("prefix coding against a sibling arch") {
        const auto bytes = test::build_archive();
        const Archive a = open_ok(bytes);
        check_round_trip(a);
        // sm_86 differs from sm_80 in a few header bytes: one must be coded against the other.
        const Entry& sm80 = a.entries()[a.find("kernels", Kind::cubin, 80, Variant::base).value()];
        const Entry& sm86 = a.entries()[a.find("kernels", Kind::cubin, 86, Variant::base).value()];
        const Entry& referrer = sm86.codec == Codec::zstd_prefix ? sm86 : sm80;
        REQUIRE(referrer.codec == Codec::zstd_prefix);
        CHECK(a.entries()[referrer.ref].sm == (&referrer == &sm86 ? 80 : 86));
        CHECK(referrer.stored_size * 4 < a.entries()[referrer.ref].stored_size);
    }
    SECTION("a dictionary over many small similar modules") {
        // 40 modules of PTX that differ in their kernel names: a dictionary pays for these.
        const std::string ptx(as_text(test::data_file("kernels.compute_90.ptx")));
        WriterOptions o;
        o.prefix = false;
        ArchiveWriter writer(o);
        std::vector<std::string> texts;
        for (int m = 0; m < 40; ++m) {
            std::string text = ptx;
            for (size_t at = text.find("scale"); at != std::string::npos; at = text.find("scale", at + 1))
                text.replace(at, 5, "sc" + std::to_string(m) + "le");
            texts.push_back(text);
            const auto b = as_bytes(text);
            REQUIRE(writer.add({"m" + std::to_string(m), Kind::ptx, 90, Variant::base, ByteVector(b.begin(), b.end())}));
        }
        WriterReport report;
        auto bytes = writer.finish(&report);
        REQUIRE(bytes);
        CHECK(report.dictionary_coded > 0);
        CHECK(report.dictionary_bytes > 0);
        const Archive a = open_ok(*bytes);
        REQUIRE(count_codec(a, Codec::zstd_dict) == report.dictionary_coded);
        for (int m = 0; m < 40; ++m) {
            auto raw = a.read(a.find("m" + std::to_string(m), Kind::ptx, 90, Variant::base).value());
            REQUIRE(raw);
            CHECK(std::string(as_text(*raw)) == texts[static_cast<size_t>(m)]);
        }
        CHECK(verify_archive(a));
    }
}

TEST_CASE("lookup by key, by name, and of the manifest", "[archive]") {
    const auto bytes = test::build_archive();
    const Archive a = open_ok(bytes);
    CHECK(a.find("kernels", Kind::cubin, 100, Variant::f));
    CHECK_FALSE(a.find("kernels", Kind::cubin, 100, Variant::base));
    CHECK_FALSE(a.find("kernel", Kind::cubin, 80, Variant::base));
    const auto [first, last] = a.find_name("kernels");
    CHECK(last - first == 10);
    CHECK(a.find_name("nothing").first == a.find_name("nothing").second);
    CHECK(a.header().kernel_abi_major == 1);
    CHECK(a.header().kernel_abi_minor == 2);
    CHECK_THAT(a.read(999).error().message, Catch::Contains("has no entry 999"));
}

TEST_CASE("the writer refuses bad input before compressing", "[archive]") {
    ArchiveWriter w;
    auto r = w.add({"kernels", Kind::cubin, 90, Variant::base, test::data_file("kernels.sm_80.cubin")});
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::mismatch);
    CHECK_THAT(r.error().message, Catch::Contains("declared sm_90 but its bytes are for sm_80"));
    REQUIRE(w.add({"kernels", Kind::cubin, 80, Variant::base, test::data_file("kernels.sm_80.cubin")}));
    CHECK_THAT(w.add({"kernels", Kind::cubin, 80, Variant::base, test::data_file("kernels.sm_80.cubin")}).error().message,
               Catch::Contains("duplicate entry"));
    CHECK_THAT(w.add({"bad name", Kind::cubin, 80, Variant::base, test::data_file("kernels.sm_80.cubin")}).error().message,
               Catch::Contains("printable ASCII"));
    CHECK_THAT(w.add({"manifest", Kind::manifest, 0, Variant::base, test::data_file("kernels.sm_80.cubin")}).error().message,
               Catch::Contains("no manifest magic"));
    CHECK_THAT(w.add({"kernels", Kind::fatbin, 0, Variant::base, test::data_file("kernels.sm_80.cubin")}).error().message,
               Catch::Contains("fatbin magic"));
    CHECK_THAT(w.add({"d", Kind::dictionary, 0, Variant::base, {}}).error().message, Catch::Contains("cannot be added by hand"));
}

TEST_CASE("golden archives: format 1.0 stays readable, and the writer reproduces them byte for byte", "[archive][golden]") {
    WriterOptions stored_options;
    stored_options.compress = false;
    const auto stored = test::build_archive(stored_options);
    const auto compressed = test::build_archive();
    if (std::getenv("SDM_REGENERATE_GOLDEN") != nullptr) {
        write_golden("kernels-stored.sdma", stored);
        if (ZSTD_versionNumber() == kGoldenZstdVersion) write_golden("kernels.sdma", compressed);
    }
    const auto golden_stored = test::data_file("../golden/kernels-stored.sdma");
    const auto golden = test::data_file("../golden/kernels.sdma");
    // Reading: every entry of the committed archives comes back as the inputs.
    check_round_trip(open_ok(golden_stored));
    check_round_trip(open_ok(golden));
    // An archive of the test kernels from an earlier writer (sdm 0.1.0: other prefix choices, a
    // compressed manifest, and the kernels before tests/data was rebuilt with grid-stride loops)
    // still opens and reads: every entry the inputs name, each passing its checksums and parsing as
    // its target (verify_archive).
    {
        const auto bytes = test::data_file("../golden/kernels-earlier-writer.sdma");  // the Archive views these
        const Archive earlier = open_ok(bytes);
        for (const WriterInput& in : test::test_inputs()) {
            INFO(in.name << " " << target_name(in.kind, in.sm, in.variant));
            const auto index = earlier.find(in.name, in.kind, in.sm, in.variant);
            REQUIRE(index);
            REQUIRE(earlier.read(*index));
        }
        REQUIRE(verify_archive(earlier));
        CHECK(earlier.entries()[earlier.find_manifest().value()].codec != Codec::stored);
    }
    // Writing: stored output depends on nothing but the format.
    CHECK(stored == golden_stored);
    if (ZSTD_versionNumber() == kGoldenZstdVersion) {
        CHECK(compressed == golden);
    } else {
        WARN("zstd " << ZSTD_versionString() << " differs from the golden's 1.5.4: compressed bytes not compared");
    }
    // Determinism: thread count does not change the output.
    WriterOptions one_thread;
    one_thread.threads = 1;
    CHECK(test::build_archive(one_thread) == compressed);
}

TEST_CASE("structural defects are refused, each with its own message", "[archive][reject]") {
    WriterOptions o;
    o.dictionary = false;
    const ByteVector good = test::build_archive(o);
    REQUIRE(test::open_error(good).empty());
    const auto entry = [&](Kind k, uint16_t sm, Variant v) { return open_ok(good).find("kernels", k, sm, v).value(); };
    const size_t sm80 = entry(Kind::cubin, 80, Variant::base), sm86 = entry(Kind::cubin, 86, Variant::base);
    const size_t sm90 = entry(Kind::cubin, 90, Variant::base);
    // Of the near-identical sm_80 and sm_86 cubins, one is prefix-coded against the other.
    const size_t referrer = open_ok(good).entries()[sm86].codec == Codec::zstd_prefix ? sm86 : sm80;
    const size_t base = open_ok(good).entries()[referrer].ref;
    REQUIRE(base == (referrer == sm86 ? sm80 : sm86));
    const auto patched = [&](auto&& edit) {
        ByteVector b = good;
        edit(b);
        test::reseal(b);
        return test::open_error(b);
    };
    using test::record_field;

    CHECK_THAT(patched([&](ByteVector& b) {
                   store_u16(b, record_field(b, sm86, record::sm), 80);
               }),
               Catch::Contains("duplicate entry sm_80"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u16(b, record_field(b, sm86, record::sm), 70); }), Catch::Contains("not sorted"));
    CHECK_THAT(patched([&](ByteVector& b) {
                   store_u64(b, record_field(b, sm90, record::data_offset), load_u64(b, record_field(b, sm80, record::data_offset)));
               }),
               Catch::Contains("overlap"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u64(b, record_field(b, sm90, record::raw_size), 1ull << 31); }),
               Catch::Contains("exceeds the per-entry limit"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u64(b, record_field(b, sm90, record::stored_size), b.size()); }),
               Catch::Contains("stored size larger than any zstd frame"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u64(b, record_field(b, sm90, record::data_offset), align_up(b.size(), 64)); }),
               Catch::Contains("outside the payload region"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u64(b, record_field(b, sm90, record::data_offset), 64); }),
               Catch::Contains("outside the payload region"));
    CHECK_THAT(patched([&](ByteVector& b) {
                   store_u64(b, record_field(b, sm90, record::data_offset), load_u64(b, record_field(b, sm90, record::data_offset)) + 1);
               }),
               Catch::Contains("not aligned to 64 bytes"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u8(b, record_field(b, sm90, record::kind), 42); }), Catch::Contains("kind 42, unknown"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u8(b, record_field(b, sm90, record::codec), 9); }), Catch::Contains("codec 9, unknown"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u8(b, record_field(b, sm90, record::variant), 3); }),
               Catch::Contains("is not base, a or f"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u8(b, record_field(b, sm90, record::flags), 1); }), Catch::Contains("reserved flags"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, record_field(b, referrer, record::ref), 77); }),
               Catch::Contains("references entry 77, but the archive has 11 entries"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, record_field(b, base, record::ref), 0); }), Catch::Contains("with a reference"));
    CHECK_THAT(patched([&](ByteVector& b) {
                   // Make the base itself prefix-coded against sm_90: referrer -> base becomes a chain.
                   store_u8(b, record_field(b, base, record::codec), static_cast<uint8_t>(Codec::zstd_prefix));
                   store_u32(b, record_field(b, base, record::ref), static_cast<uint32_t>(sm90));
               }),
               Catch::Contains("chains are limited to one step"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u16(b, record_field(b, sm90, record::name_length), 0); }),
               Catch::Contains("name '' is empty"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, record_field(b, sm90, record::name_offset), 1u << 30); }),
               Catch::Contains("name outside the string table"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, header::index_count, 70000); }), Catch::Contains("exceed the limit of 65536"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, header::header_size, 100); }), Catch::Contains("header size 100"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u32(b, header::record_size, 60); }), Catch::Contains("record size 60"));
    CHECK_THAT(patched([&](ByteVector& b) { store_u64(b, header::reserved, 1); }), Catch::Contains("reserved header fields"));
    {
        ByteVector later = good;  // a later minor may use the reserved fields
        store_u64(later, header::reserved, 1);
        store_u8(later, record_field(later, sm90, record::flags), 1);
        store_u16(later, header::format_minor, 1);
        test::reseal(later);
        CHECK(test::open_error(later).empty());
    }

    // Newer formats and unknown required features are "unsupported", not "corrupt".
    {
        ByteVector b = good;
        store_u16(b, header::format_major, 2);
        test::reseal(b);
        auto a = Archive::open_memory(b, "new.sdma");
        REQUIRE_FALSE(a);
        CHECK(a.error().code == ErrorCode::archive_unsupported);
        CHECK_THAT(a.error().message, Catch::Contains("format 2.0 cannot be read by this sdm"));
        b = good;
        store_u64(b, header::required_features, 4);
        test::reseal(b);
        CHECK_THAT(test::open_error(b), Catch::Contains("needs format features 0x0000000000000004"));
        b = good;
        store_u64(b, header::optional_features, 16);  // unknown: ignored (0x2, 0x4 and 0x8 are format 1.2's: below)
        store_u16(b, header::format_minor, 7);       // a later minor opens
        test::reseal(b);
        CHECK(test::open_error(b).empty());
    }
    // Whole-file defects, no re-sealing involved.
    {
        ByteVector b = good;
        b.push_back(std::byte{0});
        CHECK_THAT(test::open_error(b), Catch::Contains("1 bytes follow the end of the archive"));
        b = good;
        b.insert(b.begin() + 4, std::byte{'\r'});  // "\r\n" -> "\r\r\n": a text-mode copy
        b.pop_back();
        CHECK_THAT(test::open_error(b), Catch::Contains("text-mode transfer"));
        CHECK_THAT(test::open_error(test::data_file("kernels.sm_90.cubin")), Catch::Contains("ELF file"));
        CHECK_THAT(test::open_error(test::data_file("kernels.compute_90.ptx")), Catch::Contains("not an sdm archive"));
        CHECK_THAT(test::open_error(Bytes(good).first(100)), Catch::Contains("shorter than the 128-byte header"));
        CHECK_THAT(test::open_error(Bytes(good).first(good.size() - 1)), Catch::Contains("truncated: the header says"));
    }
}

TEST_CASE("the golden corrupt archives fail as their .expect files say", "[archive][golden]") {
    const auto cases = test::corrupt_cases();
    REQUIRE(cases.size() >= 10);
    for (const auto& c : cases) {
        INFO(c.name);
        if (std::getenv("SDM_REGENERATE_GOLDEN") != nullptr) {
            write_golden("corrupt/" + c.name + ".sdma", c.bytes);
            write_golden("corrupt/" + c.name + ".expect", as_bytes(c.expect));
        }
        // The committed file, not the freshly made one: it is what `sdm verify` is tested on too.
        const auto bytes = test::data_file("../golden/corrupt/" + c.name + ".sdma");
        const auto expect = test::data_file("../golden/corrupt/" + c.name + ".expect");
        CHECK(std::string(as_text(expect)) == c.expect);
        auto a = Archive::open_memory(bytes, c.name + ".sdma");
        CHECK(a.ok() == c.opens);
        const std::string error = a ? (verify_archive(*a) ? std::string() : verify_archive(*a).error().message) : a.error().message;
        CHECK_THAT(error, Catch::Contains(c.expect) && Catch::Contains(c.name + ".sdma"));
    }
}

TEST_CASE("golden archive of a 3-D plan rule (manifest 1.1 tags 14-17): it reads back, and the writer reproduces it byte for byte", "[archive][golden][plan]") {
    // The launch kernels' matmul with one rule: blocks of 16x16, a grid covering N x N; stored, so
    // the bytes depend on nothing but the format.
    Manifest m;
    m.kernel_abi_major = 1;
    KernelSpec k{"matmul_tiled", "launch", *parse_signature("ptr,ptr,ptr,i32"), {"N"}, {}};
    PlanRule r;
    r.device_class = "modern";
    r.block = "16";
    r.block_y = "16";
    r.grid = "(N + 15) / 16";
    r.grid_y = "(N + 15) / 16";
    k.plans.push_back(r);
    m.kernels.push_back(k);
    WriterOptions options;
    options.compress = false;
    ArchiveWriter writer(options);
    REQUIRE(writer.add({"launch", Kind::cubin, 90, Variant::base, test::data_file("launch.sm_90.cubin")}));
    REQUIRE(writer.add({"manifest", Kind::manifest, 0, Variant::base, encode_manifest(m).value()}));
    const auto bytes = writer.finish().value();
    if (std::getenv("SDM_REGENERATE_GOLDEN") != nullptr) write_golden("plans-3d.sdma", bytes);
    const auto golden = test::data_file("../golden/plans-3d.sdma");
    CHECK(bytes == golden);
    const Archive a = open_ok(golden);
    const auto manifest = a.read_manifest().value().value();
    const auto& rule = manifest.kernels.at(0).plans.at(0);
    CHECK((rule.block_y == "16" && rule.grid_y == "(N + 15) / 16" && rule.block_z == "1" && rule.grid_z == "1"));
    CHECK(a.header().format_minor == 1);  // a manifest of minor 1: format 1.1
}

TEST_CASE("format 1.2: the archive version and an overlay's base in the header extension; hostile ones refused", "[archive][format12]") {
    const ByteVector plain = test::build_archive();
    WriterOptions o;
    o.archive_version = 42;
    const ByteVector versioned = test::build_archive(o);
    auto a = Archive::open_memory(versioned, "v.sdma");
    REQUIRE(a);
    CHECK(a->header().format_minor == 2);
    CHECK(a->header().header_size == kHeaderSize12);
    CHECK(a->header().archive_version == 42);
    CHECK_FALSE(a->header().base);
    CHECK(verify_archive(*a));
    // Without the options the writer's output is what it was: 1.0, a 128-byte header.
    auto p = Archive::open_memory(plain, "p.sdma");
    REQUIRE(p);
    CHECK(p->header().header_size == kHeaderSize);
    CHECK_FALSE(p->header().archive_version);
    // An overlay names its base's identity; the identity is one of metadata, so the same bytes
    // give the same identity and any other archive another.
    o.base = identity(*p);
    const ByteVector overlay = test::build_archive(o);
    auto ov = Archive::open_memory(overlay, "o.sdma");
    REQUIRE(ov);
    CHECK(ov->header().base == identity(*p));
    CHECK(identity(*ov) != identity(*p));
    CHECK(identity_text(identity(*p)).starts_with("xxh3-128:"));
    // Signing keeps an archive's identity (an overlay of it stays bound to it).
    if (crypto::available()) {
        auto pair = crypto::generate_key_pair();
        REQUIRE(pair);
        const auto signed_bytes = sign_archive(plain, "p.sdma", pair->secret_key);
        REQUIRE(signed_bytes);
        auto s = Archive::open_memory(*signed_bytes, "s.sdma");
        REQUIRE(s);
        CHECK(identity(*s) == identity(*p));
    }
    // Hostile: the bits without the extension, the fields without the bits.
    ByteVector b = plain;
    store_u64(b, header::optional_features, kFeatureArchiveVersion);
    test::reseal(b);
    CHECK_THAT(test::open_error(b), Catch::Contains("need a format 1.2 header of at least 152 bytes"));
    b = versioned;
    store_u64(b, header::optional_features, 0);  // the version stays stored
    test::reseal(b);
    CHECK_THAT(test::open_error(b), Catch::Contains("an archive version is stored but the feature bit 0x2 is not set"));
    b = versioned;
    store_u8(b, header::base_identity + 3, 1);
    test::reseal(b);
    CHECK_THAT(test::open_error(b), Catch::Contains("an overlay base is stored but the feature bit 0x4 is not set"));
    b = versioned;
    store_u16(b, header::format_minor, 1);
    test::reseal(b);
    CHECK_THAT(test::open_error(b), Catch::Contains("this one is format 1.1 of 152 bytes"));
}
