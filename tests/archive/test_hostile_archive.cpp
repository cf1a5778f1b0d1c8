// Hostile archives, built by tests/forge (a writer that shares no code with archive/ and
// recomputes every checksum, as an attacker would): names that try to be paths, references that
// try to multiply the work, manifests that try to multiply the memory, sizes that lie before
// their checksum, images whose headers point outside them, TOML that nests too deeply, numbers
// that wrap and text that drives a terminal. Each is refused with a clear error, or served at a
// cost bounded by its real size: costs are asserted as ratios against a baseline archive measured
// the same way in the same test (tests/support.hpp, run_in_child), never as wall-clock limits.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "forge/forge.hpp"
#include "archive/image.hpp"
#include "archive/manifest.hpp"
#include "tools/manifest_source.hpp"
#include "archive/archive.hpp"
#include "support.hpp"
#include "common/text.hpp"
#include "archive/verify.hpp"
#include "archive/writer.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

Bytes view(const forge::Bytes& b) { return {reinterpret_cast<const std::byte*>(b.data()), b.size()}; }
ByteVector bytes(const forge::Bytes& b) { return ByteVector(reinterpret_cast<const std::byte*>(b.data()), reinterpret_cast<const std::byte*>(b.data()) + b.size()); }
forge::Bytes text(const std::string& s) { return forge::Bytes(s.begin(), s.end()); }

std::string open_error(const forge::Bytes& b) {
    auto a = Archive::open_memory(view(b), "hostile.sdma");
    return a ? std::string() : a.error().message;
}

std::string verify_error(const forge::Bytes& b) {
    auto a = Archive::open_memory(view(b), "hostile.sdma");
    if (!a) return a.error().message;
    auto v = verify_archive(*a);
    return v ? std::string() : v.error().message;
}

forge::Bytes ptx(uint16_t sm, const std::string& body = "") {
    return text(".version 8.0\n.target sm_" + std::to_string(sm) + "\n.address_size 64\n" + body);
}

// One PTX entry named `name` (compute_80, stored), nothing else.
forge::Bytes one_entry_named(const std::string& name) {
    forge::Archive a;
    a.records.push_back({name, forge::kind::ptx, forge::codec::stored, 80, 0, 0, forge::kNoRef, ptx(80), {}, {}, {}, {}});
    return forge::write(a);
}

}  // namespace

// Every rule of docs/FORMAT.md section 5, each a name an attacker would try.
const std::vector<std::pair<std::string, std::string>> kBadNames = {
    {"../../etc/evil", "starts with '.'"}, {"x/../../etc/evil", "contains '/'"}, {"a/b", "contains '/'"},       {"a\\b", "contains '\\'"},  {".hidden", "starts with '.'"},
    {".", "starts with '.'"},           {"..", "starts with '.'"},      {"c:evil", "contains ':'"}, {"a*b", "contains '*'"},
    {"a?b", "contains '?'"},            {"a\"b", "contains '\"'"},      {"a<b", "contains '<'"},    {"a>b", "contains '>'"},
    {"a|b", "contains '|'"},            {"has space", "contains a space"}, {"\x1b[31mred", "contains the byte \\x1b"},
    {"caf\xc3\xa9", "contains the byte \\xc3"}, {std::string(257, 'x'), "is 257 bytes long, more than 256"},
};

TEST_CASE("names are data, never paths: the reader, the writer and the manifest refuse every rule", "[hostile][names]") {
    for (const auto& [name, why] : kBadNames) {
        INFO("name " << printable(name));
        const std::string opened = open_error(one_entry_named(name));
        CHECK_THAT(opened, Catch::Contains("hostile.sdma: entry 0: name '") && Catch::Contains(why) && Catch::Contains("names are printable ASCII"));
        CHECK(opened.find('\x1b') == std::string::npos);  // the message itself is escaped
        // The writer takes names past 256 bytes (it writes format 1.1), up to 65535.
        const std::string written = name.size() == 257 ? std::string(65536, 'x') : name;
        const std::string written_why = name.size() == 257 ? "is 65536 bytes long, more than 65535" : why;
        ArchiveWriter writer;
        auto added = writer.add({written, Kind::ptx, 80, Variant::base, bytes(ptx(80))});
        REQUIRE_FALSE(added);
        CHECK(added.error().code == ErrorCode::invalid_argument);
        CHECK_THAT(added.error().message, Catch::Contains(written_why));
        // A manifest naming such a kernel or module does not decode.
        for (const bool as_module : {false, true}) {
            const auto m = forge::manifest(forge::concat(
                {forge::kernel_abi(1, 0), forge::kernel(as_module ? "k" : name, as_module ? name : "m", "ptr")}));
            auto decoded = decode_manifest(view(m));
            REQUIRE_FALSE(decoded);
            CHECK(decoded.error().code == ErrorCode::archive_corrupt);
            CHECK_THAT(decoded.error().message, Catch::Contains(why));
        }
    }
    CHECK(open_error(one_entry_named("ok_name-1.2+x")).empty());
    CHECK(open_error(one_entry_named(std::string(256, 'x'))).empty());
}

TEST_CASE("golden corrupt archives: one per name rule, written by the forge", "[hostile][names][golden]") {
    // tests/golden/corrupt/name-*.sdma: `sdm verify` must refuse each (tests/tool/verify_corrupt.sh).
    const std::vector<std::tuple<std::string, std::string, std::string>> goldens = {
        {"name-slash", "x/../../etc/passwd", "contains '/'"},      {"name-backslash", "a\\b", "contains '\\'"},
        {"name-dot", "..", "starts with '.'"},                 {"name-reserved", "c:evil", "contains ':'"},
        {"name-space", "has space", "contains a space"},       {"name-control", "\x1b[31mred", "contains the byte \\x1b"},
        {"name-high-byte", "caf\xc3\xa9", "contains the byte \\xc3"}, {"name-long", std::string(257, 'x'), "more than 256"},
        {"name-empty", "", "is empty"},
    };
    for (const auto& [file, name, why] : goldens) {
        const forge::Bytes made = one_entry_named(name);
        const std::string path = std::string(SDM_TEST_SOURCE) + "/golden/corrupt/" + file;
        if (std::getenv("SDM_REGENERATE_GOLDEN") != nullptr) {
            forge::write_file(path + ".sdma", made);
            forge::write_file(path + ".expect", text(why));
        }
        INFO(file);
        CHECK(forge::read_file(path + ".sdma") == made);
        CHECK(forge::read_file(path + ".expect") == text(why));
        CHECK_THAT(open_error(made), Catch::Contains(why));
    }
}

TEST_CASE("a reference shared by many entries is decoded once: verify costs the archive's raw bytes, not their product", "[hostile][cost]") {
    // One 16 MiB PTX module and 16 small ones. In the attack all 16 are prefix-coded against the
    // big one (each decode of theirs needs its raw bytes); the baseline has the same entries, each
    // coded alone. Before the fix, verify decoded the big entry 2 x 16 times.
    const auto build = [](bool referenced) { return forge::shared_reference_archive(16u << 20, 16, referenced, false); };
    const forge::Bytes baseline = build(false), attack = build(true);
    REQUIRE(verify_error(baseline).empty());
    REQUIRE(verify_error(attack).empty());
    const auto cost = [](const forge::Bytes& b) { return test::run_in_child([&] { return verify_error(b).empty(); }); };
    const auto base_cost = cost(baseline), attack_cost = cost(attack);
    REQUIRE(base_cost.ok);
    REQUIRE(attack_cost.ok);
    INFO("baseline " << base_cost.cpu_seconds << " s, " << base_cost.peak_mib << " MiB; attack " << attack_cost.cpu_seconds << " s, "
                     << attack_cost.peak_mib << " MiB");
    CHECK(attack_cost.cpu_seconds <= 2.0 * base_cost.cpu_seconds + 0.05);
    CHECK(attack_cost.peak_mib <= 1.25 * base_cost.peak_mib + 16);
    // Extracting decodes each entry once too (one walk, Archive::for_each_entry).
    auto a = Archive::open_memory(view(attack), "attack");
    REQUIRE(a);
    size_t visits = 0;
    REQUIRE(a->for_each_entry([&](size_t, Bytes) -> Result<void> {
        ++visits;
        return {};
    }));
    CHECK(visits == 17);
}

TEST_CASE("a manifest of millions of empty items costs its own bytes of memory, not a multiple", "[hostile][cost]") {
    // 4 Mi empty optional items (8 bytes each, a tag no reader knows): 32 MiB of manifest. The
    // baseline is an archive whose one stored entry is as large. Before the fix, the reader built
    // a 24-byte item for each 8-byte one before looking at any (3x the manifest, on top of it).
    forge::Bytes body = forge::kernel_abi(1, 0);
    const forge::Bytes empty = forge::item(999, forge::Bytes{}, 0);
    body.reserve(body.size() + (4u << 20) * empty.size());
    for (size_t i = 0; i < (4u << 20); ++i) body.insert(body.end(), empty.begin(), empty.end());
    const forge::Bytes m = forge::manifest(body);
    forge::Archive attack, baseline;
    attack.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    baseline.records.push_back({"a", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::Bytes(m.size(), 0), {}, {}, {}, {}});
    const forge::Bytes a = forge::write(attack), b = forge::write(baseline);
    const auto decode = [](const forge::Bytes& bytes) {
        return test::run_in_child([&] {
            auto archive = Archive::open_memory(view(bytes), "m");
            if (!archive) return false;
            const auto manifest = archive->read_manifest();  // the mount's work
            ByteVector touched = archive->read(0).value();   // the baseline's: one entry of the same size
            return manifest.ok() && !touched.empty();
        });
    };
    const auto attack_cost = decode(a), base_cost = decode(b);
    REQUIRE(attack_cost.ok);
    REQUIRE(base_cost.ok);
    INFO("baseline " << base_cost.peak_mib << " MiB, attack " << attack_cost.peak_mib << " MiB");
    CHECK(attack_cost.peak_mib <= 1.25 * base_cost.peak_mib + 16);
}

TEST_CASE("sizes are checked before anything is allocated for them", "[hostile][cost]") {
    const forge::Bytes garbage(100, 0x5a);
    SECTION("a raw size no zstd frame of the stored size can reach is refused at open") {
        forge::Archive a;
        forge::Record r{"k", forge::kind::cubin, forge::codec::zstd, 90, 0, 0, forge::kNoRef, {}, garbage, {}, {}, {}};
        r.raw_size = uint64_t{1} << 30;
        a.records.push_back(r);
        CHECK_THAT(open_error(forge::write(a)), Catch::Contains("raw size 1073741824 cannot come out of a zstd frame of 100 bytes"));
    }
    SECTION("a frame that claims 1 GiB and holds garbage fails having allocated what it decoded, not what it claimed") {
        // 64 compressed blocks of 1000 garbage bytes after a frame header declaring 1 GiB: well
        // formed enough to pass the frame checks and the expansion bound, so it opens and starts
        // decoding; it fails at its first block.
        forge::Bytes payload = forge::zstd_frame_header(uint64_t{1} << 30);
        for (int block = 0; block < 64; ++block) {
            const uint32_t header = (block == 63 ? 1u : 0u) | (2u << 1) | (1000u << 3);  // last?, compressed, 1000 bytes
            payload.push_back(static_cast<uint8_t>(header));
            payload.push_back(static_cast<uint8_t>(header >> 8));
            payload.push_back(static_cast<uint8_t>(header >> 16));
            payload.resize(payload.size() + 1000, 0xa5);
        }
        forge::Archive a;
        forge::Record r{"k", forge::kind::cubin, forge::codec::zstd, 90, 0, 0, forge::kNoRef, {}, payload, {}, {}, {}};
        r.raw_size = uint64_t{1} << 30;
        a.records.push_back(r);
        const forge::Bytes hostile = forge::write(a);
        forge::Archive small;
        small.records.push_back({"k", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::Bytes(hostile.size(), 0), {}, {}, {}, {}});
        const forge::Bytes base = forge::write(small);
        const auto attack = test::run_in_child([&] {
            auto archive = Archive::open_memory(view(hostile), "claims.sdma");
            return archive && !archive->read(0) && archive->read(0).error().code == ErrorCode::archive_corrupt;
        });
        const auto baseline = test::run_in_child([&] {
            auto archive = Archive::open_memory(view(base), "base.sdma");
            return archive && archive->read(0).ok();
        });
        REQUIRE(attack.ok);
        REQUIRE(baseline.ok);
        INFO("baseline " << baseline.peak_mib << " MiB, attack " << attack.peak_mib << " MiB");
        CHECK(attack.peak_mib <= baseline.peak_mib + 16);  // 1 GiB before the fix
    }
    SECTION("a stored checksum that fails is reported before the raw size is allocated") {
        forge::Archive a;
        forge::Record r{"k", forge::kind::cubin, forge::codec::zstd, 90, 0, 0, forge::kNoRef, {}, forge::zstd(forge::Bytes(1000, 1)), {}, {}, {}};
        r.raw_size = 1000;
        a.records.push_back(r);
        forge::Bytes b = forge::write(a);
        b[b.size() - 3] ^= 0xff;  // the payload changes after its checksum was computed
        auto archive = Archive::open_memory(view(b), "flipped.sdma");
        REQUIRE(archive);
        auto read = archive->read(0);
        REQUIRE_FALSE(read);
        CHECK_THAT(read.error().message, Catch::Contains("stored bytes fail their checksum"));
    }
}

TEST_CASE("a reference to itself, or past the index, is named as such", "[hostile][messages]") {
    forge::Archive a;
    const forge::Bytes p = ptx(80);
    a.records.push_back({"k", forge::kind::ptx, forge::codec::zstd_prefix, 80, 0, 0, 0, p, forge::zstd(p), {}, {}, {}});
    CHECK_THAT(open_error(forge::write(a)), Catch::Contains("entry 0 (k): references itself"));
    a.records[0].ref = 7;
    CHECK_THAT(open_error(forge::write(a)), Catch::Contains("references entry 7, but the archive has 1 entries"));
}

TEST_CASE("images whose headers point outside them are refused by the same checks verify runs", "[hostile][images]") {
    const ByteVector cubin = test::data_file("kernels.sm_90.cubin");
    const auto patched = [&](size_t at, uint64_t value, int width) {
        ByteVector b = cubin;
        for (int i = 0; i < width; ++i) b[at + static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(value >> (8 * i)));
        return b;
    };
    const uint64_t far = uint64_t{512} << 20;
    CHECK_THAT(inspect_cubin(patched(40, far, 8)).error().message, Catch::Contains("the section header table [536870912"));  // e_shoff
    CHECK_THAT(inspect_cubin(patched(32, far, 8)).error().message, Catch::Contains("the program header table [536870912"));  // e_phoff
    CHECK_THAT(inspect_cubin(patched(52, 32, 2)).error().message, Catch::Contains("e_ehsize is 32"));
    CHECK_THAT(inspect_cubin(patched(54, 40, 2)).error().message, Catch::Contains("program header size 40"));
    CHECK_THAT(inspect_cubin(patched(62, 0, 2)).error().message, Catch::Contains("section-name table index 0"));
    // The 64-byte image the real driver crashed on: an ELF header alone, pointing 512 MiB past its end.
    ByteVector header(cubin.begin(), cubin.begin() + 64);
    for (int i = 0; i < 8; ++i) header[40 + static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(far >> (8 * i)));
    CHECK_THAT(inspect_cubin(header).error().message, Catch::Contains("lies outside the image of 64 bytes"));
    // A section whose bytes lie past the end.
    {
        const uint64_t shoff = load_u64(cubin, 40);
        CHECK_THAT(inspect_cubin(patched(static_cast<size_t>(shoff + 64 * 2 + 24), far, 8)).error().message,
                   Catch::Contains("section 2 [536870912"));
    }
    // Fatbins: every entry inside the region the header declares.
    const ByteVector fatbin = test::data_file("kernels.fatbin");
    {
        ByteVector b = fatbin;
        for (int i = 0; i < 8; ++i) b[16 + 8 + static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(far >> (8 * i)));
        CHECK_THAT(inspect_fatbin(b).error().message, Catch::Contains("entry 0 at offset 16: its payload of 536870912 bytes runs past the end"));
    }
    {
        ByteVector b = fatbin;
        b[16 + 4] = std::byte{4};  // a header size below the 16 bytes every entry header has
        b[16 + 5] = b[16 + 6] = b[16 + 7] = std::byte{0};
        CHECK_THAT(inspect_fatbin(b).error().message, Catch::Contains("header size 4 does not fit"));
    }
    CHECK(inspect_fatbin(fatbin));
}

TEST_CASE("kernel names of a hostile symbol table: one pass over the strings, each name once", "[hostile][cost][images]") {
    // Every symbol of the cubin made an entry point named from the same offset: a scan per symbol
    // would cost the string table's length once per symbol, and yield the name as often.
    ByteVector b = test::data_file("kernels.sm_90.cubin");
    const uint64_t shoff = load_u64(b, 40);
    const uint16_t shnum = load_u16(b, 60);
    size_t symbols = 0;
    for (uint16_t s = 0; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * 64;
        if (load_u32(b, sh + 4) != 2) continue;  // SHT_SYMTAB
        const uint64_t off = load_u64(b, sh + 24), size = load_u64(b, sh + 32);
        for (uint64_t at = off; at + 24 <= off + size; at += 24, ++symbols) {
            store_u32(b, at, 1);
            store_u8(b, at + 4, 2);      // STT_FUNC
            store_u8(b, at + 5, 0x10);   // STO_CUDA_ENTRY
        }
    }
    REQUIRE(symbols > 2);
    auto info = inspect_cubin(b);
    REQUIRE(info);
    CHECK(info->kernels.size() == 1);
}

TEST_CASE("TOML manifest sources never crash the parser: nesting and key counts are bounded first", "[hostile][toml]") {
    const auto refused = [](const std::string& source) {
        auto m = tools::parse_manifest_source(source, "hostile.toml");
        REQUIRE_FALSE(m);
        CHECK(m.error().code == ErrorCode::invalid_argument);
        return m.error().message;
    };
    std::string dotted = "a";
    for (int i = 0; i < 50000; ++i) dotted += ".a";
    CHECK_THAT(refused(dotted + " = 1\n"), Catch::Contains("hostile.toml:1: keys on one line hold more than 16 dots"));
    CHECK_THAT(refused("[[" + dotted + "]]\n"), Catch::Contains("hostile.toml:1:"));
    CHECK_THAT(refused("x = " + std::string(50000, '[') + std::string(50000, ']') + "\n"), Catch::Contains("nest more than 16 deep"));
    std::string inline_tables = "x = ";
    for (int i = 0; i < 50000; ++i) inline_tables += "{a=";
    CHECK_THAT(refused(inline_tables + "1" + std::string(50000, '}') + "\n"), Catch::Contains("nest more than 16 deep"));
    // Brackets inside strings and comments do not count.
    const std::string fine = "[archive]\nkernel_abi = \"1.0\"\ncontent_version = \"[[[[[[[[[[[[[[[[[[[[....................]]]]\" # [[[[[[[[[[[[[[[[[[[[\n";
    auto m = tools::parse_manifest_source(fine, "fine.toml");
    REQUIRE(m);
    CHECK(m->content_version == "[[[[[[[[[[[[[[[[[[[[....................]]]]");
}

TEST_CASE("versions are strict decimal numbers: nothing wraps", "[hostile][toml]") {
    const auto source = [](const std::string& abi) { return "[archive]\nkernel_abi = \"" + abi + "\"\n"; };
    for (const char* bad : {"-4294967295.-4294967294", "4294967297.1", "65536.0", "1.-1", " 1.2", "1.2 ", "+1.2", "1.2.3", "1.", ".2", "0x1.2", "1e1.0", ""}) {
        INFO(bad);
        auto m = tools::parse_manifest_source(source(bad), "abi.toml");
        REQUIRE_FALSE(m);
        CHECK_THAT(m.error().message, Catch::Contains("must be \"major.minor\", two decimal numbers of 0..65535"));
    }
    auto ok = tools::parse_manifest_source(source("65535.0"), "abi.toml");
    REQUIRE(ok);
    CHECK(ok->kernel_abi_major == 65535);
    auto cap = tools::parse_manifest_source(source("1.0") + "[[kernel]]\nname = \"k\"\nmodule = \"m\"\nsignature = \"\"\n[[kernel.plan]]\nclass = \"modern\"\n"
                                                            "capability = \"-4294967287.0\"\nblock = 1\ngrid = 1\n",
                                            "cap.toml");
    REQUIRE_FALSE(cap);
    CHECK_THAT(cap.error().message, Catch::Contains("two decimal numbers"));
}

TEST_CASE("control characters: refused in names and versions, escaped wherever archive text is printed", "[hostile][text]") {
    // A content version that would recolour a terminal, at the source and in a binary manifest.
    auto source = tools::parse_manifest_source("[archive]\nkernel_abi = \"1.0\"\ncontent_version = \"\\u001b[2J\"\n", "cv.toml");
    REQUIRE_FALSE(source);
    CHECK_THAT(source.error().message, Catch::Contains("content version '\\x1b[2J' holds a byte that is not printable ASCII"));
    const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::item(2, std::string("\x1b[2J"))}));
    auto decoded = decode_manifest(view(m));
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().code == ErrorCode::archive_corrupt);
    CHECK_THAT(decoded.error().message, Catch::Contains("\\x1b[2J"));
    // The writer's name in the header is not checked by the format, so it is escaped on output.
    forge::Archive a;
    a.created_by = "\x1b]0;owned\x07\n";
    a.records.push_back({"k", forge::kind::ptx, forge::codec::stored, 80, 0, 0, forge::kNoRef, ptx(80), {}, {}, {}, {}});
    const forge::Bytes b = forge::write(a);
    auto opened = Archive::open_memory(view(b), "cb.sdma");
    REQUIRE(opened);
    CHECK(printable(opened->header().created_by) == "\\x1b]0;owned\\x07\\n");
    CHECK(printable("plain text") == "plain text");
    CHECK(printable("back\\slash") == "back\\\\slash");
}

TEST_CASE("the manifest a mount decodes is bounded by the file: 64 MiB at most, 4 MiB when compressed", "[hostile][cost]") {
    // Every mount and reload decodes the manifest and parses every plan expression in it (about
    // 50 ms a MiB with plan rules): a compressed one of a few kilobytes could otherwise stand for
    // hundreds of megabytes of work.
    forge::Bytes body = forge::kernel_abi(1, 0);
    const forge::Bytes empty = forge::item(999, forge::Bytes{}, 0);
    while (body.size() < (5u << 20)) body.insert(body.end(), empty.begin(), empty.end());
    const forge::Bytes m = forge::manifest(body);
    forge::Archive compressed;
    compressed.records.push_back({"manifest", forge::kind::manifest, forge::codec::zstd, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    CHECK_THAT(open_error(forge::write(compressed)),
               Catch::Contains("a compressed manifest of " + std::to_string(m.size()) + " bytes exceeds the limit of 4194304 for a compressed one; store it"));
    forge::Archive stored;
    stored.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    CHECK(open_error(forge::write(stored)).empty());  // stored, the same manifest is its own bytes in the file
    forge::Archive big;
    big.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::Bytes((64u << 20) + 1, 0), {}, {}, {}, {}});
    CHECK_THAT(open_error(forge::write(big)), Catch::Contains("a manifest of 67108865 bytes exceeds the limit of 67108864"));
    ArchiveWriter writer;
    auto added = writer.add({"manifest", Kind::manifest, 0, Variant::base, ByteVector((64u << 20) + 1)});
    REQUIRE_FALSE(added);
    CHECK_THAT(added.error().message, Catch::Contains("exceed the manifest limit of 67108864"));
}

TEST_CASE("a fatbin's inner images get the checks a bare image gets: every hostile cubin inside one, stored or compressed, is refused", "[hostile][images][fatbin]") {
    const forge::Bytes good = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin");
    const forge::Bytes ptx_text = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.compute_90.ptx");
    const auto as_bytes_of = [](const forge::Bytes& b) { return Bytes(reinterpret_cast<const std::byte*>(b.data()), b.size()); };
    const forge::FatbinEntry ptx{1, 90, 0x11, ptx_text, 0, 9, 0};
    // The forge's container of a good cubin and PTX passes: the baseline of what follows.
    REQUIRE(inspect_fatbin(as_bytes_of(forge::fatbin({{2, 90, 0x11, good, 0, 1, 8}, ptx}))));
    for (const auto& hostile : forge::hostile_cubins(good)) {
        for (const bool compressed : {false, true}) {
            INFO(hostile.name << (compressed ? ", zstd" : ", stored"));
            const forge::FatbinEntry inner = compressed ? forge::FatbinEntry{2, 90, 0x8011, forge::zstd(hostile.bytes), hostile.bytes.size(), 1, 8}
                                                        : forge::FatbinEntry{2, 90, 0x11, hostile.bytes, 0, 1, 8};
            const forge::Bytes container = forge::fatbin({ptx, inner});
            auto r = inspect_fatbin(as_bytes_of(container));
            REQUIRE_FALSE(r);
            CHECK(r.error().code == ErrorCode::archive_corrupt);
            CHECK_THAT(r.error().message, Catch::Contains("fatbin entry 1 (sm_90") && Catch::Contains("at offset") && Catch::Contains(hostile.expect));
            // In an archive: sdm verify (and every reader that checks a fatbin entry) names it.
            forge::Archive a;
            a.records.push_back({"k", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, container, {}, {}, {}, {}});
            const std::string why = verify_error(forge::write(a));
            CHECK_THAT(why, Catch::Contains("fatbin k") && Catch::Contains(hostile.expect));
        }
    }
}

TEST_CASE("a fatbin's compressed inner entries: sizes checked before anything is allocated, the decoded image checked like any other", "[hostile][images][fatbin][cost]") {
    const forge::Bytes good = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin");
    const auto error_of = [](const forge::Bytes& container) {
        auto r = inspect_fatbin(Bytes(reinterpret_cast<const std::byte*>(container.data()), container.size()));
        return r ? std::string("accepted") : r.error().message;
    };
    // A zstd inner entry that claims 1 GiB from 40 bytes: refused from its header alone.
    CHECK_THAT(error_of(forge::fatbin({{2, 90, 0x8011, forge::zstd(forge::Bytes(40, 1)), uint64_t{1} << 30, 1, 8}})),
               Catch::Contains("more than that compression can expand to"));
    // One that decodes to other bytes than it declares.
    CHECK_THAT(error_of(forge::fatbin({{2, 90, 0x8011, forge::zstd(good), good.size() + 1, 1, 8}})), Catch::Contains("fatbin entry 0 (sm_90, zstd)"));
    // A compressed cubin that decodes to the 64-byte hostile header; and to a cubin of another arch
    // than its entry declares (the driver would pick it for an sm_80 device).
    const auto hostile = forge::hostile_cubins(good).back();
    CHECK_THAT(error_of(forge::fatbin({{2, 90, 0x8011, forge::zstd(hostile.bytes), hostile.bytes.size(), 1, 8}})), Catch::Contains(hostile.expect));
    CHECK_THAT(error_of(forge::fatbin({{2, 80, 0x8011, forge::zstd(good), good.size(), 1, 8}})), Catch::Contains("declared sm_80 but its bytes are for sm_90"));
    // Inner PTX and LTO-IR get theirs: PTX is a C string, read to its first NUL as the driver
    // reads it (here: before its .version); an LTO-IR offset past its end.
    forge::Bytes nul_ptx = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.compute_90.ptx");
    nul_ptx[100] = 0;
    CHECK_THAT(error_of(forge::fatbin({{1, 90, 0x8011, forge::zstd(nul_ptx), nul_ptx.size(), 9, 0}})),
               Catch::Contains("fatbin entry 0 (compute_90, zstd)") && Catch::Contains("not a valid PTX module"));
    forge::Bytes lto = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.lto_90.ltoir");
    lto[22] = 0xff;  // the IR's offset, 16 MiB past the end
    CHECK_THAT(error_of(forge::fatbin({{8, 90, 0x11, lto, 0, 0, 0}})), Catch::Contains("not a valid LTO-IR module"));
    // An entry kind sdm does not know would reach the driver unchecked: refused, naming the fix.
    CHECK_THAT(error_of(forge::fatbin({{2, 90, 0x11, good, 0, 1, 8}, {16, 90, 0x11, forge::Bytes(64, 7), 0, 0, 0}})),
               Catch::Contains("entry kind 16 is not one sdm can check") && Catch::Contains("sdm import"));
}
