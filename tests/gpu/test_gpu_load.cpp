// GPU test: loading for real on every visible device. Each kernel of a test archive loads from a
// cubin, from PTX cold (nvJitLink) and warm (the cache), and through the driver's JIT; kernels run
// with a checked output; old-arch PTX is refused on the modern class, and so is an sm_90 cubin
// compiled from compute_80 (the image policy, from the driver's own ptxVersion); CUDA_FORCE_PTX_JIT
// takes the PTX path; a load that would JIT while a stream captures a graph is refused; an archive
// file replaced on disk is reloaded while kernels fetched before keep running, and a broken one is
// refused; a kernel still running when its module retires keeps its module until it finishes;
// each device gets its own module. Exits 77 without a GPU.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <cuda.h>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "archive/writer.hpp"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::memory_calls;
using sdm::gpu_test::failures;

namespace {

std::string cache_dir() {
    char tmpl[] = "/tmp/sdm-gpu-load-XXXXXX";
    return ::mkdtemp(tmpl);
}

sdm_runtime* runtime(const std::string& cache, uint32_t jit_flags = 0, uint32_t jit_isolation = SDM_ISOLATION_DEFAULT) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cache_dir = cache.c_str();
    p.jit_flags = jit_flags;
    p.jit_isolation = jit_isolation;
    sdm_runtime* rt = nullptr;
    if (sdm_runtime_create(&p, &rt, nullptr) != SDM_OK) std::exit(1);
    return rt;
}

sdm::ByteVector data_file(const std::string& name) {
    auto bytes = sdm::archive::read_file(std::string(SDM_TEST_DATA) + "/" + name);
    if (!bytes) {
        std::printf("FAIL: %s\n", bytes.error().message.c_str());
        std::exit(1);
    }
    return std::move(*bytes);
}

// An archive of the test kernels: each target from tests/data/kernels.TARGET.{cubin,ptx}, or
// "FILE=TARGET" for another file there.
// The archive declares the SDM hardware matrix unless `matrix` is false (a user's archive: no
// image policy).
sdm::ByteVector ptx_archive(const std::string& module, std::initializer_list<const char*> targets, const std::string& content = "",
                            bool matrix = true) {
    sdm::archive::ArchiveWriter writer;
    for (const char* spec : targets) {
        const std::string text = spec;
        const auto eq = text.find('=');
        const std::string t = eq == std::string::npos ? text : text.substr(eq + 1);
        const auto target = sdm::archive::parse_target(t).value();
        const std::string file = eq != std::string::npos ? text.substr(0, eq)
                                                         : "kernels." + t + (target.kind == sdm::archive::Kind::ptx ? ".ptx" : ".cubin");
        auto added = writer.add({module, target.kind, target.sm, target.variant, data_file(file)});
        if (!added) std::printf("FAIL: %s\n", added.error().message.c_str());
    }
    sdm::archive::Manifest m;
    m.content_version = content;
    m.kernel_abi_major = 1;
    m.hardware_matrix = matrix;
    m.kernels.push_back({"scale", module, {}, {}, {}});
    m.kernels.push_back({"axpy", module, {}, {}, {}});
    (void)writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()});
    return writer.finish().value();
}

}  // namespace

int main(int argc, char** argv) {
    // --forced-ptx: run by tests/gpu/run.sh with CUDA_FORCE_PTX_JIT=1 set before the process (and
    // so before cuInit) started; only the forced PTX path is checked.
    const bool forced_ptx = argc > 1 && std::strcmp(argv[1], "--forced-ptx") == 0;
    Cuda cuda;
    if (!cuda.open()) {
        std::printf("skipped: no CUDA driver, or cuInit failed (no device?)\n");
        return 77;
    }
    int devices = 0;
    cuda.get<decltype(&cuDeviceGetCount)>("cuDeviceGetCount")(&devices);
    if (devices == 0) return 77;
    const auto retain = cuda.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    const auto push = cuda.get<decltype(&cuCtxPushCurrent)>("cuCtxPushCurrent");
    const auto pop = cuda.get<decltype(&cuCtxPopCurrent)>("cuCtxPopCurrent");
    [[maybe_unused]] const auto [alloc, mfree, htod, dtoh, memset32, stream_create, stream_sync, sync] = memory_calls(cuda);
    const auto launch = cuda.get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
    const auto begin_capture = cuda.get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture");
    const auto end_capture = cuda.get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
    std::mt19937 rng(std::random_device{}());

    // Runs kernel k (scale(y, 3, n) or axpy(y, x, 0.5, n)) on device `ordinal` with fresh random
    // data and checks every element; returns where its image came from.
    const auto launch_checked = [&](sdm_kernel* k, int ordinal, const char* name, const std::string& what) {
        sdm_kernel_info info{};
        info.struct_size = sizeof info;
        sdm_kernel_info_get(k, &info, nullptr);
        void* fn = nullptr;
        sdm_kernel_function(k, &fn, nullptr);
        CUcontext ctx = nullptr;
        retain(&ctx, ordinal);
        push(ctx);
        const int n = 1 << 20;
        std::vector<float> x(n), y(n), out(n, std::nanf(""));
        std::uniform_real_distribution<float> dist(-1.f, 1.f);
        for (int i = 0; i < n; ++i) {
            x[i] = dist(rng);
            y[i] = dist(rng);
        }
        CUdeviceptr dx = 0, dy = 0;
        alloc(&dx, n * sizeof(float));
        alloc(&dy, n * sizeof(float));
        htod(dx, x.data(), n * sizeof(float));
        htod(dy, y.data(), n * sizeof(float));
        float factor = 3.f, a = 0.5f;
        int count = n;
        void* scale_args[] = {&dy, &factor, &count};
        void* axpy_args[] = {&dy, &dx, &a, &count};
        const bool is_scale = std::strcmp(name, "scale") == 0;
        const CUresult rc = launch(static_cast<CUfunction>(fn), (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, is_scale ? scale_args : axpy_args, nullptr);
        const CUresult rs = sync();
        dtoh(out.data(), dy, n * sizeof(float));
        int bad = 0;
        for (int i = 0; i < n; ++i) {
            const float want = is_scale ? y[i] * 3.f : y[i] + 0.5f * x[i];
            if (!(std::fabs(out[i] - want) <= 1e-6f * std::fabs(want) + 1e-7f)) ++bad;
        }
        mfree(dx);
        mfree(dy);
        CUcontext popped = nullptr;
        pop(&popped);
        check(rc == CUDA_SUCCESS && rs == CUDA_SUCCESS && bad == 0,
              what + ": " + name + " on device " + std::to_string(ordinal) + " from " + (info.image_kind == 1 ? "cubin sm_" : "PTX compute_") +
                  std::to_string(info.image_sm) + " (source " + std::to_string(info.source) + "), " + std::to_string(bad) + " wrong of " + std::to_string(n));
        return info.source;
    };
    const auto run_checked = [&](sdm_runtime* rt, int ordinal, const char* name, const std::string& what) {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        if (sdm_kernel_get(rt, ordinal, name, nullptr, &k, &e) != SDM_OK) {
            check(false, what + ": " + sdm_error_message(e));
            sdm_error_destroy(e);
            return 0u;
        }
        return launch_checked(k, ordinal, name, what);
    };

    if (forced_ptx) {
        const char* forced = std::getenv("CUDA_FORCE_PTX_JIT");
        check(forced != nullptr && std::string(forced) == "1", "CUDA_FORCE_PTX_JIT=1 was set before cuInit");
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        const auto both = ptx_archive("forced", {"sm_90", "compute_90"});
        sdm_archive_mount_memory(rt, both.data(), both.size(), "both.sdma", nullptr);
        for (int d = 0; d < devices; ++d)
            check(run_checked(rt, d, "scale", "CUDA_FORCE_PTX_JIT=1 from the start") == 3,
                  "CUDA_FORCE_PTX_JIT=1 set before cuInit: the PTX path (nvJitLink) though a cubin fits, on device " + std::to_string(d));
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
        std::printf("%d failure(s)\n", failures);
        return failures == 0 ? 0 : 1;
    }
    const auto ptx = ptx_archive("gpuptx", {"compute_80", "compute_90"});
    for (int d = 0; d < devices; ++d) {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        check(sdm_archive_mount_file(rt, SDM_TEST_ARCHIVE, nullptr) == SDM_OK, "mount the test archive");
        run_checked(rt, d, "scale", "cubin");
        run_checked(rt, d, "axpy", "cubin");
        sdm_runtime_destroy(rt);

        rt = runtime(cache);
        sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
        check(run_checked(rt, d, "scale", "PTX cold") == 3, "PTX cold is linked by nvJitLink");
        run_checked(rt, d, "axpy", "PTX cold, same module");
        sdm_runtime_destroy(rt);
        rt = runtime(cache);
        sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
        check(run_checked(rt, d, "axpy", "PTX warm") == 2, "PTX warm comes from the cache");
        sdm_runtime_destroy(rt);
        // The driver's JIT compiles in this process: the default isolation policy keeps an unsigned
        // archive's PTX from it (SDM_ERROR_JIT naming the policy), and a host that says never gets it.
        rt = runtime(cache, SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_PTX_COMPILER);
        sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
        {
            sdm_kernel* k = nullptr;
            sdm_error* e = nullptr;
            const sdm_status s = sdm_kernel_get(rt, d, "scale", nullptr, &k, &e);
            check(s == SDM_ERROR_JIT && std::string(sdm_error_message(e)).find("JIT isolation policy (auto)") != std::string::npos,
                  std::string("the driver's JIT is refused an unsigned archive's PTX under the default isolation: ") + (e ? sdm_error_message(e) : "served"));
            sdm_error_destroy(e);
        }
        sdm_runtime_destroy(rt);
        rt = runtime(cache, SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_PTX_COMPILER, SDM_ISOLATION_NEVER);
        sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
        check(run_checked(rt, d, "scale", "driver JIT") == 4, "the driver's JIT when nvJitLink and nvPTXCompiler are forbidden (isolation never)");
        sdm_runtime_destroy(rt);
        if (SDM_TEST_PTX_COMPILER) {  // this libsdm has nvPTXCompiler linked in
            const std::string own = cache_dir();
            rt = runtime(own, SDM_JIT_NO_NVJITLINK);
            sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
            check(run_checked(rt, d, "scale", "nvPTXCompiler") == 6, "nvPTXCompiler compiles the PTX when nvJitLink is forbidden");
            run_checked(rt, d, "axpy", "nvPTXCompiler, same module");
            sdm_runtime_destroy(rt);
            rt = runtime(own, SDM_JIT_NO_NVJITLINK);
            sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
            check(run_checked(rt, d, "scale", "nvPTXCompiler warm") == 2, "the nvPTXCompiler build is cached");
            sdm_runtime_destroy(rt);
            std::filesystem::remove_all(own);
        } else {
            std::printf("note: this libsdm was built without nvPTXCompiler: its GPU check needs -Dptx_compiler=enabled\n");
        }
        std::filesystem::remove_all(cache);
    }

    // Old-arch PTX on the modern class, and a JIT during graph capture.
    {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        const auto old = ptx_archive("oldptx", {"compute_80"});
        sdm_archive_mount_memory(rt, old.data(), old.size(), "old.sdma", nullptr);
        sdm_device_class c = 0;
        sdm_device_class_get(rt, 0, &c, nullptr);
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
        if (c == SDM_DEVICE_CLASS_MODERN)
            check(s == SDM_ERROR_NO_IMAGE && std::strstr(sdm_error_message(e), "older than compute_90") != nullptr,
                  std::string("compute_80 PTX refused on the modern class: ") + sdm_error_message(e));
        sdm_error_destroy(e);
        sdm_runtime_destroy(rt);

        rt = runtime(cache);
        sdm_archive_mount_memory(rt, ptx.data(), ptx.size(), "ptx.sdma", nullptr);
        CUcontext ctx = nullptr;
        retain(&ctx, 0);
        push(ctx);
        CUstream stream = nullptr;
        stream_create(&stream, CU_STREAM_NON_BLOCKING);
        begin_capture(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
        e = nullptr;
        const sdm_status captured = sdm_kernel_get(rt, 0, "scale", stream, &k, &e);
        CUgraph graph = nullptr;
        end_capture(stream, &graph);
        CUcontext popped = nullptr;
        pop(&popped);
        check(captured == SDM_ERROR_GRAPH_CAPTURE, std::string("a JIT during graph capture is refused: ") + sdm_error_message(e));
        sdm_error_destroy(e);
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }

    // The image policy on the modern class: an sm_90 cubin compiled from compute_80, which the
    // driver reports as ptxVersion 80, is refused; CUDA_FORCE_PTX_JIT takes the PTX path.
    {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        sdm_device_class c = 0;
        sdm_device_class_get(rt, 0, &c, nullptr);
        sdm_device_info dev{};
        dev.struct_size = sizeof dev;
        sdm_device_info_get(rt, 0, &dev, nullptr);
        const std::string cc = std::to_string(dev.capability_major) + std::to_string(dev.capability_minor);
        if (c == SDM_DEVICE_CLASS_MODERN && cc == "90") {
            const auto from80 = ptx_archive("policy", {"kernels.sm_90-from-compute_80.cubin=sm_90", "compute_90"});
            sdm_archive_mount_memory(rt, from80.data(), from80.size(), "from80.sdma", nullptr);
            sdm_kernel* k = nullptr;
            sdm_error* e = nullptr;
            const sdm_status s = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
            check(s == SDM_ERROR_IMAGE_REFUSED && std::strstr(sdm_error_message(e), "compute_80") != nullptr,
                  std::string("an sm_90 cubin compiled from compute_80 is refused (the driver says ptxVersion 80): ") + sdm_error_message(e));
            sdm_error_destroy(e);
            e = nullptr;
            check(sdm_kernel_get(rt, 0, "axpy", nullptr, &k, &e) == SDM_ERROR_IMAGE_REFUSED, "refused again: refusals are not memoized");
            sdm_error_destroy(e);
            e = nullptr;
            // The same cubin in a user's archive (no matrix declared): loaded as the driver takes it.
            const auto user = ptx_archive("user", {"kernels.sm_90-from-compute_80.cubin=sm_90"}, "", false);
            sdm_runtime* plain = runtime(cache);
            sdm_archive_mount_memory(plain, user.data(), user.size(), "user.sdma", nullptr);
            const sdm_status u = sdm_kernel_get(plain, 0, "scale", nullptr, &k, &e);
            check(u == SDM_OK, std::string("a user's archive: the sm_90 cubin from compute_80 is served (no image policy) ") +
                                   (u == SDM_OK ? "" : sdm_error_message(e)));
            if (u == SDM_OK) (void)run_checked(plain, 0, "scale", "user archive, cubin from compute_80");
            sdm_error_destroy(e);
            e = nullptr;
            sdm_runtime_destroy(plain);
            sdm_runtime_destroy(rt);
            rt = runtime(cache);
            const auto both = ptx_archive("forced", {"sm_90", "compute_90"});
            sdm_archive_mount_memory(rt, both.data(), both.size(), "both.sdma", nullptr);
            setenv("CUDA_FORCE_PTX_JIT", "1", 1);
            check(run_checked(rt, 0, "scale", "CUDA_FORCE_PTX_JIT=1") == 3, "CUDA_FORCE_PTX_JIT=1: the PTX path though a cubin fits");
            unsetenv("CUDA_FORCE_PTX_JIT");
        } else {
            std::printf("note: device 0 is not an sm_90 modern device: the compute_80 cubin refusal needs one\n");
        }
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }

    // Hot reload: a new archive file replaces the mounted one; kernels fetched before keep running
    // until released; a broken file is refused and the version before keeps serving.
    {
        const std::string cache = cache_dir();
        const std::string file = cache + "/kernels.sdma";
        const auto drop = [&](const sdm::ByteVector& bytes) {
            const bool written = static_cast<bool>(sdm::archive::write_file_atomic(file, bytes));
            if (!written) check(false, "write " + file);
        };
        const auto v1 = ptx_archive("reload", {"compute_90"}, "v1");
        const auto v2 = ptx_archive("reload", {"sm_90"}, "v2");
        auto broken = v2;
        broken[broken.size() / 2] ^= std::byte{0x40};
        drop(v1);
        sdm_runtime* rt = runtime(cache);
        check(sdm_archive_mount_file(rt, file.c_str(), nullptr) == SDM_OK, "mount " + file);
        sdm_kernel* old = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &old, nullptr);
        check(launch_checked(old, 0, "scale", "reload: v1") == 3, "v1 serves PTX linked by nvJitLink");
        drop(v2);
        uint32_t reloaded = 0;
        check(sdm_runtime_poll_archives(rt, &reloaded, nullptr) == SDM_OK && reloaded == 1, "the changed file is reloaded");
        sdm_kernel* fresh = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &fresh, nullptr);
        sdm_kernel_info info{};
        info.struct_size = sizeof info;
        sdm_kernel_info_get(fresh, &info, nullptr);
        check(fresh != old && info.image_kind == 1, "new fetches get v2's cubin");
        launch_checked(fresh, 0, "scale", "reload: v2");
        launch_checked(old, 0, "scale", "reload: v1's kernel, fetched before, still runs");
        check(sdm_kernel_release(rt, old, nullptr) == SDM_OK, "release v1's kernel (its module unloads)");
        void* gone = nullptr;
        check(sdm_kernel_function(old, &gone, nullptr) == SDM_ERROR_INVALID_ARGUMENT, "a released kernel of an unloaded module is an error, not a crash");
        drop(broken);
        sdm_error* e = nullptr;
        const sdm_status s = sdm_runtime_poll_archives(rt, &reloaded, &e);
        check(s == SDM_ERROR_ARCHIVE_CORRUPT && std::strstr(sdm_error_message(e), "keeps serving") != nullptr,
              std::string("a broken file is refused: ") + sdm_error_message(e));
        sdm_error_destroy(e);
        run_checked(rt, 0, "scale", "reload: v2 keeps serving after the broken drop");
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }

    // Unmount (ABI 1.5): the archive above goes; a kernel fetched from it before still runs until
    // released; new fetches are served by the archive beneath, and a name only it listed is gone.
    {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        const auto base = ptx_archive("base", {"sm_90"}, "base");
        const auto top = ptx_archive("top", {"compute_90"}, "top");
        check(sdm_archive_mount_memory(rt, base.data(), base.size(), "base.sdma", nullptr) == SDM_OK, "mount base.sdma");
        check(sdm_archive_mount_memory(rt, top.data(), top.size(), "top.sdma", nullptr) == SDM_OK, "mount top.sdma");
        sdm_kernel* from_top = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &from_top, nullptr);
        check(launch_checked(from_top, 0, "scale", "unmount: top.sdma's scale") == 3, "top.sdma serves (PTX linked by nvJitLink)");
        uint32_t unmounted = 0;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_archive_unmount(rt, "top.sdma", &unmounted, &e);
        check(s == SDM_OK && unmounted == 1, std::string("unmount top.sdma: ") + (e != nullptr ? sdm_error_message(e) : "ok"));
        sdm_error_destroy(e);
        launch_checked(from_top, 0, "scale", "unmount: the kernel fetched before still runs");
        check(sdm_kernel_release(rt, from_top, nullptr) == SDM_OK, "release it (its module unloads)");
        sdm_kernel* from_base = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &from_base, nullptr);
        check(launch_checked(from_base, 0, "scale", "unmount: base.sdma's scale") == 1, "base.sdma serves now (its cubin)");
        check(sdm_archive_unmount(rt, "top.sdma", nullptr, nullptr) == SDM_ERROR_NOT_FOUND, "a second unmount of top.sdma is not found");
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }

    // A kernel still running while its archive is reloaded and the kernel released: the old module
    // stays loaded until the work launched with it has finished (an event on its stream), then goes.
    {
        const std::string cache = cache_dir();
        const std::string file = cache + "/kernels.sdma";
        // scale with its signature, for sdm_launch (ptx_archive's manifest declares none).
        const auto retire_archive = [&](const char* target, uint16_t sm, sdm::archive::Variant variant) {
            sdm::archive::ArchiveWriter writer;
            (void)writer.add({"retire", sdm::archive::Kind::cubin, sm, variant, data_file(std::string("kernels.") + target + ".cubin")});
            sdm::archive::Manifest m;
            m.kernel_abi_major = 1;
            m.kernels.push_back({"scale", "retire", sdm::archive::parse_signature("ptr,f32,i32").value(), {}, {}});
            (void)writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()});
            return writer.finish().value();
        };
        (void)sdm::archive::write_file_atomic(file, retire_archive("sm_90", 90, sdm::archive::Variant::base));
        std::vector<std::string> log;
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cache_dir = cache.c_str();
        p.log_level = SDM_LOG_INFO;
        p.log_user_data = &log;
        p.log_fn = [](void* user, sdm_log_level, const char* message, size_t length) {
            static_cast<std::vector<std::string>*>(user)->emplace_back(message, length);
        };
        sdm_runtime* rt = nullptr;
        check(sdm_runtime_create(&p, &rt, nullptr) == SDM_OK && sdm_archive_mount_file(rt, file.c_str(), nullptr) == SDM_OK, "retire: mount v1");
        sdm_kernel* k = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &k, nullptr);
        CUcontext ctx = nullptr;
        retain(&ctx, 0);
        push(ctx);
        CUstream stream = nullptr;
        stream_create(&stream, CU_STREAM_NON_BLOCKING);
        const int n = 1 << 26;  // 64 Mi floats, one block of 32 threads: a grid-stride loop of ~2 M steps each
        CUdeviceptr dy = 0;
        alloc(&dy, size_t{n} * sizeof(float));
        std::vector<float> ones(n, 1.f);
        htod(dy, ones.data(), size_t{n} * sizeof(float));
        float factor = 2.f;
        int count = n;
        void* args[] = {&dy, &factor, &count};
        sdm_plan plan{};
        plan.struct_size = sizeof plan;
        plan.grid = 1;
        plan.block = 32;
        plan.cluster[0] = plan.cluster[1] = plan.cluster[2] = 1;
        const auto query = cuda.get<decltype(&cuStreamQuery)>("cuStreamQuery");
        const auto stream_sync = cuda.get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
        const sdm_status launched = sdm_launch(k, &plan, stream, args, 3, nullptr);
        (void)sdm::archive::write_file_atomic(file, retire_archive("sm_90a", 90, sdm::archive::Variant::a));
        uint32_t reloaded = 0;
        sdm_runtime_poll_archives(rt, &reloaded, nullptr);
        sdm_kernel_release(rt, k, nullptr);
        const bool running = query(stream) == CUDA_ERROR_NOT_READY;
        const auto unloaded = [&] {
            for (const auto& line : log)
                if (line.find("unloaded module retire") != std::string::npos) return true;
            return false;
        };
        const bool kept_while_running = !unloaded();
        const CUresult finished = stream_sync(stream);
        std::vector<float> out(n);
        dtoh(out.data(), dy, size_t{n} * sizeof(float));
        int bad = 0;
        for (int i = 0; i < n; i += 4099) bad += out[i] != 2.f;
        sdm_kernel* fresh = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &fresh, nullptr);
        sdm_kernel_release(rt, fresh, nullptr);  // a release looks at what drains
        check(launched == SDM_OK && reloaded == 1 && running, "retire: the kernel was still running when its module retired");
        check(kept_while_running, "retire: the module stayed loaded while its kernel ran");
        check(finished == CUDA_SUCCESS && bad == 0, "retire: the kernel finished with the right result (" + std::to_string(bad) + " wrong)");
        check(unloaded(), "retire: then the module was unloaded");
        mfree(dy);
        CUcontext popped = nullptr;
        pop(&popped);
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }

    // Several devices: each its own module.
    if (devices >= 2) {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache);
        sdm_archive_mount_file(rt, SDM_TEST_ARCHIVE, nullptr);
        sdm_kernel *k0 = nullptr, *k1 = nullptr;
        sdm_kernel_get(rt, 0, "scale", nullptr, &k0, nullptr);
        sdm_kernel_get(rt, 1, "scale", nullptr, &k1, nullptr);
        void *f0 = nullptr, *f1 = nullptr;
        sdm_kernel_function(k0, &f0, nullptr);
        sdm_kernel_function(k1, &f1, nullptr);
        check(k0 != nullptr && k1 != nullptr && k0 != k1 && f0 != f1, "devices 0 and 1 get their own modules and functions");
        run_checked(rt, 1, "scale", "second device");
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    } else {
        std::printf("note: one device: the per-device module check needs two\n");
    }
    // PTX from a toolkit newer than the driver (tests/gpu/run.sh sets this up when it has such a
    // PTX and a newer nvJitLink): the driver's JIT refuses it, sdm's nvJitLink path runs it.
    if (const char* newer = std::getenv("SDM_TEST_NEWER_PTX_ARCHIVE")) {
        const std::string cache = cache_dir();
        sdm_runtime* rt = runtime(cache, SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_PTX_COMPILER);
        check(sdm_archive_mount_file(rt, newer, nullptr) == SDM_OK, std::string("mount ") + newer);
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status refused = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
        check(refused == SDM_ERROR_JIT && sdm_error_native(e) == CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
              std::string("the driver's JIT refuses the newer PTX: ") + sdm_error_message(e));
        sdm_error_destroy(e);
        sdm_runtime_destroy(rt);
        rt = runtime(cache);
        sdm_archive_mount_file(rt, newer, nullptr);
        check(run_checked(rt, 0, "scale", "newer PTX through nvJitLink") == 3, "the newer PTX loads through sdm's nvJitLink");
        sdm_runtime_destroy(rt);
        std::filesystem::remove_all(cache);
    }
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
