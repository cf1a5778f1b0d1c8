// Images as context-independent libraries (runtime/load/library.hpp), on the fake driver, on the library
// path (meson runs this test with SDM_LOAD_PATH=library; the default choice is tested last): one
// cuLibraryLoadData per image however many devices select it, a function per context, the bytes
// handed over preserved (the fake reads them again at each context's load: under ASan a freed
// buffer would show), unloaded with the last module using it (a reload's old library included),
// and cuModule* per context on a driver without the library entry points, said once at info.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

void* function_of(const sdm_kernel* k) {
    void* f = nullptr;
    REQUIRE(sdm_kernel_function(k, &f, nullptr) == SDM_OK);
    return f;
}

// Resident memory now (/proc/self/statm), in bytes.
uint64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("one library per image: two devices selecting the same cubin share it, each with its own function", "[library]") {
    FakeRuntime f({.devices = {kH200, kH200}, .log = true});
    mount(f.rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
    sdm_kernel* on0 = kernel_of(f.rt.get(), "scale", 0);
    sdm_kernel* on1 = kernel_of(f.rt.get(), "scale", 1);
    CHECK(fake_calls("cuLibraryLoadData") == 1);  // decoded once, handed over once
    CHECK(fake_calls("cuModuleLoadData") == 0);
    CHECK(fake_calls("@libraries") == 1);
    CHECK(fake_calls("@modules") == 2);  // the driver loaded it into each device's context
    CHECK(fake_calls("cuKernelGetFunction") >= 2);
    CHECK(function_of(on0) != function_of(on1));
    // The other kernel of the module on device 1: no load at all.
    (void)kernel_of(f.rt.get(), "axpy", 1);
    CHECK(fake_calls("cuLibraryLoadData") == 1);
    f.rt.reset();
    CHECK(fake_calls("@libraries") == 0);
    CHECK(fake_calls("@modules") == 0);
}

TEST_CASE("images a device selects differently are different libraries", "[library]") {
    FakeRuntime f({.devices = {kH200, kA100}});
    mount(f.rt.get(), make_archive("kernels", {"sm_90", "sm_80"}, {"axpy", "scale"}, 1, Matrix::none), "kernels.sdma");
    (void)kernel_of(f.rt.get(), "scale", 0);
    (void)kernel_of(f.rt.get(), "scale", 1);
    CHECK(fake_calls("@libraries") == 2);
}

TEST_CASE("a driver without the library entry points loads modules per context, and says so once", "[library]") {
    fake_configure({.devices = {kH200, kH200}, .missing = {"cuLibraryLoadData"}});
    TempDir dir;
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
    sdm_kernel* on0 = kernel_of(rt.get(), "scale", 0);
    sdm_kernel* on1 = kernel_of(rt.get(), "scale", 1);
    CHECK(function_of(on0) != function_of(on1));
    CHECK(fake_calls("cuModuleLoadData") == 2);
    CHECK(fake_calls("@libraries") == 0);
    CHECK(count_containing(log, "the CUDA driver lacks the library entry points: images load as modules of each context (cuModuleLoadData)") == 1);
    CHECK(count_containing(log, "(as a module of its context)") == 2);
    rt.reset();
    CHECK(fake_calls("@modules") == 0);
}

TEST_CASE("a reload's old library goes once every device let go of it; the new one is another library", "[library][reload]") {
    TempDir dir;
    fake({kH200, kH200});
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90"}));
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    REQUIRE(sdm_archive_mount_file(rt.get(), (dir.path + "/kernels.sdma").c_str(), nullptr) == SDM_OK);
    sdm_kernel* old0 = kernel_of(rt.get(), "scale", 0);
    sdm_kernel* old1 = kernel_of(rt.get(), "scale", 1);
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90a"}));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
    REQUIRE(reloaded == 1);
    sdm_kernel* fresh0 = kernel_of(rt.get(), "scale", 0);
    CHECK(fake_calls("@libraries") == 2);
    REQUIRE(sdm_kernel_release(rt.get(), old0, nullptr) == SDM_OK);
    CHECK(fake_calls("@libraries") == 2);  // device 1 still holds the old one
    REQUIRE(sdm_kernel_release(rt.get(), old1, nullptr) == SDM_OK);
    CHECK(fake_calls("@libraries") == 1);
    CHECK(fake_calls("cuLibraryUnload") == 1);
    CHECK(function_of(fresh0) != nullptr);
}

TEST_CASE("10,000 reloads with a kernel held across each: libraries and modules stay bounded", "[library][reload][retire]") {
    TempDir dir;
    fake({kH200});
    const auto a = make_archive("kernels", {"sm_90"});
    const auto b = make_archive("kernels", {"sm_90a"});
    drop(dir.path + "/kernels.sdma", a);
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    REQUIRE(sdm_archive_mount_file(rt.get(), (dir.path + "/kernels.sdma").c_str(), nullptr) == SDM_OK);
    sdm_kernel* held = kernel_of(rt.get(), "scale");
    int64_t peak = 0;
    uint64_t rss_warm = 0;
    for (int i = 0; i < 10000; ++i) {
        if (i == 1000) rss_warm = resident_bytes();
        drop(dir.path + "/kernels.sdma", i % 2 == 0 ? b : a);
        uint32_t reloaded = 0;
        REQUIRE(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
        sdm_kernel* next = kernel_of(rt.get(), "scale");
        REQUIRE(sdm_kernel_release(rt.get(), held, nullptr) == SDM_OK);
        held = next;
        peak = std::max(peak, fake_calls("@libraries"));
    }
    CHECK(peak <= 2);
    CHECK(fake_calls("@modules") == 1);
    // Memory flat: the first thousand reloads grow the allocator's pools, the other nine reuse them.
    const uint64_t rss_end = resident_bytes();
    INFO("resident after 1,000 reloads " << rss_warm << " B, after 10,000 " << rss_end << " B");
    if (!kSanitized) CHECK(rss_end < rss_warm + (8u << 20));
}

TEST_CASE("the load path a runtime takes: modules with one context per device, libraries when fetches follow the thread's context", "[library][path]") {
    const std::string forced = std::getenv("SDM_LOAD_PATH") != nullptr ? std::getenv("SDM_LOAD_PATH") : "";
    unsetenv("SDM_LOAD_PATH");
    fake({kH200});
    for (const bool current : {false, true}) {
        INFO((current ? "SDM_RUNTIME_CURRENT_CONTEXT" : "primary contexts"));
        fake_reset();
        TempDir dir;
        std::vector<std::string> log;
        if (current) (void)fake_host_context(0, true);
        RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log, current ? SDM_RUNTIME_CURRENT_CONTEXT : 0);
        mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
        kernel_of(rt.get(), "scale", 0);
        CHECK(fake_calls("cuModuleLoadData") == (current ? 0 : 1));
        CHECK(fake_calls("cuLibraryLoadData") == (current ? 1 : 0));
        CHECK(count_containing(log, current ? "images load once as libraries shared by every context" : "one context per device: images load as modules") == 1);
        rt.reset();
        if (current) fake_pop_context();
    }
    // The environment's choice, for measuring one against the other; a value that is neither is
    // warned of, and the runtime's own choice taken.
    const auto load_with = [](const char* value, const char* entry_point, const char* said) {
        INFO(value);
        setenv("SDM_LOAD_PATH", value, 1);
        fake_reset();
        TempDir dir;
        std::vector<std::string> log;
        RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
        mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
        kernel_of(rt.get(), "scale", 0);
        CHECK(fake_calls(entry_point) == 1);
        CHECK(count_containing(log, said) == 1);
    };
    load_with("library", "cuLibraryLoadData", "SDM_LOAD_PATH=library");
    load_with("sideways", "cuModuleLoadData", "SDM_LOAD_PATH='sideways' is not module or library; it is ignored");
    if (forced.empty()) unsetenv("SDM_LOAD_PATH");
    else setenv("SDM_LOAD_PATH", forced.c_str(), 1);
}
