// GPU test: hostile images against the real driver. A cubin's 64-byte ELF header whose program
// and section header tables point 512 MiB past its end crashes the host inside libcuda
// (580.159.04) when handed to cuModuleLoadData; through sdm it is SDM_ERROR_ARCHIVE_CORRUPT,
// stored or zstd-coded, and the process lives. The same header planted in the cache under the
// key of a good image is removed and the good image loads. Exits 77 without a GPU.
//   test_gpu_hostile               the checks above
//   test_gpu_hostile --raw-driver  hands the header to cuModuleLoadData itself (tests/gpu/run.sh
//                                  runs this in its own process, to show why sdm checks first)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda.h>

#include "cache.hpp"
#include "forge/forge.hpp"
#include "gpu_driver.hpp"
#include "hash.hpp"
#include "archive.hpp"
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

sdm_runtime* runtime(const std::string& cache) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cache_dir = cache.c_str();
    sdm_runtime* rt = nullptr;
    if (sdm_runtime_create(&p, &rt, nullptr) != SDM_OK) std::exit(1);
    return rt;
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
    // Planted in the cache under the key of a good image: removed, and the good image loads.
    {
        const forge::Bytes good = archive_with(forge::read_file(std::string(SDM_TEST_DATA) + "/kernels.sm_90.cubin"), forge::codec::zstd);
        auto opened = sdm::archive::Archive::open_memory({reinterpret_cast<const std::byte*>(good.data()), good.size()}, "good");
        const auto& entry = opened->entries()[0];
        sdm::runtime::CacheOptions o;
        o.directory = cache + "/planted";
        auto c = sdm::runtime::Cache::open(o).value();
        const auto key = sdm::runtime::CacheKeyBuilder().field("raw image").field(entry.raw_hash).field(entry.raw_size).key();
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
    std::printf("%s: %d failure(s); the process lives\n", failures == 0 ? "ok" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
