// Layered archives and archive versions, through the C ABI and the fake driver: the newest archive
// with an image for the device serves each kernel, older ones serve what newer ones cannot;
// $SDM_ARCHIVE_PATH layers, with broken or incompatible files skipped and logged; the host's
// kernel ABI major and a kernel's expected signature, refused with both sides named.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

const FakeDevice kRtx5090{"NVIDIA GeForce RTX 5090", 12, 0, 101376, 170, 100663296};

void write(const std::string& path, const sdm::ByteVector& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

sdm_runtime* create(const sdm_runtime_params& p, sdm_status expect = SDM_OK, std::string* message = nullptr) {
    sdm_runtime* r = nullptr;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_runtime_create(&p, &r, &e);
    if (message != nullptr) *message = sdm_error_message(e);
    sdm_error_destroy(e);
    REQUIRE(s == expect);
    return r;
}

sdm_runtime_params params(const std::string& cache, std::vector<std::string>* log = nullptr) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    p.cache_dir = cache.c_str();
    p.log_level = log != nullptr ? SDM_LOG_WARN : SDM_LOG_OFF;
    if (log != nullptr) {
        p.log_fn = [](void* user, sdm_log_level, const char* m, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(m); };
        p.log_user_data = log;
    }
    return p;
}

}  // namespace

TEST_CASE("the newest archive with an image for the device serves; older ones serve the rest", "[layers]") {
    FakeRuntime f({.devices = {kH200, kRtx5090}});
    mount(f.rt.get(), make_archive("kernels", {"sm_80", "sm_90"}), "old.sdma");
    mount(f.rt.get(), make_archive("kernels", {"sm_120"}, {"scale"}), "new.sdma");
    CHECK(std::string(info_of(f.rt.get(), 0, "scale").archive) == "old.sdma");  // new.sdma has nothing for the H200
    CHECK(std::string(info_of(f.rt.get(), 1, "scale").archive) == "new.sdma");
    CHECK(std::string(info_of(f.rt.get(), 0, "axpy").archive) == "old.sdma");  // listed by old.sdma only...
    std::string message;  // ...which has nothing for sm_120: axpy on the RTX 5090 fails naming it
    info_of(f.rt.get(), 1, "axpy", SDM_ERROR_NO_IMAGE, &message);
    CHECK_THAT(message, Catch::Contains("old.sdma") && Catch::Contains("sm_80, sm_90"));
}

TEST_CASE_METHOD(FakeRuntime, "no archive with an image: the newest one's reason, and how many were tried", "[layers]") {
    mount(rt.get(), make_archive("kernels", {"sm_80"}), "a.sdma");
    mount(rt.get(), make_archive("kernels", {"sm_120"}), "b.sdma");
    std::string message;
    info_of(rt.get(), 0, "scale", SDM_ERROR_NO_IMAGE, &message);
    CHECK_THAT(message, Catch::Contains("b.sdma") && Catch::Contains("2 archives tried"));
}

TEST_CASE_METHOD(FakeRuntime, "a newer mount serves new fetches; handles fetched before keep working", "[layers]") {
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "v1.sdma");
    sdm_kernel* before = nullptr;
    REQUIRE(sdm_kernel_get(rt.get(), 0, "scale", nullptr, &before, nullptr) == SDM_OK);
    mount(rt.get(), make_archive("kernels", {"sm_90a"}), "v2.sdma");
    CHECK(std::string(info_of(rt.get(), 0, "scale").archive) == "v2.sdma");
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_kernel_info_get(before, &info, nullptr) == SDM_OK);
    CHECK(std::string(info.archive) == "v1.sdma");
    void* function = nullptr;
    REQUIRE(sdm_kernel_function(before, &function, nullptr) == SDM_OK);
    CHECK(function != nullptr);
    CHECK(fake_calls("@modules") == 2);  // both stay loaded
}

TEST_CASE("SDM_ARCHIVE_PATH: layers in order; a missing, damaged or incompatible file is skipped and logged", "[layers][env]") {
    TempDir dir;
    fake({kH200});
    write(dir.path + "/old.sdma", make_archive("kernels", {"sm_90"}));
    write(dir.path + "/new.sdma", make_archive("kernels", {"sm_90a"}));
    auto damaged = make_archive("kernels", {"sm_90"});
    damaged[damaged.size() - 1] ^= std::byte{1};
    write(dir.path + "/damaged.sdma", damaged);
    write(dir.path + "/abi2.sdma", make_archive("kernels", {"sm_90"}, {"axpy", "scale"}, 2));
#ifdef _WIN32
    const std::string sep = ";", missing = "cannot open";  // (a path list's separator; the system's words vary: Wine's, Windows')
#else
    const std::string sep = ":", missing = "No such file";
#endif
    EnvGuard path("SDM_ARCHIVE_PATH", dir.path + "/old.sdma" + sep + dir.path + "/missing.sdma" + sep + dir.path + "/new.sdma" + sep + dir.path +
                                          "/damaged.sdma" + sep + dir.path + "/abi2.sdma");
    std::vector<std::string> log;
    auto p = params(dir.path, &log);
    p.kernel_abi_major = 1;
    RuntimePtr rt(create(p));
    uint32_t count = 0;
    REQUIRE(sdm_archive_count(rt.get(), &count, nullptr) == SDM_OK);
    CHECK(count == 2);
    REQUIRE(log.size() == 3);
    CHECK_THAT(log[0], Catch::Contains("missing.sdma") && Catch::Contains(missing));
    CHECK_THAT(log[1], Catch::Contains("damaged.sdma"));
    CHECK_THAT(log[2], Catch::Contains("abi2.sdma") && Catch::Contains("kernel ABI 2.0") && Catch::Contains("built for kernel ABI 1.x"));
    CHECK(std::string(info_of(rt.get(), 0, "scale").archive) == dir.path + "/new.sdma");
}

TEST_CASE("the host's kernel ABI major: an archive of another major is refused naming both", "[versions]") {
    TempDir dir;
    fake({kH200});
    const auto abi2 = make_archive("kernels", {"sm_90"}, {"scale"}, 2);
    auto p = params(dir.path);
    p.kernel_abi_major = 1;
    RuntimePtr rt(create(p));
    sdm_error* e = nullptr;
    REQUIRE(sdm_archive_mount_memory(rt.get(), abi2.data(), abi2.size(), "abi2.sdma", &e) == SDM_ERROR_MISMATCH);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("abi2.sdma") && Catch::Contains("kernel ABI 2.0") && Catch::Contains("kernel ABI 1.x"));
    sdm_error_destroy(e);
    REQUIRE(sdm_archive_mount_memory(rt.get(), make_archive("kernels", {"sm_90"}).data(), make_archive("kernels", {"sm_90"}).size(), "abi1.sdma",
                                     nullptr) == SDM_OK);
    // A host that states no major (0, or a 1.0-sized params struct) takes any.
    auto any = params(dir.path);
    any.struct_size = 80;  // the ABI 1.0 size: kernel_abi_major is not read
    any.kernel_abi_major = 1;
    RuntimePtr old(create(any));
    REQUIRE(sdm_archive_mount_memory(old.get(), abi2.data(), abi2.size(), "abi2.sdma", nullptr) == SDM_OK);
    auto bad = params(dir.path);
    bad.kernel_abi_major = 70000;
    std::string message;
    create(bad, SDM_ERROR_INVALID_ARGUMENT, &message);
    CHECK_THAT(message, Catch::Contains("kernel_abi_major 70000"));
}

TEST_CASE_METHOD(FakeRuntime, "a kernel's expected signature: checked at sdm_kernel_get_checked, both named on a mismatch", "[versions]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = nullptr;
    CHECK(sdm_kernel_get_checked(rt.get(), 0, "scale", "ptr, f32, i32", nullptr, &k, nullptr) == SDM_OK);
    CHECK(k != nullptr);
    CHECK(sdm_kernel_get_checked(rt.get(), 0, "scale", nullptr, nullptr, &k, nullptr) == SDM_OK);
    sdm_error* e = nullptr;
    REQUIRE(sdm_kernel_get_checked(rt.get(), 0, "scale", "ptr,ptr,i32", nullptr, &k, &e) == SDM_ERROR_MISMATCH);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("parameter 1 is f32 (4 bytes at offset 8) in the archive's signature (ptr,f32,i32)") && Catch::Contains("the host passes ptr (8 bytes at offset 8) in (ptr,ptr,i32)"));
    sdm_error_destroy(e);
    REQUIRE(sdm_kernel_get_checked(rt.get(), 0, "scale", "ptr,float", nullptr, &k, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("unknown type 'float'"));
    sdm_error_destroy(e);
    // Through the function table too.
    uint32_t minor = 1;
    const sdm_api* api = nullptr;
    REQUIRE(sdm_get_api(1, &minor, &api) == SDM_OK);
    CHECK(minor == SDM_ABI_VERSION_MINOR);
    REQUIRE(api->struct_size >= offsetof(sdm_api, kernel_get_checked) + sizeof(void*));
    CHECK(api->kernel_get_checked(rt.get(), 0, "axpy", "ptr,ptr,f32,i32", nullptr, &k, nullptr) == SDM_OK);
}

TEST_CASE("the embedded archive (the SDM kernels) mounts first, under every other layer", "[layers][embedded]") {
    TempDir dir;
    fake({kH200});
    std::vector<std::string> log;
    auto p = params(dir.path);
    p.flags = 0;  // the embedded archive too
    p.log_level = SDM_LOG_DEBUG;
    p.log_fn = [](void* user, sdm_log_level, const char* m, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(m); };
    p.log_user_data = &log;
    RuntimePtr rt(create(p));
    uint32_t count = 0;
    REQUIRE(sdm_archive_count(rt.get(), &count, nullptr) == SDM_OK);
    if (!SDM_TEST_EMBEDDED) {  // built without nvcc: none, and the log says why
        CHECK(count == 0);
        bool said = false;
        for (const auto& line : log) said = said || line.find("built without an embedded archive") != std::string::npos;
        CHECK(said);
        return;
    }
    REQUIRE(count == 1);
    sdm_archive_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_archive_info_get(rt.get(), 0, &info, nullptr) == SDM_OK);
    CHECK(info.embedded == 1);
    CHECK(std::string(info.label) == "embedded kernels.sdma");
    CHECK(info.kernel_count == 13);
    CHECK(std::string(info.content_version) == "sdm-kernels.2");
    // The very archive this build made: a rebuilt kernels.sdma re-embeds (the .incbin object
    // depends on it).
    std::error_code size_error;
    CHECK(info.size_bytes == std::filesystem::file_size(SDM_TEST_KERNELS_ARCHIVE, size_error));
    const auto k = info_of(rt.get(), 0, "sdm_gather_f32_i32");
    CHECK(std::string(k.archive) == "embedded kernels.sdma");
    CHECK(k.image_sm == 90);
    CHECK(std::string(k.signature) == "ptr,i64,ptr,ptr,ptr,i32,i32,i32,ptr");
    // A mounted file comes after it, and wins for the kernels it lists.
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    REQUIRE(sdm_archive_count(rt.get(), &count, nullptr) == SDM_OK);
    CHECK(count == 2);
    CHECK(std::string(info_of(rt.get(), 0, "sdm_scatter_delta_atomic_bf16_i64").archive) == "embedded kernels.sdma");
    // Without it when the host says so.
    RuntimePtr none(create(params(dir.path)));
    REQUIRE(sdm_archive_count(none.get(), &count, nullptr) == SDM_OK);
    CHECK(count == 0);
}
