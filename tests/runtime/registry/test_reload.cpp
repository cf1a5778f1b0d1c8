// Hot reload through the C ABI and the fake driver: a new archive file dropped beside a running
// host serves new fetches while kernels fetched before keep working until released; a broken
// file leaves the old version serving and says why; 16 threads fetching and launching
// while another reloads, for $SDM_STRESS_SECONDS (default 1.5; the meson test reload_stress runs
// 60, here and in the TSan build: docs/RELIABILITY.md). The H200 runs the
// drop-in for real in tests/gpu/test_gpu_load.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "archive/archive.hpp"
#include "archive/identity.hpp"
#include "archive/manifest.hpp"
#include "archive/writer.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

using LaunchFn = decltype(&cuLaunchKernel);

// The fake driver's cuLaunchKernel: it fails for a function whose module was unloaded.
LaunchFn fake_launch() {
    sdm_host::CudaDriver cu;
    REQUIRE(cu.attach(SDM_FAKE_CUDA_PATH));
    const auto fn = cu.get<LaunchFn>("cuLaunchKernel");
    REQUIRE(fn != nullptr);
    return fn;
}

CUresult launch(LaunchFn fn, const sdm_kernel* k) {
    void* function = nullptr;
    if (sdm_kernel_function(k, &function, nullptr) != SDM_OK) return CUDA_ERROR_INVALID_HANDLE;
    return fn(static_cast<CUfunction>(function), 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
}

uint32_t image_kind(const sdm_kernel* k) {
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_kernel_info_get(k, &info, nullptr) == SDM_OK);
    return info.image_kind;
}

}  // namespace

TEST_CASE("a new archive dropped beside a running host: new fetches get it, old handles work until released", "[reload]") {
    TempDir dir;
    fake({kH200});
    const std::string file = dir.path + "/kernels.sdma";
    const auto v1 = make_archive("kernels", {"compute_90"});  // PTX: image kind 2
    const auto v2 = make_archive("kernels", {"sm_90"});       // a cubin: image kind 1
    drop(file, v1);
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly, 0, &log);
    REQUIRE(sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) == SDM_OK);
    const LaunchFn fn = fake_launch();
    sdm_kernel* old = kernel_of(rt.get(), "scale");
    CHECK(image_kind(old) == 2);
    uint32_t reloaded = 99;
    REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 0);  // nothing changed

    drop(file, v2);
    REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    sdm_kernel* fresh = kernel_of(rt.get(), "scale");
    CHECK(image_kind(fresh) == 1);
    CHECK(launch(fn, old) == CUDA_SUCCESS);  // still loaded: still held
    CHECK(launch(fn, fresh) == CUDA_SUCCESS);
    CHECK(fake_calls("@modules") == 2);
    REQUIRE(sdm_kernel_release(rt.get(), old, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 1);  // the replaced module went with its last reference
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_release(rt.get(), old, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("released more often than it was fetched"));
    sdm_error_destroy(e);
    // The dead handle (kept a while, so this is a report, not a read of freed memory): every
    // kernel call refuses it, and its error reaches the runtime's last error though the call
    // took no runtime.
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    int64_t n = 1024;
    CHECK(sdm_plan_select(old, &n, 1, &plan, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error* last = nullptr;
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    CHECK_THAT(sdm_error_message(last), Catch::Contains("sdm_plan_select: kernel scale was released and its module unloaded"));
    sdm_error_destroy(last);
    plan.block = 128;
    plan.grid = 1;
    CHECK(sdm_launch(old, &plan, nullptr, nullptr, 0, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("sdm_launch: kernel scale was released"));
    sdm_error_destroy(e);
    void* function = nullptr;
    CHECK(sdm_kernel_function(old, &function, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    CHECK_THAT(sdm_error_message(last), Catch::Contains("sdm_kernel_function: kernel scale was released"));
    sdm_error_destroy(last);

    SECTION("a broken file: the old version keeps serving, and the error says why") {
        auto broken = v1;
        broken[broken.size() / 2] ^= std::byte{0x40};
        drop(file, broken);
        REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, &e) == SDM_ERROR_ARCHIVE_CORRUPT);
        CHECK(reloaded == 0);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("reloading " + file + " failed; the version mounted before keeps serving"));
        sdm_error_destroy(e);
        // A poll reports a refused version once; an explicit reload tries it again.
        REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK);
        CHECK(reloaded == 0);
        CHECK(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_ERROR_ARCHIVE_CORRUPT);
        sdm_kernel* still = kernel_of(rt.get(), "scale");
        CHECK(still == fresh);
        CHECK(launch(fn, still) == CUDA_SUCCESS);
        bool logged = false;
        for (const auto& line : log) logged = logged || line.find("keeps serving") != std::string::npos;
        CHECK(logged);
    }
    SECTION("a deleted file: the same") {
        REQUIRE(std::remove(file.c_str()) == 0);
        REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, &e) == SDM_ERROR_IO);
        sdm_error_destroy(e);
        CHECK(kernel_of(rt.get(), "scale") == fresh);
    }
    SECTION("sdm_runtime_reload of unchanged content replaces nothing") {
        REQUIRE(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
        CHECK(reloaded == 0);
        CHECK(kernel_of(rt.get(), "scale") == fresh);
    }
    SECTION("a version the host cannot use (another kernel ABI major) is refused; the old one serves") {
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cuda_driver = SDM_FAKE_CUDA_PATH;
        const std::string cache = dir.path + "/cache2";
        p.cache_dir = cache.c_str();
        p.log_level = SDM_LOG_OFF;
        p.kernel_abi_major = 1;
        sdm_runtime* raw = nullptr;
        REQUIRE(sdm_runtime_create(&p, &raw, nullptr) == SDM_OK);
        RuntimePtr host(raw);
        REQUIRE(sdm_archive_mount_file(host.get(), file.c_str(), nullptr) == SDM_OK);
        drop(file, make_archive("kernels", {"sm_90"}, {"axpy", "scale"}, 2));
        REQUIRE(sdm_runtime_poll_archives(host.get(), &reloaded, &e) == SDM_ERROR_MISMATCH);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel ABI 2.0"));
        sdm_error_destroy(e);
        CHECK(image_kind(kernel_of(host.get(), "scale")) == 1);
    }
}

#ifndef _WIN32  // (run_in_child forks, and heap_in_use reads glibc's allocator)
TEST_CASE("a host that reloads every frame does not grow: what is kept of unloaded modules is bounded", "[reload]") {
    TempDir dir;
    fake({kH200});
    const std::string file = dir.path + "/kernels.sdma";
    const auto v1 = make_archive("kernels", {"compute_90"});
    const auto v2 = make_archive("kernels", {"sm_90"});
    // In one child: the heap held after 200 reloads and after 2000 (the heap, not peak RSS: a
    // sanitizer's allocator keeps freed memory resident in its quarantine).
    const ChildCost cost = run_in_child([&] {
        drop(file, v1);
        RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly);
        if (sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) != SDM_OK) return false;
        const auto reload = [&](int i) {
            drop(file, i % 2 == 0 ? v2 : v1);
            uint32_t reloaded = 0;
            if (sdm_runtime_reload(rt.get(), &reloaded, nullptr) != SDM_OK || reloaded != 1) return false;
            sdm_kernel* k = nullptr;
            if (sdm_kernel_get(rt.get(), 0, "scale", nullptr, &k, nullptr) != SDM_OK) return false;
            return sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK;  // its module goes now
        };
        int i = 0;
        for (; i < 200; ++i)
            if (!reload(i)) return false;
        const size_t few = heap_in_use();
        for (; i < 2000; ++i)
            if (!reload(i)) return false;
        const size_t many = heap_in_use();
        // Ten times the reloads, the same heap (give or take 256 KiB of the runtime's logs and
        // memos). When every unloaded module was kept, the 2000 held 3 MiB more than the 200.
        const bool bounded = many < few + (256u << 10);
        if (!bounded) std::fprintf(stderr, "heap after 200 reloads: %zu bytes, after 2000: %zu\n", few, many);
        return bounded && (fake_calls("@modules") == 0 || fake_calls("@modules") == 1);
    });
    CHECK(cost.ok);
}
#endif

namespace {

// One H200 whose launches stay queued until the test finishes them; `failures` too.
void hold_work_fake(std::vector<FakeFailure> failures = {}) {
    FakeConfig config;
    config.devices = {kH200};
    config.hold_work = true;
    config.failures = std::move(failures);
    fake_configure(config);
}

CUstream stream_at(uintptr_t n) { return reinterpret_cast<CUstream>(n); }  // the fake takes any stream value

// A runtime (its log in `log`) with dir/kernels.sdma mounted: module kernels, an sm_90 cubin.
RuntimePtr mounted_sm90(const TempDir& dir, std::vector<std::string>* log = nullptr) {
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90"}));
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, log);
    REQUIRE(sdm_archive_mount_file(rt.get(), (dir.path + "/kernels.sdma").c_str(), nullptr) == SDM_OK);
    return rt;
}

// dir/kernels.sdma replaced by an sm_90a version, and reloaded.
void reload_sm90a(sdm_runtime* rt, const TempDir& dir) {
    drop(dir.path + "/kernels.sdma", make_archive("kernels", {"sm_90a"}));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_reload(rt, &reloaded, nullptr) == SDM_OK);
}

}  // namespace

TEST_CASE("a retired module is unloaded only once the work launched with it has finished", "[reload][retire]") {
    TempDir dir;
    hold_work_fake();
    std::vector<std::string> log;
    RuntimePtr rt = mounted_sm90(dir, &log);
    sdm_kernel* old = kernel_of(rt.get(), "scale");
    REQUIRE(launch_scale(old, stream_at(0x1000)) == SDM_OK);
    REQUIRE(launch_scale(old, stream_at(0x2000)) == SDM_OK);
    REQUIRE(launch_scale(old, stream_at(0x1000)) == SDM_OK);
    CHECK(fake_calls("@queued") == 3);
    reload_sm90a(rt.get(), dir);
    REQUIRE(sdm_kernel_release(rt.get(), old, nullptr) == SDM_OK);  // the host lets go right after launching
    // Released and retired, but its kernels are still queued: it stays loaded, one event per stream.
    CHECK(fake_calls("@modules") == 1);
    CHECK(fake_calls("@events") == 2);
    CHECK(fake_calls("cuEventRecord") == 2);
    CHECK(count_containing(log, "unloaded module kernels") == 0);
    sdm_error* e = nullptr;
    CHECK(launch_scale(old, stream_at(0x1000)) == SDM_ERROR_INVALID_ARGUMENT);  // its handle is dead at once all the same
    sdm_error_destroy(e);
    // The fresh one serves; asking again finds the old one's work still running.
    sdm_kernel* fresh = kernel_of(rt.get(), "scale");
    REQUIRE(sdm_kernel_release(rt.get(), fresh, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 2);
    fake_finish_work();
    fresh = kernel_of(rt.get(), "scale");
    REQUIRE(sdm_kernel_release(rt.get(), fresh, nullptr) == SDM_OK);  // a release looks at what drains
    CHECK(fake_calls("@modules") == 1);
    CHECK(fake_calls("@events") == 0);
    CHECK(fake_calls("@unloaded_busy") == 0);  // no module ever went under queued work
    CHECK(count_containing(log, "unloaded module kernels of a replaced archive: no kernel of it is held any more, and the work launched with it has finished") == 1);
    rt.reset();
    CHECK(fake_calls("@unloaded_busy") == 0);
}

TEST_CASE("a kernel whose CUfunction the host took retires after its context synchronizes", "[reload][retire]") {
    TempDir dir;
    hold_work_fake();
    RuntimePtr rt = mounted_sm90(dir);
    sdm_kernel* old = kernel_of(rt.get(), "scale");
    REQUIRE(launch(fake_launch(), old) == CUDA_SUCCESS);  // the host's own cuLaunchKernel: sdm never sees the stream
    CHECK(fake_calls("@queued") == 1);
    reload_sm90a(rt.get(), dir);
    REQUIRE(sdm_kernel_release(rt.get(), old, nullptr) == SDM_OK);
    CHECK(fake_calls("cuCtxSynchronize") == 1);
    CHECK(fake_calls("@modules") == 0);
    CHECK(fake_calls("@unloaded_busy") == 0);
}

TEST_CASE("a host reloading faster than its GPU finishes: at most 16 retired modules wait, the oldest is waited for", "[reload][retire]") {
    TempDir dir;
    hold_work_fake();
    const std::string file = dir.path + "/kernels.sdma";
    const auto v1 = make_archive("kernels", {"sm_90"});
    const auto v2 = make_archive("kernels", {"sm_90a"});
    drop(file, v1);
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    REQUIRE(sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) == SDM_OK);
    int64_t most = 0;
    for (int i = 0; i < 60; ++i) {
        sdm_kernel* k = kernel_of(rt.get(), "scale");
        REQUIRE(launch_scale(k, stream_at(0x1000)) == SDM_OK);
        drop(file, i % 2 == 0 ? v2 : v1);
        uint32_t reloaded = 0;
        REQUIRE(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
        REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
        most = std::max(most, fake_calls("@modules"));
    }
    CHECK(most <= 17);  // 16 waiting, the one serving
    CHECK(fake_calls("@events") <= 16);
    CHECK(fake_calls("@unloaded_busy") == 0);
    rt.reset();  // waits for the rest
    CHECK(fake_calls("@modules") == 0);
    CHECK(fake_calls("@events") == 0);
    CHECK(fake_calls("@unloaded_busy") == 0);
}

TEST_CASE("an event call failing while a module retires: the module still goes, after its work, and the log says why", "[reload][retire][faults]") {
    for (const char* entry : {"cuEventCreate", "cuEventRecord", "cuEventQuery", "cuEventSynchronize", "cuEventDestroy", "cuCtxSynchronize"}) {
        INFO(entry);
        TempDir dir;
        fake_reset();
        hold_work_fake({{entry, CUDA_ERROR_UNKNOWN, 1}});  // its first call, which retiring makes
        std::vector<std::string> log;
        RuntimePtr rt = mounted_sm90(dir, &log);
        sdm_kernel* old = kernel_of(rt.get(), "scale");
        REQUIRE(launch_scale(old, stream_at(0x1000)) == SDM_OK);
        reload_sm90a(rt.get(), dir);
        REQUIRE(sdm_kernel_release(rt.get(), old, nullptr) == SDM_OK);
        fake_finish_work();
        sdm_kernel* fresh = kernel_of(rt.get(), "scale");
        REQUIRE(sdm_kernel_release(rt.get(), fresh, nullptr) == SDM_OK);
        fake_clear_failures();
        rt.reset();
        CHECK(fake_calls("@modules") == 0);
        // A failed record falls back to synchronizing the context, a failed query to waiting: no
        // module went under queued work. (A failed cuCtxSynchronize is the one case left: logged.)
        if (std::string(entry) != "cuCtxSynchronize") CHECK(fake_calls("@unloaded_busy") == 0);
        if (std::string(entry) != "cuCtxSynchronize" && std::string(entry) != "cuEventSynchronize")
            CHECK(count_containing(log, entry) >= 1);
    }
}

TEST_CASE("16 threads fetching and launching while another reloads: no launch hits an unloaded module", "[reload][concurrency]") {
    TempDir dir;
    fake({kH200});
    const std::string file = dir.path + "/kernels.sdma";
    const auto v1 = make_archive("kernels", {"compute_90"});
    const auto v2 = make_archive("kernels", {"sm_90"});
    auto broken = v2;
    broken[broken.size() / 2] ^= std::byte{0x40};
    drop(file, v1);
    RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly);
    REQUIRE(sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) == SDM_OK);
    const LaunchFn fn = fake_launch();
    std::atomic<bool> stop{false};
    std::atomic<int64_t> launches{0}, failures{0}, fetch_errors{0};
    std::mutex first_failure_mu;
    std::string first_failure;
    std::vector<std::thread> workers;
    for (int t = 0; t < 16; ++t)
        workers.emplace_back([&, t] {
            // Even threads: "scale" through sdm_launch (a plan of their own: these archives carry no
            // plan tables); odd: "axpy" through its CUfunction and cuLaunchKernel.
            const bool planned = t % 2 == 0;
            const char* name = planned ? "scale" : "axpy";
            void* buffer = nullptr;
            void* args[] = {&buffer};  // make_archive's manifest: signature "ptr"
            while (!stop.load()) {
                sdm_kernel* k = nullptr;
                if (sdm_kernel_get(rt.get(), 0, name, nullptr, &k, nullptr) != SDM_OK) {
                    ++fetch_errors;
                    continue;
                }
                for (int i = 0; i < 4; ++i) {  // a few launches per fetch, as a frame would
                    if (planned) {
                        sdm_plan plan{};
                        plan.struct_size = sizeof plan;
                        plan.grid = 1 + static_cast<uint32_t>(i);
                        plan.block = 128;
                        plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
                        sdm_error* e = nullptr;
                        if (sdm_launch(k, &plan, nullptr, args, 1, &e) != SDM_OK) {
                            if (failures++ == 0) {
                                const std::lock_guard<std::mutex> lock(first_failure_mu);
                                first_failure = sdm_error_message(e);
                            }
                            sdm_error_destroy(e);
                        }
                    } else if (launch(fn, k) != CUDA_SUCCESS) {
                        ++failures;
                    }
                    ++launches;
                }
                if (sdm_kernel_release(rt.get(), k, nullptr) != SDM_OK) ++failures;
            }
        });
    int reloads = 0, refused = 0;
    const char* seconds = std::getenv("SDM_STRESS_SECONDS");
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(seconds != nullptr ? static_cast<int64_t>(std::atof(seconds) * 1000) : 1500);
    for (int round = 0; std::chrono::steady_clock::now() < until; ++round) {
        const bool bad = round % 5 == 4;
        drop(file, bad ? broken : (round % 2 == 0 ? v2 : v1));
        uint32_t n = 0;
        const sdm_status s = sdm_runtime_poll_archives(rt.get(), &n, nullptr);
        if (bad) refused += s == SDM_ERROR_ARCHIVE_CORRUPT;
        else if (s == SDM_OK) reloads += static_cast<int>(n);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop = true;
    for (auto& w : workers) w.join();
    INFO("reloads " << reloads << ", refused " << refused << ", launches " << launches.load() << "; first failure: " << first_failure);
    std::printf("16 threads: %lld launches, %d reloads, %d broken files refused, %lld launch failures, %lld fetch errors\n",
                static_cast<long long>(launches.load()), reloads, refused, static_cast<long long>(failures.load()), static_cast<long long>(fetch_errors.load()));
    CHECK(failures.load() == 0);
    CHECK(fetch_errors.load() == 0);
    CHECK(reloads >= 10);
    CHECK(refused >= 2);
    CHECK(launches.load() > 1000);
    // Every handle was released: only the current version's module is still loaded (fetched once
    // more here: the workers may have stopped before any of them fetched the last version).
    REQUIRE(sdm_kernel_release(rt.get(), kernel_of(rt.get(), "scale"), nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 1);
}

// ---- overlays bound to their base (sdm jit; docs/FORMAT.md section 20) ----

namespace {
sdm::ByteVector overlay_of(const sdm::ByteVector& base, std::initializer_list<const char*> targets) {
    auto opened = sdm::archive::Archive::open_memory(base, "base");
    REQUIRE(opened);
    sdm::archive::WriterOptions o;
    o.base = sdm::archive::identity(*opened);
    return make_archive("kernels", targets, {"axpy", "scale"}, 1, Matrix::follows, o);
}
}  // namespace

TEST_CASE("an overlay serves only above the archive it was built from; a reload of its base retires it", "[reload][overlay]") {
    TempDir dir;
    fake({kH200});
    const std::string base_file = dir.path + "/base.sdma", overlay_file = dir.path + "/overlay.sdma";
    const auto base = make_archive("kernels", {"compute_90"});
    drop(base_file, base);
    drop(overlay_file, overlay_of(base, {"sm_90"}));
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly, 0, &log);
    // Alone, the overlay is refused, naming its base and what is (not) beneath it.
    sdm_error* e = nullptr;
    CHECK(sdm_archive_mount_file(rt.get(), overlay_file.c_str(), &e) == SDM_ERROR_MISMATCH);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("is an overlay built (sdm jit) from the archive xxh3-128:") &&
                                         Catch::Contains("none is mounted beneath it") && Catch::Contains("Rebuild the overlay"));
    sdm_error_destroy(e);
    REQUIRE(sdm_archive_mount_file(rt.get(), base_file.c_str(), nullptr) == SDM_OK);
    REQUIRE(sdm_archive_mount_file(rt.get(), overlay_file.c_str(), nullptr) == SDM_OK);
    CHECK(image_kind(kernel_of(rt.get(), "scale")) == 1);  // the overlay's cubin
    // An overlay of another archive is refused above this one, both identities named.
    const std::string stranger = dir.path + "/stranger.sdma";
    drop(stranger, overlay_of(make_archive("kernels", {"compute_90"}, {"scale"}), {"sm_90"}));
    CHECK(sdm_archive_mount_file(rt.get(), stranger.c_str(), &e) == SDM_ERROR_MISMATCH);
    const std::string message = sdm_error_message(e);
    sdm_error_destroy(e);
    CHECK_THAT(message, Catch::Contains("beneath it: " + base_file + " xxh3-128:") && Catch::Contains(overlay_file + " xxh3-128:"));
    // The base is updated (new PTX): the overlay built from the old one stops serving, logged.
    drop(base_file, make_archive("kernels", {"compute_90"}, {"axpy", "scale", "gather"}));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    CHECK(count_containing(log, "after the reload, archive " + overlay_file + " is an overlay built") == 1);
    CHECK(image_kind(kernel_of(rt.get(), "scale")) == 2);  // the new base's PTX, not the stale cubin
    uint32_t count = 0;
    REQUIRE(sdm_archive_count(rt.get(), &count, nullptr) == SDM_OK);
    CHECK(count == 1);
}

namespace {

// make_archive's module "kernels" of sm_90, scale declared with `signature`, of kernel ABI `abi`.
sdm::ByteVector contract_archive(const std::vector<sdm::archive::ParamType>& signature, uint16_t abi_major = 1, uint16_t abi_minor = 0) {
    sdm::archive::ArchiveWriter writer;
    REQUIRE(writer.add({"kernels", sdm::archive::Kind::cubin, 90, sdm::archive::Variant::base, sdm::test::data_file("kernels.sm_90.cubin")}));
    sdm::archive::Manifest m;
    m.kernel_abi_major = abi_major;
    m.kernel_abi_minor = abi_minor;
    m.kernels.push_back({"scale", "kernels", signature, {}, {}});
    m.kernels.push_back({"axpy", "kernels", {sdm::archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

}  // namespace

TEST_CASE("a reload never changes a fetched kernel's contract silently: its signature and the kernel ABI's semver", "[reload][contract]") {
    TempDir dir;
    fake({kH200});
    const std::string file = dir.path + "/kernels.sdma";
    using sdm::archive::ParamType;
    drop(file, contract_archive({ParamType::ptr}, 1, 2));
    const auto runtime = [&](uint32_t flags) {
        RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, nullptr, flags);
        REQUIRE(sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) == SDM_OK);
        return rt;
    };
    RuntimePtr rt = runtime(0);
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    uint32_t reloaded = 99;
    sdm_error* e = nullptr;
    const auto refused = [&](const sdm::ByteVector& version, const std::string& why) {
        drop(file, version);
        CHECK(sdm_runtime_reload(rt.get(), &reloaded, &e) == SDM_ERROR_MISMATCH);
        CHECK(reloaded == 0);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("the version mounted before keeps serving") && Catch::Contains(why));
        sdm_error_destroy(e);
        e = nullptr;
        CHECK(kernel_of(rt.get(), "scale") == scale);  // the old version still serves
    };
    refused(contract_archive({ParamType::ptr, ParamType::i32}, 1, 2), "kernel scale (module kernels), which this host has fetched, takes (ptr) in the version mounted and (ptr,i32) in the new one");
    refused(contract_archive({ParamType::ptr}, 2, 0), "declares kernel ABI 2.0, the version it would replace 1.2: another major");
    refused(contract_archive({ParamType::ptr}, 1, 1), "kernel ABI 1.1, the version it would replace 1.2: a lower minor");
    // A kernel the host never fetched may change; a higher minor is compatible.
    sdm::ByteVector fine = contract_archive({ParamType::ptr}, 1, 3);
    drop(file, fine);
    REQUIRE(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    REQUIRE(sdm_kernel_release(rt.get(), scale, nullptr) == SDM_OK);
    // SDM_RUNTIME_RELOAD_ANY_CONTRACT: the host takes any change (its next fetch gets the new kernel).
    RuntimePtr any = runtime(SDM_RUNTIME_RELOAD_ANY_CONTRACT);
    kernel_of(any.get(), "scale");
    drop(file, contract_archive({ParamType::ptr, ParamType::i32}, 2, 0));
    REQUIRE(sdm_runtime_reload(any.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    sdm_kernel_info info = info_of(any.get(), 0, "scale");
    CHECK(std::string(info.signature) == "ptr,i32");
}
