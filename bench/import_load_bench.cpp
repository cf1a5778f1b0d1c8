// Loading a real library's kernels (GPU, issue 16): every module of an archive `sdm import` made of
// a CUDA library (cuFFT, cuBLASLt), every kernel resolved through sdm_kernel_get, against the
// driver loading the same library's fatbin containers itself (cuModuleLoadData of each container,
// cuModuleGetFunction of each of its kernels). One measurement per process (bench/import_load.sh
// alternates them); the files are read and parsed before the clock starts. Prints one line:
//   MODE modules=N kernels=N failed=N us=T
//   import_load_bench sdm ARCHIVE               mount + sdm_kernel_get of every kernel the manifest lists
//                                               (MODULE!NAME for a name several modules list)
//   import_load_bench driver LIBRARY SM         cuModuleLoadData of every container holding a cubin for
//                                               sm_SM or PTX of compute_SM (what `sdm import --arch
//                                               sm_SM --ptx compute_SM` keeps), cuModuleGetFunction of
//                                               each kernel of that image
// With -v, every failure is printed.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <cuda.h>

#include "archive/archive.hpp"
#include "cuda_driver.hpp"
#include "archive/fatbin.hpp"
#include "archive/file_map.hpp"
#include "archive/host_binary.hpp"
#include "archive/kernel_params.hpp"
#include "archive/manifest.hpp"
#include "load_plan.hpp"
#include "sdm/sdm.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sdm;

int fail(const std::string& what) {
    std::fprintf(stderr, "import_load_bench: %s\n", what.c_str());
    return 1;
}

int run_sdm(const char* path, bool verbose) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    // Every kernel by the name a user fetches it with: MODULE!NAME where several modules list the
    // name (a plain fetch of it is SDM_ERROR_AMBIGUOUS since issue 39), else the plain name.
    auto plan = sdm_bench::plan_of(*a, nullptr);
    if (!plan) return fail(plan.error().message);
    std::vector<std::string> names;
    for (const auto& [module, kernels] : plan->modules)
        for (const auto& k : kernels) names.push_back(sdm_bench::fetch_name(*plan, module, k));
    // The cache as a host has it ($SDM_CACHE_DIR): PTX-only modules are linked once, then hit.
    auto made = sdm_bench::bench_runtime();
    if (!made) return fail(made.error().message);
    sdm_runtime* rt = *made;
    sdm_error* e = nullptr;
    const auto start = Clock::now();
    if (sdm_archive_mount_file(rt, path, &e) != SDM_OK) return fail(sdm_error_message(e));
    size_t failed = 0;
    for (const auto& n : names) {
        sdm_kernel* k = nullptr;
        if (sdm_kernel_get(rt, 0, n.c_str(), nullptr, &k, &e) != SDM_OK) {
            ++failed;
            if (verbose) std::fprintf(stderr, "%s\n", sdm_error_message(e));
            sdm_error_destroy(e);
            e = nullptr;
        }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("sdm modules=%zu kernels=%zu failed=%zu us=%.0f\n", plan->modules.size(), names.size(), failed, us);
    sdm_runtime_destroy(rt);
    return failed == 0 ? 0 : 2;
}

int run_driver(const char* path, int sm, bool verbose) {
    auto map = archive::FileMap::open(path);
    if (!map) return fail(map.error().message);
    auto found = archive::find_fatbins((*map)->bytes());
    if (!found) return fail(found.error().message);
    // Untimed: which containers hold an image for the device, and the kernels of its cubin.
    struct Container {
        Bytes bytes;
        std::vector<std::string> kernels;
    };
    std::vector<Container> containers;
    for (const auto& f : *found) {
        if (f.relocatable) continue;
        auto c = archive::parse_fatbin(f.bytes);
        if (!c) continue;
        // The images `sdm import --arch sm_SM --ptx compute_SM` keeps: the device's cubin, else
        // compute_SM PTX (which the driver JITs, as sdm links it).
        const archive::FatbinEntry* pick = nullptr;
        for (const auto& entry : c->entries)
            if (entry.image_kind == archive::Kind::cubin && entry.sm == sm && entry.variant == archive::Variant::base) pick = &entry;
        if (pick == nullptr)
            for (const auto& entry : c->entries)
                if (entry.image_kind == archive::Kind::ptx && entry.sm == sm && entry.variant == archive::Variant::base) pick = &entry;
        if (pick == nullptr) continue;
        auto payload = archive::fatbin_entry_payload(*pick);
        if (!payload) continue;
        auto params = archive::image_kernel_params(*pick->image_kind, *payload);
        if (!params || params->empty()) continue;
        Container held{c->bytes, {}};
        for (const auto& k : *params) held.kernels.push_back(k.name);
        containers.push_back(std::move(held));
    }
    sdm_host::CudaDriver cu;
    if (!cu.open()) return fail("no CUDA driver");
    if (!cu.make_current(0)) return fail("no context");
    const auto load = cu.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    const auto get_function = cu.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    size_t kernels = 0, failed = 0;
    std::vector<CUmodule> modules;
    const auto start = Clock::now();
    for (const auto& c : containers) {
        CUmodule m = nullptr;
        if (load(&m, c.bytes.data()) != CUDA_SUCCESS) {
            ++failed;
            continue;
        }
        modules.push_back(m);
        for (const auto& n : c.kernels) {
            CUfunction fn = nullptr;
            ++kernels;
            if (get_function(&fn, m, n.c_str()) != CUDA_SUCCESS) {
                ++failed;
                if (verbose) std::fprintf(stderr, "cuModuleGetFunction %s failed\n", n.c_str());
            }
        }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("driver modules=%zu kernels=%zu failed=%zu us=%.0f\n", containers.size(), kernels, failed, us);
    return failed == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    bool verbose = false;
    std::vector<char*> args;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-v") == 0)
            verbose = true;
        else
            args.push_back(argv[i]);
    }
    if (args.size() == 2 && std::strcmp(args[0], "sdm") == 0) return run_sdm(args[1], verbose);
    if (args.size() == 3 && std::strcmp(args[0], "driver") == 0) return run_driver(args[1], std::atoi(args[2]), verbose);
    return fail("usage: see the comment at the top of bench/import_load_bench.cpp");
}
