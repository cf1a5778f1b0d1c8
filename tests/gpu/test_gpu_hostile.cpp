// GPU test: hostile images against the real driver. A cubin's 64-byte ELF header whose program
// and section header tables point 512 MiB past its end crashes the host inside libcuda
// (580.159.04) when handed to cuModuleLoadData; through sdm it is SDM_ERROR_ARCHIVE_CORRUPT,
// stored or zstd-coded, and the process lives. The same header planted in the cache under the
// key of a good image is removed and the good image loads. Exits 77 without a GPU.
//   test_gpu_hostile               the checks above
//   test_gpu_hostile --raw-driver  hands the header to cuModuleLoadData itself (tests/gpu/run.sh
//                                  runs this in its own process, to show why sdm checks first)
//   test_gpu_hostile --raw-driver-fatbin  the same header inside a fatbin container
// The same header and every other hostile cubin of tests/forge inside a fatbin, stored or zstd
// there: SDM_ERROR_ARCHIVE_CORRUPT from sdm_kernel_get with the real driver, the process alive.
// A fatbin is a side door to the driver's JIT no more (issue 38): one holding the test data's
// valid LTO-IR raw (the driver's JIT killed the host with SIGSEGV) is refused; one holding slow
// PTX is linked by sdm under SDM_JIT_ISOLATION=always and auto and stopped at the time limit (it
// kept sdm_kernel_get busy past 200 s under a limit of 30 s); one holding an sm_90 cubin loads it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda.h>

#include "runtime/jit/cache.hpp"
#include "forge/forge.hpp"
#include "gpu_driver.hpp"
#include "common/hash.hpp"
#include "archive/archive.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::failures;

namespace {

forge::Bytes hostile_header() {
    forge::Bytes h = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin");
    h.resize(64);
    const uint64_t far = uint64_t{512} << 20;
    for (int i = 0; i < 8; ++i) h[32 + static_cast<size_t>(i)] = h[40 + static_cast<size_t>(i)] = static_cast<uint8_t>(far >> (8 * i));
    return h;
}

forge::Bytes archive_with(const forge::Bytes& cubin, uint8_t codec) {
    forge::Archive a;
    a.kernel_abi_major = 1;
    a.records.push_back({"kernels", forge::kind::cubin, codec, 90, 0, 0, forge::kNoRef, cubin, {}, {}, {}, {}});
    const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")}));
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    return forge::write(a);
}

// An archive whose module "kernels" is a fatbin of `entries`, and a manifest listing "scale".
forge::Bytes fatbin_archive(const std::vector<forge::FatbinEntry>& entries) {
    forge::Archive a;
    a.kernel_abi_major = 1;
    a.records.push_back({"kernels", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::fatbin(entries), {}, {}, {}, {}});
    const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")}));
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    return forge::write(a);
}

// A chain of 40,000 dependent FMAs over 2,000 live registers (tests/runtime/jit/test_isolation.cpp): minutes
// of nvJitLink's time. As a fatbin's PTX entry, NUL-terminated.
forge::FatbinEntry slow_ptx_entry() {
    const std::string ptx = forge::fma_chain_ptx();
    forge::Bytes payload(ptx.begin(), ptx.end());
    payload.push_back(0);
    return {1, 90, 0x11, payload, 0, 9, 0};
}

sdm_runtime* runtime(const std::string& cache) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cache_dir = cache.c_str();
    sdm_runtime* rt = nullptr;
    if (sdm_runtime_create(&p, &rt, nullptr) != SDM_OK) std::exit(1);
    return rt;
}

// sdm_kernel_get of "scale" from `archive` in a fresh runtime: its status and message, and the
// image source when it loaded.
struct Fetched {
    sdm_status status;
    std::string message;
    uint32_t source;
    double seconds;
};
Fetched fetch(const std::string& cache, const forge::Bytes& archive, const char* label) {
    sdm_runtime* rt = runtime(cache);
    sdm_archive_mount_memory(rt, archive.data(), archive.size(), label, nullptr);
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    const auto start = std::chrono::steady_clock::now();
    Fetched f{sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e), "", 0, 0};
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.message = sdm_error_message(e);
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    if (f.status == SDM_OK && sdm_kernel_info_get(k, &info, nullptr) == SDM_OK) f.source = info.source;
    sdm_error_destroy(e);
    sdm_runtime_destroy(rt);
    return f;
}

void check_fatbins(const std::string& cache) {
    const forge::Bytes cubin = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin");
    const forge::Bytes ltoir = forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.lto_90.ltoir");
    const Fetched lto = fetch(cache + "/lto", fatbin_archive({{8, 90, 0x11, ltoir, 0, 1, 8}}), "raw-ltoir-fatbin.sdma");
    check(lto.status == SDM_ERROR_ARCHIVE_CORRUPT && lto.message.find("raw LTO-IR, which nvcc never writes") != std::string::npos,
          std::string("a fatbin holding raw LTO-IR is refused: ") + sdm_status_string(lto.status) + ": " + lto.message);
    // sdm's backends under the isolation policy, stopped at the limit; never the driver's JIT.
    ::setenv("SDM_JIT_TIME_LIMIT", "5", 1);
    for (const char* isolation : {"always", "auto"}) {
        ::setenv("SDM_JIT_ISOLATION", isolation, 1);
        const Fetched slow = fetch(cache + "/slow-" + isolation, fatbin_archive({slow_ptx_entry()}), "slow-ptx-fatbin.sdma");
        std::printf("slow PTX in a fatbin, SDM_JIT_ISOLATION=%s, SDM_JIT_TIME_LIMIT=5: %s after %.1f s\n", isolation, sdm_status_string(slow.status),
                    slow.seconds);
        check(slow.status == SDM_ERROR_JIT && slow.message.find("ran past its time limit of 5.0 s") != std::string::npos,
              std::string("slow PTX in a fatbin (SDM_JIT_ISOLATION=") + isolation + "): " + sdm_status_string(slow.status) + ": " + slow.message);
    }
    ::unsetenv("SDM_JIT_ISOLATION");
    ::unsetenv("SDM_JIT_TIME_LIMIT");
    const Fetched good = fetch(cache + "/cubin", fatbin_archive({{2, 90, 0x8011, forge::zstd(cubin), cubin.size(), 1, 8}}), "cubin-fatbin.sdma");
    check(good.status == SDM_OK && good.source == SDM_IMAGE_SOURCE_FATBIN,
          std::string("a fatbin's sm_90 cubin loads and its kernel resolves: ") + sdm_status_string(good.status) + " " + good.message + ", source " +
              std::to_string(good.source));
}

}  // namespace

int main(int argc, char** argv) {
    Cuda cuda;
    if (!cuda.open_device0()) {
        std::printf("no CUDA driver or device: skipped\n");
        return 77;
    }
    const forge::Bytes hostile = hostile_header();
    if (argc > 1 && std::strcmp(argv[1], "--raw-driver") == 0) {
        CUmodule module = nullptr;
        std::printf("handing the 64-byte header to cuModuleLoadData...\n");
        std::fflush(stdout);
        const CUresult rc = cuda.get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&module, hostile.data());
        std::printf("the driver returned %d and the process lives\n", static_cast<int>(rc));
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "--raw-driver-fatbin") == 0) {
        const forge::Bytes container = forge::fatbin({{2, 90, 0x11, hostile, 0, 1, 8}});
        CUmodule module = nullptr;
        std::printf("handing a fatbin holding the 64-byte header to cuModuleLoadData...\n");
        std::fflush(stdout);
        const CUresult rc = cuda.get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&module, container.data());
        std::printf("the driver returned %d and the process lives\n", static_cast<int>(rc));
        return 0;
    }
    char tmpl[] = "/tmp/sdm-gpu-hostile-XXXXXX";
    const std::string cache = ::mkdtemp(tmpl);
    for (const uint8_t codec : {forge::codec::stored, forge::codec::zstd}) {
        const forge::Bytes archive = archive_with(hostile, codec);
        sdm_runtime* rt = runtime(cache + "/c" + std::to_string(codec));
        sdm_error* e = nullptr;
        check(sdm_archive_mount_memory(rt, archive.data(), archive.size(), "hostile.sdma", nullptr) == SDM_OK, "the hostile archive mounts");
        sdm_kernel* k = nullptr;
        const sdm_status s = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
        const std::string message = sdm_error_message(e);
        check(s == SDM_ERROR_ARCHIVE_CORRUPT && message.find("lies outside the image of 64 bytes") != std::string::npos,
              std::string(codec == forge::codec::stored ? "stored" : "zstd-coded") + " hostile cubin: " + sdm_status_string(s) + ": " + message);
        sdm_error_destroy(e);
        sdm_runtime_destroy(rt);
    }
    // The same header and every other hostile cubin inside a fatbin (stored or zstd inside it): the
    // driver would read the container's entries as the images they claim to be.
    for (const auto& bad : forge::hostile_cubins(forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin"))) {
        for (const bool inner_zstd : {false, true}) {
            const forge::FatbinEntry inner = inner_zstd ? forge::FatbinEntry{2, 90, 0x8011, forge::zstd(bad.bytes), bad.bytes.size(), 1, 8}
                                                        : forge::FatbinEntry{2, 90, 0x11, bad.bytes, 0, 1, 8};
            forge::Archive a;
            a.kernel_abi_major = 1;
            a.records.push_back({"kernels", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::fatbin({inner}), {}, {}, {}, {}});
            const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")}));
            a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
            const forge::Bytes archive = forge::write(a);
            sdm_runtime* rt = runtime(cache + "/fatbin");
            sdm_archive_mount_memory(rt, archive.data(), archive.size(), "hostile-fatbin.sdma", nullptr);
            sdm_kernel* k = nullptr;
            sdm_error* e = nullptr;
            const sdm_status s = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
            const std::string message = sdm_error_message(e);
            check(s == SDM_ERROR_ARCHIVE_CORRUPT && message.find(bad.expect) != std::string::npos,
                  "a fatbin wrapping " + bad.name + (inner_zstd ? " (zstd inside)" : " (stored inside)") + ": " + sdm_status_string(s) + ": " + message);
            sdm_error_destroy(e);
            sdm_runtime_destroy(rt);
        }
    }
    // Planted in the cache under the key of a good image: removed, and the good image loads.
    {
        const forge::Bytes good = archive_with(forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin"), forge::codec::zstd);
        auto opened = sdm::archive::Archive::open_memory({reinterpret_cast<const std::byte*>(good.data()), good.size()}, "good");
        const auto& entry = opened->entries()[0];
        sdm::runtime::CacheOptions o;
        o.directory = cache + "/planted";
        auto c = sdm::runtime::Cache::open(o).value();
        (void)entry;
        const auto key = sdm::runtime::CacheKeyBuilder().field("raw image").field(opened->identity(0)).key();
        check(c->put(key, {reinterpret_cast<const std::byte*>(hostile.data()), hostile.size()}).ok(), "planted the hostile header in the cache");
        sdm_runtime* rt = runtime(o.directory);
        sdm_archive_mount_memory(rt, good.data(), good.size(), "good.sdma", nullptr);
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e);
        sdm_kernel_info info{};
        info.struct_size = sizeof info;
        if (s == SDM_OK) sdm_kernel_info_get(k, &info, nullptr);
        check(s == SDM_OK && info.source == 1, std::string("a planted cache entry is removed and the archive's image loads: ") + sdm_status_string(s) +
                                                    " " + sdm_error_message(e) + ", source " + std::to_string(info.source));
        sdm_error_destroy(e);
        sdm_runtime_destroy(rt);
    }
    check_fatbins(cache);
    std::printf("%s: %d failure(s); the process lives\n", failures == 0 ? "ok" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
