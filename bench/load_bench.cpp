// The loader bench's measuring program (bench/load_bench.sh drives it). One measurement per
// process, because what a process start pays is the FIRST load in a fresh process (a repeated load
// of the same bytes is 2-3x faster: the driver keeps state). Context creation happens before the
// clock starts in every mode, so each figure is the load alone. Prints microseconds on stdout.
//   load_bench raw-cubin FILE [KERNEL]        cuModuleLoadData of a cubin read before the clock (the floor);
//                                             with KERNEL also cuModuleGetFunction, which a host needs
//                                             before a launch (the driver loads lazily: part of the load
//                                             happens there)
//   load_bench raw-library FILE KERNEL        the floor of the library path: cuLibraryLoadData of a cubin read
//                                             before the clock (CU_LIBRARY_BINARY_IS_PRESERVED, as sdm passes),
//                                             cuLibraryGetKernel, cuKernelGetFunction in the current context
//   load_bench hand-rolled FILE KERNEL        what a hand-rolled cubin loader pays in a fresh process: read
//                                             the file, cuModuleLoadData, cuModuleGetFunction
//   load_bench driver-ptx FILE                cuModuleLoadData of PTX (the driver's JIT)
//   load_bench nvjitlink FILE SM              nvJitLink link of PTX, then cuModuleLoadData
//   load_bench nvjitlink-serial SM FILE...    the same for several PTX files, one after another
//   load_bench sdm ARCHIVE KERNEL CACHE_DIR   sdm_runtime_create + mount + sdm_kernel_get
//   load_bench sdm-preload ARCHIVE CACHE_DIR  sdm_runtime_create + mount + sdm_preload (everything)
//   load_bench sdm-phases ARCHIVE KERNEL CACHE_DIR
//                                             the sdm start by phase: create, mount and get timed apart,
//                                             and the load's own debug trace (context, image, driver,
//                                             functions); one line "create=US mount=US get=US | TRACE"
//                                             (the debug log costs a little itself: the total is the sdm mode's)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <cuda.h>

#include "cuda_driver.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "sdm/sdm.h"

namespace {

std::vector<char> slurp(const char* path, bool terminate) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (terminate) bytes.push_back('\0');
    return bytes;
}

int fail(const char* what) {
    std::fprintf(stderr, "load_bench: %s\n", what);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return fail("usage: see the comment at the top of bench/load_bench.cpp");
    const std::string mode = argv[1];
    // Untimed: the driver, the device's primary context, current on this thread.
    sdm_host::CudaDriver cu;
    if (!cu.open()) return fail("no CUDA driver");
    if (!cu.make_current(0)) return fail("no context");
    const auto load = cu.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    CUmodule module = nullptr;
    using Clock = std::chrono::steady_clock;
    Clock::time_point start, stop;

    const auto get_function = cu.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    if (mode == "raw-library") {
        if (argc < 4) return fail("raw-library FILE KERNEL");
        const auto lib_load = cu.get<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
        const auto get_kernel = cu.get<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
        const auto kernel_function = cu.get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction");
        if (lib_load == nullptr || get_kernel == nullptr || kernel_function == nullptr) return fail("the driver lacks the library entry points");
        const std::vector<char> bytes = slurp(argv[2], false);
        CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
        void* value = reinterpret_cast<void*>(uintptr_t{1});
        CUlibrary library = nullptr;
        CUkernel kernel = nullptr;
        CUfunction function = nullptr;
        start = Clock::now();
        CUresult rc = lib_load(&library, bytes.data(), nullptr, nullptr, 0, &option, &value, 1);
        if (rc == CUDA_SUCCESS) rc = get_kernel(&kernel, library, argv[3]);
        if (rc == CUDA_SUCCESS) rc = kernel_function(&function, kernel);
        stop = Clock::now();
        if (rc != CUDA_SUCCESS) return fail("cuLibraryLoadData, cuLibraryGetKernel or cuKernelGetFunction failed");
    } else if (mode == "raw-cubin" || mode == "driver-ptx" || mode == "hand-rolled") {
        const bool timed_read = mode == "hand-rolled";
        std::vector<char> bytes;
        if (!timed_read) bytes = slurp(argv[2], mode == "driver-ptx");
        start = Clock::now();
        if (timed_read) {  // sized once, read once: no growth pattern that pre-warms the heap
            std::ifstream in(argv[2], std::ios::binary | std::ios::ate);
            bytes.resize(static_cast<size_t>(in.tellg()));
            in.seekg(0);
            in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        }
        CUresult rc = load(&module, bytes.data());
        CUfunction function = nullptr;
        if (rc == CUDA_SUCCESS && argc > 3) rc = get_function(&function, module, argv[3]);
        stop = Clock::now();
        if (rc != CUDA_SUCCESS) return fail("cuModuleLoadData or cuModuleGetFunction failed");
    } else if (mode == "nvjitlink" || mode == "nvjitlink-serial") {
        const bool serial = mode == "nvjitlink-serial";
        const uint16_t sm = static_cast<uint16_t>(std::stoi(argv[serial ? 2 : 3]));
        std::vector<std::vector<char>> inputs;
        for (int i = serial ? 3 : 2; i < (serial ? argc : 3); ++i) inputs.push_back(slurp(argv[i], false));
        // Loading nvJitLink (a dlopen of ~100 MB) is part of what a process pays for it, as sdm pays it.
        start = Clock::now();
        auto jit = sdm::runtime::NvJitLink::load("");
        if (!jit) return fail(jit.error().message.c_str());
        for (const auto& ptx : inputs) {
            auto out = jit->link({sdm::archive::Kind::ptx, {reinterpret_cast<const std::byte*>(ptx.data()), ptx.size()}, "bench.ptx"}, sm,
                                 sdm::archive::Variant::base, {});
            if (!out) return fail(out.error().message.c_str());
            if (load(&module, out->cubin.data()) != CUDA_SUCCESS) return fail("cuModuleLoadData of the linked cubin failed");
        }
        stop = Clock::now();
    } else if (mode == "sdm" || mode == "sdm-preload") {
        const bool preload = mode == "sdm-preload";
        if (argc < (preload ? 4 : 5)) return fail("sdm needs ARCHIVE KERNEL CACHE_DIR; sdm-preload ARCHIVE CACHE_DIR");
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cache_dir = argv[preload ? 3 : 4];
        sdm_runtime* rt = nullptr;
        sdm_error* e = nullptr;
        start = Clock::now();
        sdm_status s = sdm_runtime_create(&p, &rt, &e);
        if (s == SDM_OK) s = sdm_archive_mount_file(rt, argv[2], &e);
        sdm_kernel* k = nullptr;
        if (s == SDM_OK) s = preload ? sdm_preload(rt, 0, nullptr, 0, &e) : sdm_kernel_get(rt, 0, argv[3], nullptr, &k, &e);
        stop = Clock::now();
        if (s != SDM_OK) return fail(sdm_error_message(e));
        // The runtime stays: destroying it (unloading) is not part of a start.
    } else if (mode == "sdm-phases") {
        if (argc < 5) return fail("sdm-phases needs ARCHIVE KERNEL CACHE_DIR");
        std::string trace;
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cache_dir = argv[4];
        p.log_level = SDM_LOG_DEBUG;
        p.log_user_data = &trace;
        p.log_fn = [](void* user, sdm_log_level, const char* message, size_t length) {
            const std::string_view line(message, length);
            if (line.find("load of module") != std::string_view::npos) *static_cast<std::string*>(user) = line;
        };
        sdm_runtime* rt = nullptr;
        sdm_error* e = nullptr;
        sdm_kernel* k = nullptr;
        const auto t0 = Clock::now();
        sdm_status s = sdm_runtime_create(&p, &rt, &e);
        const auto t1 = Clock::now();
        if (s == SDM_OK) s = sdm_archive_mount_file(rt, argv[2], &e);
        const auto t2 = Clock::now();
        if (s == SDM_OK) s = sdm_kernel_get(rt, 0, argv[3], nullptr, &k, &e);
        const auto t3 = Clock::now();
        if (s != SDM_OK) return fail(sdm_error_message(e));
        const auto us = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
        std::printf("create=%.1f mount=%.1f get=%.1f | %s\n", us(t0, t1), us(t1, t2), us(t2, t3), trace.c_str());
        return 0;
    } else {
        return fail("unknown mode");
    }
    std::printf("%.1f\n", std::chrono::duration<double, std::micro>(stop - start).count());
    return 0;
}
