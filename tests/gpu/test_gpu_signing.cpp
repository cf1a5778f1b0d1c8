// GPU test: signed archives on the real driver (the paths tests/runtime/archives/test_signing.cpp walks on the fake).
// Under SDM_SIGNATURES_REQUIRE: the test archive signed here by a fresh key mounts, its unsigned
// original is refused with SDM_ERROR_UNTRUSTED, and scale runs from it with every payload checked
// against its signed digest; a PTX-only signed archive is linked by nvJitLink, cached with the
// cache's MAC, and served from the cache to the next runtime, each run checked element by element;
// libsdm's embedded archive, signed by its build's key, mounts with no key given and serves an SDM
// kernel. Exits 77 without a GPU.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <cuda.h>
#include <unistd.h>

#include "archive/archive.hpp"
#include "common/crypto.hpp"
#include "archive/file_map.hpp"
#include "gpu_driver.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"
#include "archive/signing.hpp"
#include "archive/writer.hpp"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::failures;

int main() {
    Cuda cuda;
    if (!cuda.open()) {
        std::printf("skipped: no CUDA driver, or cuInit failed (no device?)\n");
        return 77;
    }
    const auto retain = cuda.get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    const auto set_current = cuda.get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
    CUcontext primary = nullptr;
    if (retain(&primary, 0) != CUDA_SUCCESS || set_current(primary) != CUDA_SUCCESS) return 77;
    const std::string dir = "/tmp/sdm-gpu-signing-" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    const auto key = sdm::crypto::generate_key_pair();
    check(static_cast<bool>(key), "a key pair (libsodium)");
    if (failures) return 1;

    const std::string cache_dir = dir + "/cache";
    const auto runtime = [&](uint32_t flags, std::vector<uint8_t> keys) {
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = flags;
        p.cache_dir = cache_dir.c_str();
        p.log_level = SDM_LOG_WARN;
        p.signature_policy = SDM_SIGNATURES_REQUIRE;
        p.trusted_keys = keys.empty() ? nullptr : keys.data();
        p.trusted_key_count = static_cast<uint32_t>(keys.size() / 32);
        sdm_runtime* rt = nullptr;
        sdm_error* e = nullptr;
        check(sdm_runtime_create(&p, &rt, &e) == SDM_OK, std::string("create a runtime under require ") + sdm_error_message(e));
        sdm_error_destroy(e);
        return rt;
    };
    const std::vector<uint8_t> trusted(key->public_key.begin(), key->public_key.end());
    const auto scaled = [&](const sdm_kernel* k, const std::string& what) { sdm::gpu_test::check_scale(cuda, k, what); };
    const auto fetch = [&](sdm_runtime* rt, const char* name, sdm_kernel_info* info) -> sdm_kernel* {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const bool ok = sdm_kernel_get(rt, 0, name, nullptr, &k, &e) == SDM_OK;
        check(ok, std::string("fetch ") + name + " " + sdm_error_message(e));
        sdm_error_destroy(e);
        if (ok && info != nullptr) {
            info->struct_size = sizeof *info;
            sdm_kernel_info_get(k, info, nullptr);
        }
        return ok ? k : nullptr;
    };
    const auto write = [&](const std::string& path, const sdm::ByteVector& bytes) { check(static_cast<bool>(sdm::archive::write_file_atomic(path, bytes)), "write " + path); };

    // The test archive, signed here; its unsigned original refused.
    auto golden = sdm::archive::read_file(SDM_TEST_ARCHIVE);
    check(static_cast<bool>(golden), "read the test archive");
    if (failures) return 1;
    write(dir + "/signed.sdma", sdm::archive::sign_archive(*golden, "golden", key->secret_key).value());
    {
        sdm_runtime* rt = runtime(SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, trusted);
        sdm_error* e = nullptr;
        const sdm_status refused = sdm_archive_mount_file(rt, SDM_TEST_ARCHIVE, &e);
        check(refused == SDM_ERROR_UNTRUSTED, std::string("the unsigned test archive is refused: ") + sdm_error_message(e));
        sdm_error_destroy(e);
        check(sdm_archive_mount_file(rt, (dir + "/signed.sdma").c_str(), nullptr) == SDM_OK, "the signed copy mounts");
        sdm_kernel_info info{};
        if (const sdm_kernel* k = fetch(rt, "scale", &info)) scaled(k, "signed cubin archive (sm_" + std::to_string(info.loaded_sm) + ")");
        sdm_runtime_destroy(rt);
    }

    // PTX only, signed: nvJitLink links it, the cache keeps it with its MAC, the next runtime hits.
    sdm::archive::ArchiveWriter writer;
    auto ptx = sdm::archive::read_file(std::string(SDM_TEST_DATA) + "/kernels.compute_90.ptx");
    check(ptx && writer.add({"kernels", sdm::archive::Kind::ptx, 90, sdm::archive::Variant::base, *ptx}), "add the PTX");
    sdm::archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels.push_back({"scale", "kernels", {sdm::archive::ParamType::ptr, sdm::archive::ParamType::f32, sdm::archive::ParamType::i32}, {}, {}});
    check(static_cast<bool>(writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()})), "add the manifest");
    write(dir + "/ptx.sdma", sdm::archive::sign_archive(writer.finish().value(), "ptx", key->secret_key).value());
    for (int round = 0; round < 2; ++round) {
        sdm_runtime* rt = runtime(SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, trusted);
        check(sdm_archive_mount_file(rt, (dir + "/ptx.sdma").c_str(), nullptr) == SDM_OK, "the signed PTX archive mounts");
        sdm_kernel_info info{};
        if (const sdm_kernel* k = fetch(rt, "scale", &info)) {
            const uint32_t want = round == 0 ? 3 : 2;  // sdm_kernel_info.source: 3 nvJitLink, 2 the cache
            check(info.source == want, "round " + std::to_string(round) + ": source " + std::to_string(info.source) + ", want " + std::to_string(want));
            scaled(k, round == 0 ? "signed PTX, linked by nvJitLink" : "signed PTX, from the cache (MAC held)");
        }
        sdm_runtime_destroy(rt);
    }

    // The embedded archive: signed by libsdm's build key, trusted for it alone.
    {
        sdm_runtime* rt = runtime(0, {});
        uint32_t count = 0;
        check(sdm_archive_count(rt, &count, nullptr) == SDM_OK && count == 1, "the embedded archive mounts under require with no key given");
        fetch(rt, "sdm_gather_f32_i32", nullptr);
        sdm_runtime_destroy(rt);
    }
    std::filesystem::remove_all(dir);
    return failures ? 1 : 0;
}
