// Loading a whole real library at scale (GPU, issue 27; bench/scale_load.sh drives it): the images
// an archive `sdm import` made serves on sm_90, loaded by the driver itself from memory (the
// bytes sdm serves, decoded before the clock: what `sdm extract` writes, without the files) and
// through sdm. One measurement per process; the context exists before the clock. Prints one line:
//   MODE modules=N kernels=N failed=N us=T
//   scale_load_bench driver-module ARCHIVE [LIST]   cuModuleLoadData of each module's image, cuModuleGetFunction
//                                                   of each of its kernels
//   scale_load_bench driver-library ARCHIVE [LIST]  cuLibraryLoadData (preserved), cuLibraryGetKernel, cuKernelGetFunction
//   scale_load_bench sdm ARCHIVE [LIST]             mount + sdm_kernel_get of every kernel, module by module
//   scale_load_bench sdm-preload ARCHIVE            mount + sdm_preload of everything
// LIST: a file of kernel names, one a line: only those kernels, and only their modules. The image a
// module is served from on sm_90: its sm_90 cubin, else its compute_90 PTX (the driver JITs that,
// its ComputeCache warm after a first run; sdm links it through its cache). With -v every failure
// is printed.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <cuda.h>

#include "archive/archive.hpp"
#include "cuda_driver.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sdm;

int fail(const std::string& what) {
    std::fprintf(stderr, "scale_load_bench: %s\n", what.c_str());
    return 1;
}

// The kernels to load, module by module in the archive's order: the whole manifest, or LIST's.
struct Plan {
    std::vector<std::pair<std::string, std::vector<std::string>>> modules;  // module, its kernels
    size_t kernels{0};
};

Result<Plan> plan_of(const archive::Archive& a, const char* list) {
    SDM_TRY_GET(manifest, a.read_manifest());
    if (!*manifest) return make_error(ErrorCode::not_found, "the archive has no manifest");
    std::set<std::string> wanted;
    if (list != nullptr) {
        std::ifstream in(list);
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) wanted.insert(line);
    }
    std::map<std::string, std::vector<std::string>> by_module;
    for (const auto& k : (*manifest)->kernels)
        if (list == nullptr || wanted.count(k.name)) by_module[k.module].push_back(k.name);
    Plan p;
    for (auto& [module, kernels] : by_module) {  // (std::map: the archive's name order)
        p.kernels += kernels.size();
        p.modules.emplace_back(module, std::move(kernels));
    }
    return p;
}

int run_sdm(const char* path, const char* list, bool preload, bool verbose) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    auto plan = plan_of(*a, list);
    if (!plan) return fail(plan.error().message);
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.log_level = SDM_LOG_OFF;
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&p, &rt, &e) != SDM_OK) return fail(sdm_error_message(e));
    int32_t devices = 0;
    if (sdm_device_count(rt, &devices, &e) != SDM_OK || devices < 1) return fail("no device");  // the context, before the clock
    sdm_host::CudaDriver cu;  // the primary context current, as the driver modes have it
    if (!cu.open() || !cu.make_current(0)) return fail("no context");
    size_t failed = 0;
    const auto start = Clock::now();
    if (sdm_archive_mount_file(rt, path, &e) != SDM_OK) return fail(sdm_error_message(e));
    if (preload) {
        if (sdm_preload(rt, 0, nullptr, 0, &e) != SDM_OK) {
            ++failed;
            if (verbose) std::fprintf(stderr, "%s\n", sdm_error_message(e));
        }
    } else {
        for (const auto& [module, kernels] : plan->modules)
            for (const auto& n : kernels) {
                sdm_kernel* k = nullptr;
                if (sdm_kernel_get(rt, 0, n.c_str(), nullptr, &k, &e) != SDM_OK) {
                    ++failed;
                    if (verbose) std::fprintf(stderr, "%s\n", sdm_error_message(e));
                    sdm_error_destroy(e);
                    e = nullptr;
                }
            }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("%s modules=%zu kernels=%zu failed=%zu us=%.0f\n", preload ? "sdm-preload" : "sdm", plan->modules.size(), plan->kernels, failed, us);
    return failed == 0 ? 0 : 2;
}

int run_driver(const char* path, const char* list, bool library, bool verbose) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    auto plan = plan_of(*a, list);
    if (!plan) return fail(plan.error().message);
    // Untimed: each module's image as sdm serves it on sm_90, decoded (PTX NUL-terminated).
    std::vector<ByteVector> bytes;
    std::vector<const std::vector<std::string>*> kernels;
    for (const auto& [module, names] : plan->modules) {
        auto i = a->find(module, archive::Kind::cubin, 90, archive::Variant::base);
        if (!i) i = a->find(module, archive::Kind::ptx, 90, archive::Variant::base);
        if (!i) return fail("module " + module + " has neither an sm_90 cubin nor compute_90 PTX");
        auto raw = a->read(*i);
        if (!raw) return fail(raw.error().message);
        if (a->entries()[*i].kind == archive::Kind::ptx) raw->push_back(std::byte{0});
        bytes.push_back(std::move(*raw));
        kernels.push_back(&names);
    }
    sdm_host::CudaDriver cu;
    if (!cu.open()) return fail("no CUDA driver");
    if (!cu.make_current(0)) return fail("no context");
    const auto load = cu.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    const auto get_function = cu.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    const auto load_library = cu.get<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
    const auto get_kernel = cu.get<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
    const auto kernel_function = cu.get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction");
    size_t failed = 0;
    const auto start = Clock::now();
    for (size_t m = 0; m < bytes.size(); ++m) {
        if (library) {
            CUlibrary lib = nullptr;
            CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
            void* value = reinterpret_cast<void*>(uintptr_t{1});
            if (load_library(&lib, bytes[m].data(), nullptr, nullptr, 0, &option, &value, 1) != CUDA_SUCCESS) {
                ++failed;
                continue;
            }
            for (const auto& n : *kernels[m]) {
                CUkernel k = nullptr;
                CUfunction f = nullptr;
                if (get_kernel(&k, lib, n.c_str()) != CUDA_SUCCESS || kernel_function(&f, k) != CUDA_SUCCESS) {
                    ++failed;
                    if (verbose) std::fprintf(stderr, "kernel %s failed\n", n.c_str());
                }
            }
        } else {
            CUmodule mod = nullptr;
            if (load(&mod, bytes[m].data()) != CUDA_SUCCESS) {
                ++failed;
                continue;
            }
            for (const auto& n : *kernels[m]) {
                CUfunction f = nullptr;
                if (get_function(&f, mod, n.c_str()) != CUDA_SUCCESS) {
                    ++failed;
                    if (verbose) std::fprintf(stderr, "cuModuleGetFunction %s failed\n", n.c_str());
                }
            }
        }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("%s modules=%zu kernels=%zu failed=%zu us=%.0f\n", library ? "driver-library" : "driver-module", bytes.size(), plan->kernels, failed, us);
    return failed == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    bool verbose = false;
    std::vector<char*> args;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-v") == 0) verbose = true;
        else args.push_back(argv[i]);
    }
    if (args.size() < 2 || args.size() > 3) return fail("usage: see the comment at the top of bench/scale_load_bench.cpp");
    const std::string mode = args[0];
    const char* list = args.size() == 3 ? args[2] : nullptr;
    if (mode == "sdm") return run_sdm(args[1], list, false, verbose);
    if (mode == "sdm-preload") return run_sdm(args[1], nullptr, true, verbose);
    if (mode == "driver-module") return run_driver(args[1], list, false, verbose);
    if (mode == "driver-library") return run_driver(args[1], list, true, verbose);
    return fail("unknown mode " + mode);
}
