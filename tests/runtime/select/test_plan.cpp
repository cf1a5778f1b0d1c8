// Launch plans without a GPU (runtime/select/plan.*): the test manifest's plan table over every row of the
// hardware matrix, the rule order, the class checks (threads, shared memory, clusters, PDL) and
// the messages for no rule and for a rule that fails to evaluate.
#include <catch2/catch.hpp>

#include <map>

#include "archive/manifest.hpp"
#include "runtime/select/plan.hpp"
#include "support.hpp"

using namespace sdm;
using namespace sdm::runtime;

namespace Catch {
template <>
struct StringMaker<Plan> {
    static std::string convert(const Plan& p) { return plan_text(p) + ", blocks_per_sm " + std::to_string(p.blocks_per_sm) + ", rule " + std::to_string(p.rule); }
};
}  // namespace Catch

namespace {

PlanTable scale_table() {
    static const archive::Manifest m = test::test_manifest();
    auto t = PlanTable::compile(*m.find_kernel("scale"));
    REQUIRE(t);
    return std::move(*t);
}

PlanDevice row(const char* name) {
    for (const auto& r : hardware_rows())
        if (std::string(r.name) == name) return plan_device(r).value();
    FAIL("no row " << name);
    return {};
}

Plan select_ok(const PlanTable& t, const PlanDevice& d, int64_t n) {
    const int64_t problem[] = {n};
    auto p = t.select(d, problem);
    if (!p) FAIL(p.error().message);
    return *p;
}

archive::KernelSpec one_rule(archive::PlanRule rule) {
    archive::KernelSpec k{"k", "m", {archive::ParamType::ptr}, {"N"}, {std::move(rule)}};
    return k;
}

}  // namespace

TEST_CASE("the plan table reduces to the tuned constants on GB300 and scales on the other rows", "[plan]") {
    const PlanTable t = scale_table();
    const int64_t n = 1 << 20;  // 4 MiB of floats: under a quarter of every modern L2
    // GB300 (152 SMs, 135,528,448 B of L2): 608 blocks of 512, 27,863 B each, PDL.
    const Plan gb300 = select_ok(t, row("NVIDIA GB300"), n);
    CHECK(gb300 == Plan{608, 512, 27863, {1, 1, 1}, true, 4, 2});
    // B200 (148 SMs, 132,120,576 B): the same rule, scaled.
    CHECK(select_ok(t, row("NVIDIA B200"), n) == Plan{592, 512, 27897, {1, 1, 1}, true, 4, 2});
    // Hopper has its own rule (capability 9.0): 132 SMs * 8 blocks of 256.
    CHECK(select_ok(t, row("NVIDIA H200"), n) == Plan{1056, 256, 0, {1, 1, 1}, true, 8, 0});
    CHECK(select_ok(t, row("NVIDIA H100 80GB HBM3"), n) == Plan{1056, 256, 0, {1, 1, 1}, true, 8, 0});
    // Past a quarter of L2 (H100: 13,107,200 elements), clusters of two, the grid rounded to them.
    const Plan big = select_ok(t, row("NVIDIA H100 80GB HBM3"), 13107201);
    CHECK(big.rule == 1);
    CHECK(big.block == 1024);
    CHECK(big.grid == 12802);
    CHECK(big.cluster == std::array<uint32_t, 3>{2, 1, 1});
    CHECK_FALSE(big.pdl);
    // A100 and RTX: their own rules, no PDL, no clusters.
    CHECK(select_ok(t, row("NVIDIA A100-SXM4-80GB"), n) == Plan{8192, 128, 0, {1, 1, 1}, false, 1, 3});
    CHECK(select_ok(t, row("NVIDIA GeForce RTX 4090"), n) == Plan{512, 128, 0, {1, 1, 1}, false, 4, 4});
    CHECK(select_ok(t, row("NVIDIA GeForce RTX 3090"), 1000) == Plan{8, 128, 0, {1, 1, 1}, false, 4, 4});
    // Every row of the matrix gets a plan that passes its class's checks.
    for (const auto& r : hardware_rows()) {
        INFO(r.name);
        const PlanDevice d = plan_device(r).value();
        for (const int64_t size : {int64_t{1}, int64_t{1000}, int64_t{1} << 20, int64_t{1} << 28}) {
            const int64_t problem[] = {size};
            auto p = t.select(d, problem);
            REQUIRE(p);
            CHECK(check_plan(*p, d, "test"));
        }
    }
}

TEST_CASE("no rule for the device, or the wrong number of problem values: clear errors", "[plan]") {
    archive::PlanRule only_a100;
    only_a100.device_class = "a100";
    only_a100.block = "128";
    only_a100.grid = "ceil_div(N, block)";
    auto t = PlanTable::compile(one_rule(only_a100));
    REQUIRE(t);
    const int64_t problem[] = {4096};
    auto none = t->select(row("NVIDIA H200"), problem);
    REQUIRE_FALSE(none);
    CHECK(none.error().code == ErrorCode::not_found);
    CHECK_THAT(none.error().message, Catch::Contains("no plan rule of kernel k matches NVIDIA H200") && Catch::Contains("N=4096") &&
                                         Catch::Contains("add a rule for class modern"));
    const int64_t two[] = {1, 2};
    CHECK_THAT(t->select(row("NVIDIA A100-SXM4-80GB"), two).error().message, Catch::Contains("takes 1 problem parameter(s)"));
}

TEST_CASE("plans a class cannot run are refused, naming the rule, the device and why", "[plan]") {
    const auto refused = [](archive::PlanRule rule, const char* device, int64_t n) {
        rule.block = rule.block.empty() ? "256" : rule.block;
        rule.grid = rule.grid.empty() ? "ceil_div(N, block)" : rule.grid;
        auto t = PlanTable::compile(one_rule(rule));
        REQUIRE(t);
        const int64_t problem[] = {n};
        auto p = t->select(row(device), problem);
        REQUIRE_FALSE(p);
        return p.error().message;
    };
    archive::PlanRule r;
    r.device_class = "a100";
    r.cluster = {"2", "1", "1"};
    CHECK_THAT(refused(r, "NVIDIA A100-SXM4-80GB", 4096), Catch::Contains("plan rule 0") && Catch::Contains("clusters (2x1x1) on class a100"));
    r = {};
    r.device_class = "rtx";
    r.pdl = "1";
    CHECK_THAT(refused(r, "NVIDIA GeForce RTX 4090", 4096), Catch::Contains("PDL on class rtx"));
    r = {};
    r.device_class = "modern";
    r.smem = "smem_cap + 1";
    CHECK_THAT(refused(r, "NVIDIA H200", 4096), Catch::Contains("232449 B of shared memory per block, over the class's 232448 B"));
    r = {};
    r.device_class = "modern";
    r.block = "2048";
    CHECK_THAT(refused(r, "NVIDIA H200", 4096), Catch::Contains("block x of 2048 (1..1024)"));
    r = {};
    r.device_class = "modern";
    r.cluster = {"2", "1", "1"};
    CHECK_THAT(refused(r, "NVIDIA H200", 256 * 3), Catch::Contains("grid x 3 is not a multiple of cluster x 2"));
    r = {};
    r.device_class = "modern";
    r.grid = "N / (N - 4096)";
    CHECK_THAT(refused(r, "NVIDIA H200", 4096), Catch::Contains("plan rule 0 (N=4096 on NVIDIA H200") && Catch::Contains("division by zero"));
}

TEST_CASE("rules are tried in order; capability rows inside a class", "[plan]") {
    archive::PlanRule blackwell, modern;
    blackwell.device_class = modern.device_class = "modern";
    blackwell.capability = 100;
    blackwell.block = "512";
    blackwell.grid = "1";
    modern.block = "128";
    modern.grid = "2";
    auto t = PlanTable::compile({"k", "m", {}, {"N"}, {blackwell, modern}});
    REQUIRE(t);
    const int64_t problem[] = {1};
    CHECK(t->select(row("NVIDIA B200"), problem)->block == 512);
    CHECK(t->select(row("NVIDIA GB300"), problem)->block == 128);  // 10.3 is not 10.0
    CHECK(t->select(row("NVIDIA H200"), problem)->rule == 1);
}

TEST_CASE("a 3-D plan rule: blocks of 16x16, a grid covering an N x N matrix; each dimension checked", "[plan]") {
    archive::PlanRule r;
    r.device_class = "modern";
    r.block = "16";
    r.block_y = "16";
    r.grid = "(N + 15) / 16";
    r.grid_y = "(N + 15) / 16";
    const auto t = PlanTable::compile(one_rule(r));
    REQUIRE(t);
    const Plan p = select_ok(*t, row("NVIDIA H200"), 1000);
    CHECK((p.grid == 63 && p.grid_y == 63 && p.grid_z == 1 && p.block == 16 && p.block_y == 16 && p.block_z == 1));
    CHECK(plan_text(p) == "grid 63x63x1, block 16x16x1, smem 0, cluster 1x1x1, pdl off");
    // Past the limits of y: named.
    const int64_t huge[] = {int64_t{16} * 70000};
    auto refused = t->select(row("NVIDIA H200"), huge);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("grid y of 70000 (1..65535)"));
    r.block_z = "8";  // 16 * 16 * 8 = 2048 threads
    const auto t2 = PlanTable::compile(one_rule(r));
    REQUIRE(t2);
    const int64_t n[] = {64};
    auto over = t2->select(row("NVIDIA H200"), n);
    REQUIRE_FALSE(over);
    CHECK_THAT(over.error().message, Catch::Contains("block 16x16x8 of 2048 threads (at most 1024)"));
}
