// sdm_archive_unmount (ABI 1.5): an archive leaves the layer order, new fetches no longer see it,
// kernels fetched from it keep working until released, its overlays go with it, and a wrong label
// loses nothing. Hosts that fetch and launch on 16 threads while another unmounts and mounts again
// never launch an unloaded module.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

using LaunchFn = decltype(&cuLaunchKernel);

// The fake driver's cuLaunchKernel: it fails for a function whose module was unloaded.
LaunchFn raw_launch() {
    sdm_host::CudaDriver cu;
    REQUIRE(cu.attach(SDM_FAKE_CUDA_PATH));
    const auto fn = cu.get<LaunchFn>("cuLaunchKernel");
    REQUIRE(fn != nullptr);
    return fn;
}

CUresult launch_raw(LaunchFn fn, const sdm_kernel* k) {
    void* function = nullptr;
    if (sdm_kernel_function(k, &function, nullptr) != SDM_OK) return CUDA_ERROR_INVALID_HANDLE;
    return fn(static_cast<CUfunction>(function), 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
}

std::string archive_of(const sdm_kernel* k) {
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_kernel_info_get(k, &info, nullptr) == SDM_OK);
    return info.archive;
}

uint32_t archive_count(sdm_runtime* rt) {
    uint32_t n = 0;
    REQUIRE(sdm_archive_count(rt, &n, nullptr) == SDM_OK);
    return n;
}

}  // namespace

TEST_CASE("an unmounted archive serves no new fetch; its kernels fetched before work until released", "[unmount]") {
    TempDir dir;
    fake({kH200});
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
    mount(rt.get(), make_archive("base", {"sm_90"}, {"scale"}), "base.sdma");
    mount(rt.get(), make_archive("top", {"sm_90"}, {"axpy", "scale"}), "top.sdma");  // axpy: listed by top only
    const LaunchFn fn = raw_launch();
    sdm_kernel* from_top = kernel_of(rt.get(), "scale");
    CHECK(archive_of(from_top) == "top.sdma");
    sdm_kernel* only = kernel_of(rt.get(), "axpy");
    REQUIRE(sdm_kernel_release(rt.get(), only, nullptr) == SDM_OK);
    sdm_archive_info before{};
    before.struct_size = sizeof before;
    REQUIRE(sdm_archive_info_get(rt.get(), 1, &before, nullptr) == SDM_OK);
    const char* label = before.label;

    uint32_t unmounted = 99;
    REQUIRE(sdm_archive_unmount(rt.get(), "top.sdma", &unmounted, nullptr) == SDM_OK);
    CHECK(unmounted == 1);
    CHECK(archive_count(rt.get()) == 1);
    CHECK(std::string(label) == "top.sdma");  // sdm_archive_info's strings outlive the unmount
    // New fetches: the base's scale; a name only the unmounted archive listed is not found.
    sdm_kernel* from_base = kernel_of(rt.get(), "scale");
    CHECK(archive_of(from_base) == "base.sdma");
    std::string message;
    info_of(rt.get(), 0, "axpy", SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("base.sdma"));
    // The handle fetched before still launches, through sdm and through its CUfunction.
    CHECK(launch_scale(from_top) == SDM_OK);
    CHECK(launch_raw(fn, from_top) == CUDA_SUCCESS);
    CHECK(fake_calls("@modules") == 2);
    REQUIRE(sdm_kernel_release(rt.get(), from_top, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 1);  // the unmounted archive's module went with its last reference
    CHECK(count_containing(log, "unmounted archive top.sdma") == 1);
    CHECK(launch_scale(from_base) == SDM_OK);
    REQUIRE(sdm_kernel_release(rt.get(), from_base, nullptr) == SDM_OK);

    // Mounted again: served again, from a new load.
    mount(rt.get(), make_archive("top", {"sm_90"}, {"axpy", "scale"}), "top.sdma");
    sdm_kernel* again = kernel_of(rt.get(), "axpy");
    CHECK(archive_of(again) == "top.sdma");
    CHECK(launch_raw(fn, again) == CUDA_SUCCESS);
    REQUIRE(sdm_kernel_release(rt.get(), again, nullptr) == SDM_OK);
}

TEST_CASE("a module no kernel of which is held is unloaded at the unmount", "[unmount]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "a.sdma");
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 1);
    REQUIRE(sdm_archive_unmount(rt.get(), "a.sdma", nullptr, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 0);
    CHECK(archive_count(rt.get()) == 0);
    info_of(rt.get(), 0, "scale", SDM_ERROR_NOT_FOUND);
}

TEST_CASE("a label that names no archive, or several, unmounts nothing and says why", "[unmount][hostile]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    const auto bytes = make_archive("kernels", {"sm_90"});
    mount(rt.get(), bytes, "twice.sdma");
    mount(rt.get(), bytes, "twice.sdma");
    mount(rt.get(), make_archive("other", {"chains.sm_90.cubin=sm_90"}, {"chain1"}, 1, Matrix::none), "other.sdma");
    uint32_t unmounted = 99;
    sdm_error* e = nullptr;
    CHECK(sdm_archive_unmount(rt.get(), "missing.sdma", &unmounted, &e) == SDM_ERROR_NOT_FOUND);
    CHECK(unmounted == 0);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("no archive mounted as missing.sdma") && Catch::Contains("twice.sdma, twice.sdma, other.sdma"));
    sdm_error_destroy(e);
    CHECK(sdm_archive_unmount(rt.get(), "twice.sdma", &unmounted, &e) == SDM_ERROR_AMBIGUOUS);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("mounted 2 times"));
    sdm_error_destroy(e);
    CHECK(archive_count(rt.get()) == 3);
    // A label of control bytes is shown escaped, never written raw into a message or a log.
    CHECK(sdm_archive_unmount(rt.get(), "\x1b[2J\n", nullptr, &e) == SDM_ERROR_NOT_FOUND);
    const std::string shown = sdm_error_message(e);
    CHECK(shown.find('\x1b') == std::string::npos);
    CHECK(shown.find('\n') == std::string::npos);
    sdm_error_destroy(e);
    CHECK(sdm_archive_unmount(rt.get(), nullptr, nullptr, &e) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error_destroy(e);
    CHECK(sdm_archive_unmount(nullptr, "other.sdma", nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(archive_count(rt.get()) == 3);
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");
    CHECK(archive_of(chain) == "other.sdma");
    REQUIRE(sdm_kernel_release(rt.get(), chain, nullptr) == SDM_OK);
    REQUIRE(sdm_archive_unmount(rt.get(), "other.sdma", nullptr, nullptr) == SDM_OK);
    CHECK(archive_count(rt.get()) == 2);
}

TEST_CASE("16 threads fetching and launching while another unmounts and mounts again: no launch hits an unloaded module", "[unmount][concurrency]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    mount(rt.get(), make_archive("base", {"sm_90"}), "base.sdma");
    const auto top = make_archive("top", {"sm_90"});
    mount(rt.get(), top, "top.sdma");
    const LaunchFn fn = raw_launch();
    std::atomic<bool> stop{false};
    std::atomic<int64_t> launches{0}, failures{0}, fetch_errors{0}, from_top{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 16; ++t)
        workers.emplace_back([&, t] {
            const char* name = t % 2 == 0 ? "scale" : "axpy";  // both in both archives: every fetch is served
            while (!stop.load()) {
                sdm_kernel* k = nullptr;
                if (sdm_kernel_get(rt.get(), 0, name, nullptr, &k, nullptr) != SDM_OK) {
                    ++fetch_errors;
                    continue;
                }
                // (No Catch assertion on these threads: Catch is not thread-safe.)
                sdm_kernel_info info{};
                info.struct_size = sizeof info;
                if (sdm_kernel_info_get(k, &info, nullptr) == SDM_OK && std::string(info.archive) == "top.sdma") ++from_top;
                for (int i = 0; i < 4; ++i) {
                    const bool ok = t % 2 == 0 ? launch_scale_quietly(k) == SDM_OK : launch_raw(fn, k) == CUDA_SUCCESS;
                    failures += ok ? 0 : 1;
                    ++launches;
                }
                if (sdm_kernel_release(rt.get(), k, nullptr) != SDM_OK) ++failures;
            }
        });
    int rounds = 0, refused = 0;
    const char* seconds = std::getenv("SDM_STRESS_SECONDS");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(seconds != nullptr ? static_cast<int64_t>(std::atof(seconds) * 1000) : 1500);
    while (std::chrono::steady_clock::now() < until) {
        uint32_t n = 0;
        if (sdm_archive_unmount(rt.get(), "top.sdma", &n, nullptr) != SDM_OK || n != 1) ++refused;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (sdm_archive_mount_memory(rt.get(), top.data(), top.size(), "top.sdma", nullptr) != SDM_OK) ++refused;
        ++rounds;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
    for (auto& w : workers) w.join();
    std::printf("16 threads: %lld launches, %d unmounts, %lld fetches from the remounted archive\n", static_cast<long long>(launches.load()), rounds,
                static_cast<long long>(from_top.load()));
    CHECK(failures.load() == 0);
    CHECK(fetch_errors.load() == 0);
    CHECK(refused == 0);
    CHECK(rounds >= 10);
    CHECK(launches.load() > 1000);
    // Every handle was released: only the modules of what is mounted now may still be loaded.
    CHECK(fake_calls("@modules") <= 2);
}
