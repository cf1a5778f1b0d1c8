// Signatures derived from images (archive/kernel_params.hpp): the kernels of tests/data/params.cu
// as nvcc 13.0 compiled them, against signatures written by hand from the C++ source; and cubins
// and PTX with their parameter tables damaged, each refused with a message naming the kernel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "archive/kernel_params.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

std::map<std::string, std::string> signatures(const Result<std::vector<KernelParams>>& kernels) {
    if (!kernels) FAIL(kernels.error().message);
    std::map<std::string, std::string> out;
    for (const auto& k : *kernels) {
        CHECK(k.unrepresentable.empty());
        out[k.name] = signature_text(k.signature);
    }
    return out;
}

Bytes view(const std::string& text) { return {reinterpret_cast<const std::byte*>(text.data()), text.size()}; }

// The bytes of section `name` in an ELF64 image: offset and size.
std::pair<size_t, size_t> section(const ByteVector& elf, const std::string& name) {
    const uint64_t shoff = load_u64(elf, 40);
    const uint16_t shnum = load_u16(elf, 60), shstrndx = load_u16(elf, 62);
    const uint64_t names = load_u64(elf, shoff + size_t{shstrndx} * 64 + 24);
    for (uint16_t s = 0; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * 64;
        const char* n = reinterpret_cast<const char*>(elf.data()) + names + load_u32(elf, sh);
        if (name == n) return {load_u64(elf, sh + 24), load_u64(elf, sh + 32)};
    }
    FAIL("no section " << name);
    return {};
}

// The offset of the first record of `attribute` in a .nv.info section.
size_t info_record(const ByteVector& elf, std::pair<size_t, size_t> sec, uint8_t attribute) {
    for (size_t at = sec.first; at < sec.first + sec.second;) {
        if (load_u8(elf, at + 1) == attribute) return at;
        at += load_u8(elf, at) == 4 ? 4 + load_u16(elf, at + 2) : 4;
    }
    FAIL("no record " << int(attribute));
    return 0;
}

void put16(ByteVector& b, size_t at, uint16_t v) {
    b[at] = std::byte(v & 0xff);
    b[at + 1] = std::byte(v >> 8);
}

std::string refusal(const ByteVector& cubin) {
    auto r = cubin_kernel_params(cubin);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::archive_corrupt);
    return r.error().message;
}

}  // namespace

TEST_CASE("derived signatures of params.cu, cubin and PTX, against the source") {
    // From the C++ parameter lists: a size 1/2/4/8 parameter aligned to its size is b8..b64, any
    // other opaque:SIZE:ALIGN. A cubin records no alignment: Pair (8 bytes at offset 0) reads as b64
    // there, opaque:8:4 in PTX; everything else agrees.
    const std::map<std::string, std::string> common = {
        {"halves", "b16,b16,b64"},
        {"mixed", "b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64"},
        {"gap", "b32,opaque:16:16,b64"},  // float4 at offset 16: the alignment the gap after the int needs
        {"no_params", ""},
    };
    auto cubin = common, ptx = common;
    cubin["by_struct"] = "b64,b64";
    ptx["by_struct"] = "opaque:8:4,b64";
    CHECK(signatures(cubin_kernel_params(test::data_file("params.sm_90.cubin"))) == cubin);
    CHECK(signatures(cubin_kernel_params(test::data_file("params.sm_80.cubin"))) == cubin);
    CHECK(signatures(ptx_kernel_params(test::data_file("params.compute_90.ptx"))) == ptx);
    CHECK(signatures(image_kernel_params(Kind::cubin, test::data_file("kernels.sm_90.cubin"))) ==
          std::map<std::string, std::string>{{"axpy", "b64,b64,b32,b32"}, {"scale", "b64,b32,b32"}});
    // Both views lay the parameters out alike, so either checks a declared signature.
    const auto declared = *parse_signature("opaque:8:4,ptr");
    CHECK(check_signature_layout("by_struct", declared, *parse_signature("b64,b64"), "params.sm_90.cubin"));
    auto wrong = check_signature_layout("mixed", *parse_signature("i32,f64,i32,i64,opaque:3:1,opaque:16:8,ptr"),
                                        *parse_signature(cubin["mixed"]), "params.sm_90.cubin");
    REQUIRE_FALSE(wrong);
    CHECK_THAT(wrong.error().message, Catch::Contains("kernel mixed parameter 0") && Catch::Contains("params.sm_90.cubin says"));
}

TEST_CASE("derived types") {
    CHECK(derived_param_type(1, 1) == ParamType::b8);
    CHECK(derived_param_type(2, 2) == ParamType::b16);
    CHECK(derived_param_type(8, 8) == ParamType::b64);
    CHECK(derived_param_type(8, 4) == ParamType{ParamKind::opaque, 8, 4});
    CHECK(derived_param_type(12, 4) == ParamType{ParamKind::opaque, 12, 4});
}

TEST_CASE("cubin parameter tables that lie are refused naming the kernel") {
    const ByteVector good = test::data_file("params.sm_90.cubin");
    const auto info = section(good, ".nv.info.mixed");
    const size_t kparam = info_record(good, info, kEiattrKparamInfo);  // the last parameter's (ptxas lists them last first)
    SECTION("an ordinal repeated") {
        ByteVector b = good;
        put16(b, kparam + 4 + 4, 5);
        CHECK_THAT(refusal(b), Catch::Contains("kernel mixed") && Catch::Contains("repeats ordinal 5"));
    }
    SECTION("an ordinal skipped") {
        ByteVector b = good;
        put16(b, kparam + 4 + 4, 9);
        CHECK_THAT(refusal(b), Catch::Contains("skips to ordinal 9"));
    }
    SECTION("a parameter past the parameter bank") {
        ByteVector b = good;
        put16(b, kparam + 4 + 6, 0x1000);
        CHECK_THAT(refusal(b), Catch::Contains("passes the parameter bank of 64 bytes"));
    }
    SECTION("parameters that overlap") {
        ByteVector b = good;
        put16(b, kparam + 4 + 6, 0x28);
        CHECK_THAT(refusal(b), Catch::Contains("overlaps the one before it"));
    }
    SECTION("a record longer than its section") {
        ByteVector b = good;
        put16(b, kparam + 2, 0xfff0);
        CHECK_THAT(refusal(b), Catch::Contains("past the section's"));
    }
    SECTION("a KPARAM_INFO record too short") {
        ByteVector b = good;
        put16(b, kparam + 2, 4);
        CHECK_THAT(refusal(b), Catch::Contains("EIATTR_KPARAM_INFO of 4 bytes"));
    }
    SECTION("an unknown record format") {
        ByteVector b = good;
        b[kparam] = std::byte{9};
        CHECK_THAT(refusal(b), Catch::Contains("unknown format 9"));
    }
    SECTION("a gap no alignment explains (cuBLASLt's sm_90a kernels): derived, not refused, and said to be unrepresentable") {
        ByteVector b = good;
        const auto gap = section(b, ".nv.info.gap");
        const size_t first = info_record(b, gap, kEiattrKparamInfo);  // the last parameter (the pointer, at 32)
        // The int, parameter 0, moved from offset 0 to 8: still inside the bank, overlapping nothing.
        for (size_t at = first; at < gap.first + gap.second; at += load_u8(b, at) == 4 ? 4 + load_u16(b, at + 2) : 4)
            if (load_u8(b, at + 1) == kEiattrKparamInfo && load_u16(b, at + 8) == 0) put16(b, at + 10, 8);
        auto kernels = cubin_kernel_params(b);
        REQUIRE(kernels);
        const auto it = std::find_if(kernels->begin(), kernels->end(), [](const KernelParams& k) { return k.name == "gap"; });
        REQUIRE(it != kernels->end());
        CHECK_FALSE(it->offsets_exact);
        CHECK_THAT(it->unrepresentable, Catch::Contains("parameter 0 sits at offset 8") && Catch::Contains("no signature has this layout"));
    }
    SECTION("a parameter bank without KPARAM_INFO records (cuBLASLt's sm_100f kernels)") {
        ByteVector b = good;
        const auto halves = section(b, ".nv.info.halves");
        for (size_t at = halves.first; at < halves.first + halves.second; at += load_u8(b, at) == 4 ? 4 + load_u16(b, at + 2) : 4)
            if (load_u8(b, at + 1) == kEiattrKparamInfo) b[at + 1] = std::byte{0x7e};  // an attribute sdm does not read
        auto kernels = cubin_kernel_params(b);
        REQUIRE(kernels);
        const auto it = std::find_if(kernels->begin(), kernels->end(), [](const KernelParams& k) { return k.name == "halves"; });
        REQUIRE(it != kernels->end());
        CHECK_FALSE(it->offsets_exact);
        CHECK_THAT(it->unrepresentable, Catch::Contains("parameter bank of 16 bytes but not the parameters in it"));
    }
    SECTION("a kernel whose .nv.info section is missing") {
        ByteVector b = good;
        // Unlink every per-kernel .nv.info section from its code (sh_info = 0).
        const uint64_t shoff = load_u64(b, 40);
        for (uint16_t s = 0; s < load_u16(b, 60); ++s)
            if (load_u32(b, shoff + s * 64 + 4) == 0x70000000) put16(b, shoff + s * 64 + 44, 0);
        CHECK_THAT(refusal(b), Catch::Contains("no .nv.info section describes its parameters"));
    }
    SECTION("every truncation and every byte of the table flipped: refused or read, never a crash") {
        for (size_t n = 0; n < good.size(); n += 97) (void)cubin_kernel_params(Bytes(good).first(n));
        for (size_t at = info.first; at < info.first + info.second; ++at) {
            ByteVector b = good;
            b[at] ^= std::byte{0xff};
            (void)cubin_kernel_params(b);
        }
    }
}

TEST_CASE("PTX parameter lists: the forms nvcc writes, and malformed ones") {
    const std::string head = ".version 9.0\n.target sm_90\n.address_size 64\n";
    const auto one = [&](const std::string& params) {
        auto r = ptx_kernel_params(view(head + ".visible .entry k(" + params + ") { ret; }\n"));
        return r ? std::optional<std::string>(signature_text((*r)[0].signature)) : std::nullopt;
    };
    CHECK(one(".param .u64 .ptr .global .align 16 p, .param .f32 f") == "b64,b32");  // .align after .ptr: the pointee's
    CHECK(one(".param .u64 .ptr.global.align 16 p") == "b64");
    CHECK(one(".param .align 8 .b8 s[24], /* comment */ .param .s16 h") == "opaque:24:8,b16");
    CHECK(one(".param .u32 a[3]") == "opaque:12:4");
    CHECK(one("") == "");
    for (const std::string bad : {".param .u64", ".param p", ".param .u64 p q", ".param .b8 s[0]", ".param .b8 s[x]", ".param .align 3 .b8 s[3]",
                                  ".param .u7 p", ".param .u64 p .param .u64 q", ".reg .u64 p", ".param .u64 p,"}) {
        INFO(bad);
        CHECK_FALSE(one(bad));
    }
    auto open = ptx_kernel_params(view(head + ".entry k(.param .u64 p"));
    REQUIRE_FALSE(open);
    CHECK_THAT(open.error().message, Catch::Contains("PTX .entry k") && Catch::Contains("does not end"));
    // More parameters than a manifest holds: derived, and said to be unrepresentable.
    std::string many;
    for (int i = 0; i < 65; ++i) many += (i ? ", .param .u32 p" : ".param .u32 p") + std::to_string(i);
    auto wide = ptx_kernel_params(view(head + ".entry k(" + many + ") { ret; }"));
    REQUIRE(wide);
    CHECK_THAT((*wide)[0].unrepresentable, Catch::Contains("65 parameters"));
}
