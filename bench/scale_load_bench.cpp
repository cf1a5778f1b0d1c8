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
//   scale_load_bench write-images ARCHIVE DIR       untimed: each module's served image as DIR/N (N: the module's
//                                                   place in name order), and DIR/index ("N cubin|ptx" a line)
//   scale_load_bench driver-files ARCHIVE DIR [LIST] each module's file DIR/N read (inside the clock: open, read)
//                                                   and handed to cuModuleLoadData, cuModuleGetFunction of each
//                                                   kernel: raw images, or fatbins fatbinary made of them
// --all-modules (driver-module, driver-files): every module loaded, only LIST's kernels resolved (the
// driver's LAZY peer of a 50-kernel fetch). Every mode also prints dev_bytes=B: the device memory
// cuMemGetInfo says was taken between the context's creation and the end (after a synchronize).
// LIST: a file of kernel names, one a line: only those kernels, and only their modules. The image a
// module is served from on sm_90: its sm_90 cubin, else its compute_90 PTX (the driver JITs that,
// its ComputeCache warm after a first run; sdm links it through its cache). With -v every failure
// is printed.
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <cuda.h>

#include "archive/archive.hpp"
#include "cuda_driver.hpp"
#include "device_memory.hpp"
#include "load_plan.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"

namespace {

using sdm_bench::Plan;
using sdm_bench::plan_of;
using sdm_bench::used_device_bytes;
using Clock = std::chrono::steady_clock;
using namespace sdm;

int fail(const std::string& what) {
    std::fprintf(stderr, "scale_load_bench: %s\n", what.c_str());
    return 1;
}

// Each module's image as sdm serves it on sm_90: its cubin, else its compute_90 PTX (NUL-terminated).
Result<ByteVector> served_image(const archive::Archive& a, const std::string& module, bool* ptx) {
    auto i = a.find(module, archive::Kind::cubin, 90, archive::Variant::base);
    if (!i) i = a.find(module, archive::Kind::ptx, 90, archive::Variant::base);
    if (!i) return make_error(ErrorCode::not_found, "module " + module + " has neither an sm_90 cubin nor compute_90 PTX");
    auto raw = a.read(*i);
    if (!raw) return raw;
    *ptx = a.entries()[*i].kind == archive::Kind::ptx;
    if (*ptx) raw->push_back(std::byte{0});
    return raw;
}

int write_images(const char* path, const std::string& dir) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    auto plan = plan_of(*a, nullptr);
    if (!plan) return fail(plan.error().message);
    std::ofstream index(dir + "/index");
    for (size_t m = 0; m < plan->modules.size(); ++m) {
        bool ptx = false;
        auto bytes = served_image(*a, plan->modules[m].first, &ptx);
        if (!bytes) return fail(bytes.error().message);
        std::ofstream out(dir + "/" + std::to_string(plan->ids[m]), std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size() - (ptx ? 1 : 0)));
        if (!out) return fail("cannot write into " + dir);
        index << plan->ids[m] << (ptx ? " ptx\n" : " cubin\n");
    }
    return index ? 0 : fail("cannot write " + dir + "/index");
}

// A file read whole, NUL-terminated (PTX needs it; cubins and fatbins ignore it).
bool read_file(const std::string& path, ByteVector& into) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st{};
    bool ok = ::fstat(fd, &st) == 0;
    if (ok) {
        into.resize(static_cast<size_t>(st.st_size) + 1);
        size_t got = 0;
        while (ok && got < static_cast<size_t>(st.st_size)) {
            const ssize_t n = ::read(fd, into.data() + got, static_cast<size_t>(st.st_size) - got);
            ok = n > 0;
            if (ok) got += static_cast<size_t>(n);
        }
        into[static_cast<size_t>(st.st_size)] = std::byte{0};
    }
    ::close(fd);
    return ok;
}

int run_sdm(const char* path, const char* list, bool preload, bool verbose) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    auto plan = plan_of(*a, list);
    if (!plan) return fail(plan.error().message);
    auto made = sdm_bench::bench_runtime();
    if (!made) return fail(made.error().message);
    sdm_runtime* rt = *made;
    sdm_error* e = nullptr;
    sdm_host::CudaDriver cu;  // the primary context current, as the driver modes have it
    if (!cu.open() || !cu.make_current(0)) return fail("no context");
    const long long before = used_device_bytes(cu);
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
                const std::string name = sdm_bench::fetch_name(*plan, module, n);
                if (sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e) != SDM_OK) {
                    ++failed;
                    if (verbose) std::fprintf(stderr, "%s\n", sdm_error_message(e));
                    sdm_error_destroy(e);
                    e = nullptr;
                }
            }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("%s modules=%zu kernels=%zu failed=%zu us=%.0f dev_bytes=%lld\n", preload ? "sdm-preload" : "sdm", plan->modules.size(),
                plan->kernels, failed, us, used_device_bytes(cu) - before);
    return failed == 0 ? 0 : 2;
}

// How the driver modes get a module's bytes: decoded from the archive before the clock, or a file
// of DIR read inside it.
struct DriverRun {
    const char* list{nullptr};
    const char* files{nullptr};  // DIR, or null: the archive's images
    bool library{false};
    bool all_modules{false};
    bool verbose{false};
};

int run_driver(const char* path, const DriverRun& r) {
    auto a = archive::Archive::open_file(path);
    if (!a) return fail(a.error().message);
    auto plan = plan_of(*a, r.list, r.all_modules);
    if (!plan) return fail(plan.error().message);
    std::vector<ByteVector> bytes(plan->modules.size());
    std::vector<std::string> files;
    for (size_t m = 0; m < plan->modules.size(); ++m) {
        if (r.files != nullptr) {
            files.push_back(std::string(r.files) + "/" + std::to_string(plan->ids[m]));
            continue;
        }
        bool ptx = false;
        auto raw = served_image(*a, plan->modules[m].first, &ptx);  // untimed
        if (!raw) return fail(raw.error().message);
        bytes[m] = std::move(*raw);
    }
    sdm_host::CudaDriver cu;
    if (!cu.open()) return fail("no CUDA driver");
    if (!cu.make_current(0)) return fail("no context");
    const auto load = cu.get<decltype(&cuModuleLoadData)>("cuModuleLoadData");
    const auto get_function = cu.get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
    const auto load_library = cu.get<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
    const auto get_kernel = cu.get<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
    const auto kernel_function = cu.get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction");
    const long long before = used_device_bytes(cu);
    size_t failed = 0;
    const auto start = Clock::now();
    for (size_t m = 0; m < plan->modules.size(); ++m) {
        const auto& names = plan->modules[m].second;
        if (r.files != nullptr && !read_file(files[m], bytes[m])) {
            ++failed;
            if (r.verbose) std::fprintf(stderr, "cannot read %s\n", files[m].c_str());
            continue;
        }
        if (r.library) {
            CUlibrary lib = nullptr;
            CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
            void* value = reinterpret_cast<void*>(uintptr_t{1});
            if (load_library(&lib, bytes[m].data(), nullptr, nullptr, 0, &option, &value, 1) != CUDA_SUCCESS) {
                ++failed;
                continue;
            }
            for (const auto& n : names) {
                CUkernel k = nullptr;
                CUfunction f = nullptr;
                if (get_kernel(&k, lib, n.c_str()) != CUDA_SUCCESS || kernel_function(&f, k) != CUDA_SUCCESS) {
                    ++failed;
                    if (r.verbose) std::fprintf(stderr, "kernel %s failed\n", n.c_str());
                }
            }
        } else {
            CUmodule mod = nullptr;
            if (load(&mod, bytes[m].data()) != CUDA_SUCCESS) {
                ++failed;
                if (r.verbose) std::fprintf(stderr, "cuModuleLoadData of module %s failed\n", plan->modules[m].first.c_str());
                continue;
            }
            for (const auto& n : names) {
                CUfunction f = nullptr;
                if (get_function(&f, mod, n.c_str()) != CUDA_SUCCESS) {
                    ++failed;
                    if (r.verbose) std::fprintf(stderr, "cuModuleGetFunction %s failed\n", n.c_str());
                }
            }
        }
        if (r.files != nullptr) ByteVector().swap(bytes[m]);  // what a host reading files keeps: nothing
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    std::printf("%s modules=%zu kernels=%zu failed=%zu us=%.0f dev_bytes=%lld\n",
                r.files != nullptr ? "driver-files" : r.library ? "driver-library" : "driver-module", plan->modules.size(),
                plan->kernels, failed, us, used_device_bytes(cu) - before);
    return failed == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    DriverRun r;
    std::vector<char*> args;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-v") == 0) r.verbose = true;
        else if (std::strcmp(argv[i], "--all-modules") == 0) r.all_modules = true;
        else args.push_back(argv[i]);
    }
    if (args.size() < 2 || args.size() > 4) return fail("usage: see the comment at the top of bench/scale_load_bench.cpp");
    const std::string mode = args[0];
    if (mode == "write-images" && args.size() == 3) return write_images(args[1], args[2]);
    if (mode == "driver-files" && args.size() >= 3) {
        r.files = args[2];
        r.list = args.size() == 4 ? args[3] : nullptr;
        return run_driver(args[1], r);
    }
    if (args.size() > 3) return fail("usage: see the comment at the top of bench/scale_load_bench.cpp");
    r.list = args.size() == 3 ? args[2] : nullptr;
    if (mode == "sdm") return run_sdm(args[1], r.list, false, r.verbose);
    if (mode == "sdm-preload") return run_sdm(args[1], nullptr, true, r.verbose);
    r.library = mode == "driver-library";
    if (mode == "driver-module" || r.library) return run_driver(args[1], r);
    return fail("unknown mode " + mode);
}
