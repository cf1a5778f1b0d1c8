// Plan-provider plugins (include/sdm/sdm_plugin.h) through the C ABI and the fake driver, with the
// test plugins of tests/plugins/test_plugin.c: a current one, an older minor (whose table past 1.0
// the host must not touch), a newer minor, one with NULL members, one returning plans no class can
// run, and two that fail negotiation; SDM_PLUGIN_PATH; image verdicts; destroy at runtime end.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

sdm_plan select(const sdm_kernel* k, int64_t n) {
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    sdm_error* e = nullptr;
    if (sdm_plan_select(k, &n, 1, &plan, &e) != SDM_OK) FAIL(sdm_error_message(e));
    return plan;
}

void load(sdm_runtime* rt, const char* plugin) {
    sdm_error* e = nullptr;
    if (sdm_plugin_load(rt, plugin, &e) != SDM_OK) FAIL(sdm_error_message(e));
}

}  // namespace

TEST_CASE_METHOD(FakeRuntime, "a current plugin's plans win over the table, for kernels without rules too; it refuses images; destroy runs", "[plugins]") {
    const std::string marker = dir.path + "/destroyed";
    setenv("SDM_TEST_PLUGIN_MARKER", marker.c_str(), 1);
    load(rt.get(), SDM_TEST_PLUGIN_CURRENT);
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    const sdm_plan p = select(kernel_of(rt.get(), "scale"), 1 << 20);
    CHECK(p.block == 128);
    CHECK(p.grid == 8192);
    CHECK(p.rule == -1);
    CHECK(p.occupancy == 16);  // checked by the occupancy calculator like any plan
    CHECK(select(kernel_of(rt.get(), "axpy"), 1000).grid == 8);  // axpy has no rules: the plugin's plan
    mount(rt.get(), make_archive("forbidden", {"sm_90"}, {"scale"}), "forbidden.sdma");  // serves scale from now on
    std::string message;
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_IMAGE_REFUSED, &message);
    CHECK_THAT(message, Catch::Contains("plugin test-current refused module forbidden of archive forbidden.sdma") &&
                            Catch::Contains("not allowed on 9.0 (ptxVersion 90)"));
    CHECK(fake_calls("@modules") == 1);  // the refused module was unloaded
    // A refusal holds: the second fetch is refused too, and loads nothing.
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_IMAGE_REFUSED, &message);
    CHECK_THAT(message, Catch::Contains("plugin test-current refused module forbidden"));
    CHECK(fake_calls("@modules") == 1);
    CHECK_FALSE(std::filesystem::exists(marker));
    rt.reset();
    CHECK(std::filesystem::exists(marker));
    unsetenv("SDM_TEST_PLUGIN_MARKER");
}

TEST_CASE_METHOD(FakeRuntime, "a plugin loaded after a plan was remembered is asked: the memo starts again", "[plugins]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    const sdm_kernel* scale = kernel_of(rt.get(), "scale");
    const sdm_plan table = select(scale, 1 << 20);
    CHECK(table.rule >= 0);                                // from the manifest's rules
    CHECK(select(scale, 1 << 20).rule == table.rule);     // remembered
    load(rt.get(), SDM_TEST_PLUGIN_CURRENT);
    const sdm_plan plugin = select(scale, 1 << 20);
    CHECK(plugin.rule == -1);  // the plugin's, not the remembered table plan
    CHECK(plugin.block == 128);
}

TEST_CASE("an older minor's table is read only as far as it goes; a newer minor settles on the host's", "[plugins]") {
    FakeRuntime f({.log = true});
    load(f.rt.get(), SDM_TEST_PLUGIN_OLDER);
    REQUIRE(sdm_archive_mount_file(f.rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    CHECK(select(kernel_of(f.rt.get(), "scale"), 1 << 20).block == 64);  // (its validate_image would abort: never called)
    CHECK(count_containing(f.log, "plugin ABI 1.0") == 1);
    RuntimePtr newer = f.another();
    load(newer.get(), SDM_TEST_PLUGIN_NEWER);
    REQUIRE(sdm_archive_mount_file(newer.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    CHECK(select(kernel_of(newer.get(), "scale"), 1 << 20).block == 32);
    CHECK(count_containing(f.log, "test-newer") >= 1);
    CHECK(count_containing(f.log, "plugin ABI 1.1") == 1);
}

TEST_CASE_METHOD(FakeRuntime, "a plugin with NULL members changes nothing", "[plugins]") {
    load(rt.get(), SDM_TEST_PLUGIN_NULLS);
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    const sdm_plan p = select(kernel_of(rt.get(), "scale"), 1 << 20);
    CHECK(p.rule == 0);
    CHECK(p.grid == 1056);
}

TEST_CASE("a plan no class can run is not used for that call, and the log says why", "[plugins]") {
    const auto table_used = [&](const FakeDevice& device, int64_t n, const char* why) {
        FakeRuntime f({.devices = {device}, .log = true});
        load(f.rt.get(), SDM_TEST_PLUGIN_BAD);
        REQUIRE(sdm_archive_mount_file(f.rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
        const sdm_plan p = select(kernel_of(f.rt.get(), "scale"), n);
        CHECK(p.rule >= 0);  // the table's plan
        INFO(why);
        CHECK(count_containing(f.log, why) == 1);
    };
    table_used(kH200, 1, "block x of 0 (1..1024)");
    table_used(kH200, 2, "over the class's 232448 B");
    table_used(kA100, 3, "clusters (2x1x1) on class a100");
    table_used(kRtx4090, 4, "PDL on class rtx");
    table_used(kH200, 5, "failed to choose a plan for kernel scale (it returned -7)");
}

TEST_CASE_METHOD(FakeRuntime, "plugins that fail negotiation, or are no plugins, are not loaded, and say why", "[plugins]") {
    sdm_error* e = nullptr;
    CHECK(sdm_plugin_load(rt.get(), SDM_TEST_PLUGIN_REFUSE, &e) == SDM_ERROR_MISMATCH);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("refused to negotiate plugin ABI 1.1 (it returned 1)"));
    sdm_error_destroy(e);
    CHECK(sdm_plugin_load(rt.get(), SDM_TEST_PLUGIN_RAISE, &e) == SDM_ERROR_MISMATCH);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("raised the plugin ABI minor to 5"));
    sdm_error_destroy(e);
    CHECK(sdm_plugin_load(rt.get(), SDM_FAKE_CUDA_PATH, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("exports no sdm_plugin_negotiate"));
    sdm_error_destroy(e);
    CHECK(sdm_plugin_load(rt.get(), (dir.path + "/none.so").c_str(), &e) == SDM_ERROR_IO);
    sdm_error_destroy(e);
    // Through SDM_PLUGIN_PATH: the good one loads, the refusing one is logged and skipped.
    setenv("SDM_PLUGIN_PATH", (std::string(SDM_TEST_PLUGIN_REFUSE) + ":" + SDM_TEST_PLUGIN_CURRENT).c_str(), 1);
    std::vector<std::string> env_log;
    RuntimePtr env = make_runtime(cache_dir, 0, 0, &env_log);
    unsetenv("SDM_PLUGIN_PATH");
    CHECK(count_containing(env_log, "skipped plugin") == 1);
    REQUIRE(sdm_archive_mount_file(env.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    CHECK(select(kernel_of(env.get(), "scale"), 1 << 20).block == 128);
}

TEST_CASE_METHOD(FakeRuntime, "plugins are called outside sdm's locks: two plan misses meet inside the plugin", "[plugins][threads]") {
    load(rt.get(), SDM_TEST_PLUGIN_RENDEZVOUS);
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    sdm_kernel* axpy = kernel_of(rt.get(), "axpy");
    // Each waits inside the plugin (at most 5 s) for the other: a host that held a lock across the
    // call would let only one in at a time, and both would come back with the table's plan.
    uint32_t blocks[2] = {0, 0};
    std::thread one([&] { blocks[0] = select(scale, 1 << 20).block; });
    std::thread two([&] { blocks[1] = select(axpy, 3000).block; });
    one.join();
    two.join();
    CHECK(blocks[0] == 96);
    CHECK(blocks[1] == 96);
}

TEST_CASE_METHOD(FakeRuntime, "preload loads modules at the same time: two loads meet inside the plugin's image check", "[plugins][preload][threads]") {
    if (std::thread::hardware_concurrency() < 2) {
        WARN("one core: preload runs one worker, and nothing can overlap");
        return;
    }
    load(rt.get(), SDM_TEST_PLUGIN_RENDEZVOUS);
    mount(rt.get(), make_archive("meet_a", {"sm_90"}, {"scale"}), "a.sdma");
    mount(rt.get(), make_archive("meet_b", {"sm_90"}, {"axpy"}), "b.sdma");
    // Each module's check waits (at most 5 s) for another load to be inside it too, and refuses
    // its module if none came: loads one after another would both be refused.
    sdm_error* e = nullptr;
    CHECK(sdm_preload(rt.get(), 0, nullptr, 0, &e) == SDM_OK);
    INFO(sdm_error_message(e));
    sdm_error_destroy(e);
    CHECK(fake_image_loads() == 2);
}

TEST_CASE("a plugin that throws is a refusal, named, on the caller's thread and in preload's workers", "[plugins]") {
    FakeRuntime f({.log = true});
    load(f.rt.get(), SDM_TEST_PLUGIN_THROW);
    REQUIRE(sdm_archive_mount_file(f.rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    std::string message;
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_IMAGE_REFUSED, &message);
    CHECK_THAT(message, Catch::Contains("plugin test-throw refused module"));
    CHECK(count_containing(f.log, "plugin test-throw threw from validate_image (thrown by the test plugin)") == 1);
    CHECK(fake_calls("@modules") == 0);  // the refused module was unloaded
    sdm_error* e = nullptr;
    CHECK(sdm_preload(f.rt.get(), 0, nullptr, 0, &e) == SDM_ERROR_IMAGE_REFUSED);  // every module, on worker threads
    CHECK_THAT(sdm_error_message(e), Catch::Contains("plugin test-throw refused module"));
    sdm_error_destroy(e);
    CHECK(fake_calls("@modules") == 0);
}
