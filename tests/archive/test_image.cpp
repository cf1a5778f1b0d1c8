// Image parsers against real nvcc output (tests/data) and hand-damaged copies of it.
#include <catch2/catch.hpp>

#include <functional>

#include "archive/image.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::archive;

TEST_CASE("targets parse and print", "[format]") {
    const auto t = parse_target("sm_90a");
    REQUIRE(t);
    CHECK(t->kind == Kind::cubin);
    CHECK(t->sm == 90);
    CHECK(t->variant == Variant::a);
    CHECK(target_name(Kind::ptx, 100, Variant::f) == "compute_100f");
    CHECK(target_name(Kind::ltoir, 90, Variant::base) == "lto_90");
    CHECK(parse_target("compute_120")->kind == Kind::ptx);
    CHECK_FALSE(parse_target("sm_9"));
    CHECK_FALSE(parse_target("sm_90b"));
    CHECK_FALSE(parse_target("gfx90a"));
    CHECK_FALSE(parse_target("sm_"));
    CHECK(sm_capability(103) == "10.3");
    CHECK(valid_name("sdm_gather"));
    CHECK_FALSE(valid_name(""));
    CHECK_FALSE(valid_name("has space"));
    CHECK_FALSE(valid_name(std::string(257, 'x')));
}

TEST_CASE("cubins: the SM comes from e_flags, the kernels from the symbol table", "[image]") {
    const std::pair<const char*, uint16_t> cases[] = {{"kernels.sm_80.cubin", 80},   {"kernels.sm_86.cubin", 86},
                                                      {"kernels.sm_90.cubin", 90},   {"kernels.sm_90a.cubin", 90},
                                                      {"kernels.sm_100f.cubin", 100}, {"kernels.sm_120.cubin", 120}};
    for (const auto& [file, sm] : cases) {
        INFO(file);
        const auto bytes = test::data_file(file);
        auto info = inspect_cubin(bytes);
        REQUIRE(info);
        CHECK(info->sm == sm);
        CHECK(info->elf_abi_version == 8);
        REQUIRE(info->variant.has_value());  // from .note.nv.tkinfo, not the ELF header
        CHECK(*info->variant == (std::string(file).find("90a") != std::string::npos ? Variant::a
                                 : std::string(file).find("100f") != std::string::npos ? Variant::f : Variant::base));
        CHECK(info->kernels == std::vector<std::string>{"axpy", "scale"});
    }
}

TEST_CASE("a device link's input: a relocatable cubin calling functions it lacks is named, a loadable one is not", "[image][hostile]") {
    // link_input.cu, compiled -rdc (as cuSPARSE's SpMMOp kernels are): the driver cannot load it alone.
    auto info = inspect_cubin(test::data_file("link_input.sm_90.cubin"));
    REQUIRE(info);
    CHECK(info->relocatable);
    CHECK(info->kernels == std::vector<std::string>{"_Z5fixupPiPKii"});
    CHECK(info->undefined_functions == std::vector<std::string>{"_Z6add_opii", "_Z8epilogueii"});
    const auto refused = link_input_error(*info, "module m, sm_90");
    REQUIRE(refused);
    CHECK(refused->code == ErrorCode::unsupported);
    CHECK_THAT(refused->message, Catch::Contains("module m, sm_90 is a relocatable cubin that calls 2 function(s) it does not define (_Z6add_opii, "
                                                 "_Z8epilogueii)") && Catch::Contains("Link it first"));
    // nvcc's whole-program cubins: executable, nothing undefined.
    auto whole = inspect_cubin(test::data_file("kernels.sm_90.cubin"));
    REQUIRE(whole);
    CHECK_FALSE(whole->relocatable);
    CHECK(whole->undefined_functions.empty());
    CHECK_FALSE(link_input_error(*whole, "kernels"));
}

TEST_CASE("cubins of ELF ABI version 7 carry the SM in the low byte of e_flags", "[image]") {
    auto bytes = test::data_file("kernels.sm_80.cubin");
    store_u8(bytes, 8, 7);
    store_u32(bytes, 48, 0x00500050);  // older toolkits: e_flags & 0xff is the SM
    auto info = inspect_cubin(bytes);
    REQUIRE(info);
    CHECK(info->sm == 80);
}

TEST_CASE("damaged cubins are refused with the reason", "[image]") {
    const auto good = test::data_file("kernels.sm_90.cubin");
    auto bytes = good;
    store_u16(bytes, 18, 62);  // x86-64
    CHECK_THAT(inspect_cubin(bytes).error().message, Catch::Contains("e_machine is 62"));
    bytes = good;
    store_u8(bytes, 7, 0);
    CHECK_THAT(inspect_cubin(bytes).error().message, Catch::Contains("EI_OSABI"));
    bytes = good;
    store_u64(bytes, 40, bytes.size());  // section headers past the end
    CHECK_THAT(inspect_cubin(bytes).error().message, Catch::Contains("the section header table [5728, +1152) lies outside the image of 5728 bytes"));
    CHECK_THAT(inspect_cubin(Bytes(good).first(20)).error().message, Catch::Contains("shorter than an ELF64 header"));
    // Every truncation of a cubin either parses or fails cleanly (no out-of-bounds read under ASan).
    for (size_t n = 0; n < good.size(); n += 7) (void)inspect_cubin(Bytes(good).first(n));
}

TEST_CASE("PTX: .version, .target and entries, comments skipped", "[image]") {
    auto info = inspect_ptx(test::data_file("kernels.compute_80.ptx"));
    REQUIRE(info);
    CHECK(info->sm == 80);
    CHECK(info->variant == Variant::base);
    CHECK(info->ptx_isa == 90);  // CUDA 13.0 writes .version 9.0
    CHECK(info->kernels == std::vector<std::string>{"axpy", "scale"});

    const std::string text = "// .target sm_50\n/* .version 1.0 */\n.version 8.7\n.target sm_100a, debug\n.address_size 64\n"
                             ".visible .entry k(\n.param .u64 p)\n{ ret; }\n";
    info = inspect_ptx(as_bytes(text));
    REQUIRE(info);
    CHECK(info->sm == 100);
    CHECK(info->variant == Variant::a);
    CHECK(info->ptx_isa == 87);
    CHECK(info->kernels == std::vector<std::string>{"k"});

    CHECK_THAT(inspect_ptx(as_bytes(".version 8.0\n")).error().message, Catch::Contains("not followed by a .target"));
    CHECK_THAT(inspect_ptx(as_bytes(".target sm_90\n")).error().message, Catch::Contains("does not begin with a .version"));
    CHECK_THAT(inspect_ptx(as_bytes(".version 8.0\n.target gfx90a\n")).error().message, Catch::Contains("not an sm_XY"));
    CHECK_THAT(inspect_ptx(test::data_file("kernels.sm_90.cubin")).error().message, Catch::Contains("NUL"));
}

TEST_CASE("PTX: the header as ptxas reads it, not as a scan for the first directive", "[image][hostile]") {
    const auto error_of = [](const std::string& text) {
        auto r = inspect_ptx(as_bytes(text));
        return r ? std::string("accepted") : r.error().message;
    };
    // A version number with letters after it is no version (from_chars stopped at "0" before).
    CHECK_THAT(error_of(".version 8.0abc\n.target sm_90\n"), Catch::Contains("malformed .version '8.0abc'"));
    CHECK_THAT(error_of(".version 8.\n.target sm_90\n"), Catch::Contains("malformed .version"));
    CHECK_THAT(error_of(".version x8.0\n.target sm_90\n"), Catch::Contains("malformed .version"));
    // Directives are read where ptxas reads them: .version first, .target next, once each.
    CHECK_THAT(error_of(".target sm_50\n.version 8.0\n.target sm_90\n"), Catch::Contains("does not begin with a .version"));
    CHECK_THAT(error_of(".version 8.0\n.address_size 64\n.target sm_90\n"), Catch::Contains("not followed by a .target"));
    CHECK_THAT(error_of(".version 8.0\n.target sm_90\n.target sm_50\n"), Catch::Contains("a second .target"));
    // String literals are no comments and hold no directives: a "//" inside one does not hide the
    // rest of its line, a "/*" does not swallow the module, and an .entry in one defines nothing.
    auto info = inspect_ptx(as_bytes(".version 8.0\n.target sm_90\n.file 1 \"a//b.cu\"\n.visible .entry k()\n{ ret; }\n"));
    REQUIRE(info);
    CHECK(info->kernels == std::vector<std::string>{"k"});
    info = inspect_ptx(as_bytes(".version 8.0\n.target sm_90\n.pragma \"/*\";\n.visible .entry k()\n{ ret; }\n.pragma \"*/\";\n"));
    REQUIRE(info);
    CHECK(info->kernels == std::vector<std::string>{"k"});
    info = inspect_ptx(as_bytes(".version 8.0\n.target sm_90\n.pragma \".entry ghost(\";\n.visible .entry k()\n{ ret; }\n"));
    REQUIRE(info);
    CHECK(info->kernels == std::vector<std::string>{"k"});
    // An escaped quote does not end a literal; an unterminated one ends at its line.
    info = inspect_ptx(as_bytes(".version 8.0\n.target sm_90\n.pragma \"a\\\" .entry ghost(\";\n.pragma \"open\n.visible .entry k()\n{ ret; }\n"));
    REQUIRE(info);
    CHECK(info->kernels == std::vector<std::string>{"k"});
    // And a comment that names a .target before the real header changes nothing.
    info = inspect_ptx(as_bytes("// .target sm_50\n/* \".version 1.0\" */\n.version 8.7\n.target sm_90\n"));
    REQUIRE(info);
    CHECK(info->sm == 90);
}

TEST_CASE("LTO-IR: the NVVM IR container's header, every offset checked", "[image][hostile]") {
    auto lto = inspect_ltoir(test::data_file("kernels.lto_90.ltoir"));
    REQUIRE(lto);
    CHECK(lto->sm == 90);
    CHECK_FALSE(lto->variant);
    CHECK_THAT(inspect_ltoir(test::data_file("kernels.sm_90.cubin")).error().message, Catch::Contains("no NVVM IR container header"));
    const auto good = test::data_file("kernels.lto_90.ltoir");
    const auto error_of = [&](const std::function<void(ByteVector&)>& mutate) {
        ByteVector b = good;
        mutate(b);
        auto r = inspect_ltoir(b);
        return r ? std::string("accepted") : r.error().message;
    };
    // One field changed, as an attacker would: every offset nvJitLink follows must lie in order
    // inside the container, with an IR after them.
    CHECK_THAT(error_of([](ByteVector& b) { store_u8(b, 4, 2); }), Catch::Contains("container version 2.65, not 1.x"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 12, 8); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 12, 26); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u32(b, 16, 0xfffffff0u); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u32(b, 20, static_cast<uint32_t>(b.size())); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u32(b, 20, 0x7fffffffu); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 14, 0); }), Catch::Contains("IR level 0"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 26, 905); }), Catch::Contains("arch option 905 is not an SM times 10"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 24, 7); }), Catch::Contains("no arch option"));
    CHECK_THAT(error_of([](ByteVector& b) { store_u16(b, 28, 1); }), Catch::Contains("names its arch twice"));
    CHECK_THAT(error_of([](ByteVector& b) { b.resize(44); }), Catch::Contains("do not lie in order"));
    CHECK_THAT(error_of([](ByteVector& b) { b.resize(23); }), Catch::Contains("no NVVM IR container header"));
    // The arch-specific variant is recorded (option 32 = 1); lto_90a's container says so.
    CHECK(error_of([](ByteVector&) {}) == "accepted");
    // Every truncation fails cleanly or parses (no out-of-bounds read under ASan).
    for (size_t n = 0; n < good.size(); n += 3) (void)inspect_ltoir(Bytes(good).first(n));
}

TEST_CASE("LTO-IR and fatbin magic", "[image]") {
    CHECK(inspect_fatbin(test::data_file("kernels.fatbin")));
    auto fat = test::data_file("kernels.fatbin");
    fat.resize(fat.size() / 2);
    CHECK_THAT(inspect_fatbin(fat).error().message, Catch::Contains("declares"));
}

TEST_CASE("a declared target that disagrees with the bytes is a mismatch", "[image]") {
    const auto sm80 = test::data_file("kernels.sm_80.cubin");
    auto r = check_declared_target(Kind::cubin, 90, Variant::base, sm80, "cubin kernels");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::mismatch);
    CHECK_THAT(r.error().message, Catch::Contains("declared sm_90 but its bytes are for sm_80"));
    // a/f variants of a cubin are not in the ELF header; ptxas's note names them.
    r = check_declared_target(Kind::cubin, 90, Variant::a, test::data_file("kernels.sm_90.cubin"), "cubin kernels");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("declared sm_90a but its bytes are for sm_90"));
    r = check_declared_target(Kind::cubin, 100, Variant::base, test::data_file("kernels.sm_100f.cubin"), "cubin kernels");
    CHECK_THAT(r.error().message, Catch::Contains("declared sm_100 but its bytes are for sm_100f"));
    CHECK(check_declared_target(Kind::cubin, 90, Variant::a, test::data_file("kernels.sm_90a.cubin"), "x"));
    // PTX records its variant on .target.
    r = check_declared_target(Kind::ptx, 90, Variant::a, test::data_file("kernels.compute_90.ptx"), "ptx kernels");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("declared compute_90a but its bytes are for compute_90"));
    r = check_declared_target(Kind::ptx, 90, Variant::base, test::data_file("kernels.sm_90.cubin"), "ptx kernels");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::archive_corrupt);
}
