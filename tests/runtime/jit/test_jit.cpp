// nvJitLink for real (no GPU needed): the test PTX links for sm_80, 90, 90a, 100, 120, and the
// cubins it writes carry the right SM, variant and kernels; LTO-IR links; bad input brings the log.
#include <catch2/catch.hpp>

#include "archive/image.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::runtime;
using archive::Kind;
using archive::Variant;

TEST_CASE("nvJitLink links PTX for every arch, and the cubins parse as that arch", "[jit]") {
    auto jit = NvJitLink::load("");
    REQUIRE(jit);
    CHECK(jit->major() >= 12);
    const auto ptx80 = test::data_file("kernels.compute_80.ptx");
    const auto ptx90 = test::data_file("kernels.compute_90.ptx");
    const std::tuple<const ByteVector*, uint16_t, Variant> cases[] = {
        {&ptx80, 80, Variant::base}, {&ptx80, 86, Variant::base}, {&ptx90, 90, Variant::base}, {&ptx90, 90, Variant::a},
        {&ptx90, 100, Variant::base}, {&ptx90, 120, Variant::base}};
    for (const auto& [ptx, sm, variant] : cases) {
        INFO("sm_" << sm << archive::variant_suffix(variant));
        auto out = jit->link({Kind::ptx, *ptx, "kernels.ptx"}, sm, variant, {});
        REQUIRE(out);
        auto info = archive::inspect_cubin(out->cubin);
        REQUIRE(info);
        CHECK(info->sm == sm);
        CHECK(info->variant == variant);
        CHECK(info->kernels == std::vector<std::string>{"axpy", "scale"});
        CHECK(out->milliseconds > 0);
    }
}

TEST_CASE("nvJitLink links LTO-IR with -lto", "[jit]") {
    auto jit = NvJitLink::load("");
    REQUIRE(jit);
    auto out = jit->link({Kind::ltoir, test::data_file("kernels.lto_90.ltoir"), "kernels.ltoir"}, 90, Variant::base, {});
    REQUIRE(out);
    CHECK(archive::inspect_cubin(out->cubin)->sm == 90);
}

TEST_CASE("a link failure carries nvJitLink's result and log", "[jit]") {
    auto jit = NvJitLink::load("");
    REQUIRE(jit);
    const std::string bad = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry broken() { not_an_instruction; }\n";
    auto out = jit->link({Kind::ptx, as_bytes(bad), "broken.ptx"}, 90, Variant::base, {});
    REQUIRE_FALSE(out);
    CHECK(out.error().code == ErrorCode::jit);
    CHECK(out.error().native != 0);
    CHECK_FALSE(out.error().log.empty());
    CHECK_THAT(out.error().message, Catch::Contains("linking broken.ptx for sm_90") && Catch::Contains("not_an_instruction"));
    // PTX for a newer arch cannot be linked for an older one.
    auto older = jit->link({Kind::ptx, test::data_file("kernels.compute_90.ptx"), "kernels.ptx"}, 80, Variant::base, {});
    REQUIRE_FALSE(older);
    CHECK_THAT(older.error().message, Catch::Contains("for sm_80"));
}

TEST_CASE("a missing nvJitLink lists where it looked", "[jit]") {
    auto jit = NvJitLink::load("/nonexistent/libnvJitLink.so");
    REQUIRE_FALSE(jit);
    CHECK(jit.error().code == ErrorCode::not_found);
    CHECK_THAT(jit.error().message, Catch::Contains("SDM_NVJITLINK") && Catch::Contains("/nonexistent/libnvJitLink.so"));
}
