// nvPTXCompiler (the static library, no GPU needed). Where this libsdm was built with it (the
// Meson feature ptx_compiler found libnvptxcompiler_static.a): the test PTX compiles for sm_80,
// 90, 90a, 100 and 120 into cubins of that arch, bad PTX brings the compiler's log, LTO-IR is
// refused. Where it was not (CI machines: the library is on neither Debian nor PyPI): every call
// says so, naming the Meson feature, and the loader falls through to the next backend
// (tests/runtime/registry/test_modules.cpp).
#include <catch2/catch.hpp>

#include "archive/image.hpp"
#include "runtime/jit/jit_ptxcompiler.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::runtime;
using archive::Kind;
using archive::Variant;

TEST_CASE("nvPTXCompiler compiles PTX for every arch, or says it was not built in", "[jit][ptxcompiler]") {
    const auto ptx80 = test::data_file("kernels.compute_80.ptx");
    const auto ptx90 = test::data_file("kernels.compute_90.ptx");
    if (!ptx_compiler_built()) {
        const auto version = ptx_compiler_version();
        REQUIRE_FALSE(version);
        CHECK(version.error().code == ErrorCode::unsupported);
        const auto out = ptx_compile({Kind::ptx, ptx90, "kernels.ptx"}, 90, Variant::base, {});
        REQUIRE_FALSE(out);
        CHECK(out.error().code == ErrorCode::unsupported);
        CHECK_THAT(out.error().message, Catch::Contains("built without nvPTXCompiler") && Catch::Contains("-Dptx_compiler=enabled"));
        return;
    }
    const auto version = ptx_compiler_version();
    REQUIRE(version);
    CHECK(version->find('.') != std::string::npos);
    const std::tuple<const ByteVector*, uint16_t, Variant> cases[] = {
        {&ptx80, 80, Variant::base}, {&ptx80, 86, Variant::base}, {&ptx90, 90, Variant::base}, {&ptx90, 90, Variant::a},
        {&ptx90, 100, Variant::base}, {&ptx90, 120, Variant::base}};
    for (const auto& [ptx, sm, variant] : cases) {
        INFO("sm_" << sm << archive::variant_suffix(variant));
        auto out = ptx_compile({Kind::ptx, *ptx, "kernels.ptx"}, sm, variant, {});
        REQUIRE(out);
        auto info = archive::inspect_cubin(out->cubin);
        REQUIRE(info);
        CHECK(info->sm == sm);
        CHECK(info->variant == variant);
        CHECK(info->virtual_sm == (ptx == &ptx80 ? 80 : 90));
        CHECK(info->kernels == std::vector<std::string>{"axpy", "scale"});
    }
}

TEST_CASE("an nvPTXCompiler failure carries its result and log; LTO-IR is not its input", "[jit][ptxcompiler]") {
    if (!ptx_compiler_built()) return;  // the not-built answer is checked above
    const std::string bad = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry broken() { not_an_instruction; }\n";
    auto out = ptx_compile({Kind::ptx, as_bytes(bad), "broken.ptx"}, 90, Variant::base, {});
    REQUIRE_FALSE(out);
    CHECK(out.error().code == ErrorCode::jit);
    CHECK(out.error().native != 0);
    CHECK_FALSE(out.error().log.empty());
    CHECK_THAT(out.error().message, Catch::Contains("nvPTXCompiler could not compile broken.ptx for sm_90") && Catch::Contains("not_an_instruction"));
    auto older = ptx_compile({Kind::ptx, test::data_file("kernels.compute_90.ptx"), "kernels.ptx"}, 80, Variant::base, {});
    REQUIRE_FALSE(older);
    CHECK_THAT(older.error().message, Catch::Contains("for sm_80"));
    auto lto = ptx_compile({Kind::ltoir, test::data_file("kernels.lto_90.ltoir"), "kernels.ltoir"}, 90, Variant::base, {});
    REQUIRE_FALSE(lto);
    CHECK(lto.error().code == ErrorCode::invalid_argument);
}
