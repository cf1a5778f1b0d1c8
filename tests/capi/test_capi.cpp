// The C ABI end to end through libsdm and the fake driver (tests/fake_cuda): versions, the
// function table, statuses, struct sizes, errors, logging, archives, the no-driver / old-driver /
// failing-driver paths, and every row of the hardware matrix. The same paths run on the H200 in
// tests/gpu/run.sh.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_config.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_testing.h"

using namespace sdm::test;

namespace {

struct ErrorDeleter {
    void operator()(sdm_error* e) const { sdm_error_destroy(e); }
};
using ErrorPtr = std::unique_ptr<sdm_error, ErrorDeleter>;
struct RuntimeDeleter {
    void operator()(sdm_runtime* r) const { sdm_runtime_destroy(r); }
};
using RuntimePtr = std::unique_ptr<sdm_runtime, RuntimeDeleter>;

RuntimePtr make_runtime(const char* driver = SDM_FAKE_CUDA_PATH, sdm_log_fn log = nullptr, void* user = nullptr,
                        sdm_log_level level = SDM_LOG_DEFAULT) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = driver;
    p.log_fn = log;
    p.log_user_data = user;
    p.log_level = level;
    sdm_runtime* r = nullptr;
    sdm_error* e = nullptr;
    REQUIRE(sdm_runtime_create(&p, &r, &e) == SDM_OK);
    REQUIRE(e == nullptr);
    return RuntimePtr(r);
}

sdm_device_info info_of(sdm_runtime* r, int32_t ordinal) {
    sdm_device_info info{};
    info.struct_size = sizeof info;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_device_info_get(r, ordinal, &info, &e);
    ErrorPtr guard(e);
    if (s != SDM_OK) FAIL(sdm_status_string(s) << ": " << sdm_error_message(e));
    return info;
}

// The hardware matrix: modern (4), a100, rtx (3), unsupported (3: too old, and an 8.0 without the A100's shared memory).
const std::vector<FakeDevice> kMatrix = {{"NVIDIA H100 80GB HBM3", 9, 0, 232448, 132, 52428800},
                                         kH200,
                                         {"NVIDIA B200", 10, 0, 232448, 148, 132120576},
                                         {"NVIDIA GB300", 10, 3, 232448, 152, 135528448},
                                         kA100,
                                         {"NVIDIA GeForce RTX 3090", 8, 6, 101376, 82, 6291456},
                                         kRtx4090,
                                         {"NVIDIA GeForce RTX 5090", 12, 0, 101376, 170, 100663296},
                                         {"Tesla V100-SXM2-16GB", 7, 0, 98304, 80, 6291456},
                                         {"Tesla T4", 7, 5, 65536, 40, 4194304},
                                         {"NVIDIA A30", 8, 0, 101376, 56, 25165824}};

}  // namespace

TEST_CASE("versions and the function table", "[capi]") {
    CHECK(sdm_abi_version() == ((uint32_t{SDM_ABI_VERSION_MAJOR} << 16) | SDM_ABI_VERSION_MINOR));
    CHECK(std::strlen(sdm_version_string()) > 0);
    uint32_t minor = 0;
    const sdm_api* api = nullptr;
    REQUIRE(sdm_get_api(1, &minor, &api) == SDM_OK);
    CHECK(minor == SDM_ABI_VERSION_MINOR);
    REQUIRE(api != nullptr);
    CHECK(api->struct_size == sizeof(sdm_api));
    CHECK(api->runtime_create == &sdm_runtime_create);
    CHECK(api->device_class_name == &sdm_device_class_name);
    CHECK(api->archive_info_get == &sdm_archive_info_get);
    const sdm_api* untouched = nullptr;
    CHECK(sdm_get_api(2, &minor, &untouched) == SDM_ERROR_UNSUPPORTED);
    CHECK(untouched == nullptr);
    CHECK(sdm_get_api(1, nullptr, &api) == SDM_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("every status has a name", "[capi]") {
    for (sdm_status s = SDM_OK; s <= SDM_ERROR_INTERNAL; ++s) {
        const std::string name = sdm_status_string(s);
        CHECK(name.rfind("SDM_", 0) == 0);
        CHECK(name != "SDM_ERROR_UNKNOWN");
    }
    CHECK(std::string(sdm_status_string(4242)) == "SDM_ERROR_UNKNOWN");
    CHECK(std::string(sdm_status_string(SDM_ERROR_NO_DRIVER)) == "SDM_ERROR_NO_DRIVER");
    CHECK(std::string(sdm_device_class_name(SDM_DEVICE_CLASS_A100)) == "a100");
    CHECK(std::string(sdm_device_class_name(77)) == "unsupported");
    // NULL error objects read as empty.
    CHECK(sdm_error_code(nullptr) == SDM_OK);
    CHECK(std::string(sdm_error_message(nullptr)).empty());
    sdm_error_destroy(nullptr);
    sdm_runtime_destroy(nullptr);
}

TEST_CASE("struct sizes below ABI 1.0 are refused, out-parameters untouched", "[capi]") {
    sdm_runtime_params p{};
    p.struct_size = 8;
    sdm_runtime* r = reinterpret_cast<sdm_runtime*>(0x1);
    sdm_error* e = nullptr;
    CHECK(sdm_runtime_create(&p, &r, &e) == SDM_ERROR_INVALID_ARGUMENT);
    ErrorPtr guard(e);
    CHECK(r == reinterpret_cast<sdm_runtime*>(0x1));
    CHECK_THAT(sdm_error_message(e), Catch::Contains("sdm_runtime_params.struct_size is 8") && Catch::Contains("sizeof(sdm_runtime_params)"));
    CHECK(sdm_runtime_create(nullptr, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);

    fake({kH200});
    RuntimePtr rt = make_runtime();
    sdm_device_info info{};
    info.struct_size = 4;
    info.ordinal = 77;
    CHECK(sdm_device_info_get(rt.get(), 0, &info, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(info.ordinal == 77);
    sdm_error* last = nullptr;
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    ErrorPtr last_guard(last);
    CHECK_THAT(sdm_error_message(last), Catch::Contains("sdm_device_info.struct_size is 4"));
    // A larger struct (a newer host) is fine; sdm writes only its own fields.
    struct Bigger {
        sdm_device_info info;
        uint32_t extra;
    } bigger{};
    bigger.info.struct_size = sizeof bigger;
    bigger.extra = 0xabcdef;
    CHECK(sdm_device_info_get(rt.get(), 0, &bigger.info, nullptr) == SDM_OK);
    CHECK(bigger.extra == 0xabcdef);
}

TEST_CASE("no driver: a status naming the library, and archives still work", "[capi][driver]") {
    RuntimePtr rt = make_runtime("/nonexistent/libcuda.so.1");
    int32_t version = -1;
    sdm_error* e = nullptr;
    CHECK(sdm_driver_version(rt.get(), &version, &e) == SDM_ERROR_NO_DRIVER);
    ErrorPtr guard(e);
    CHECK(version == -1);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("/nonexistent/libcuda.so.1") && Catch::Contains("SDM_CUDA_DRIVER"));
    int32_t count = -1;
    CHECK(sdm_device_count(rt.get(), &count, nullptr) == SDM_ERROR_NO_DRIVER);
    CHECK(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    uint32_t archives = 0;
    REQUIRE(sdm_archive_count(rt.get(), &archives, nullptr) == SDM_OK);
    CHECK(archives == 1);
    sdm_archive_info a{};
    a.struct_size = sizeof a;
    REQUIRE(sdm_archive_info_get(rt.get(), 0, &a, nullptr) == SDM_OK);
    CHECK(a.entry_count == 11);
    CHECK(a.kernel_count == 2);
    CHECK(a.kernel_abi_major == 1);
    CHECK(a.kernel_abi_minor == 2);
    CHECK(std::string(a.content_version) == "tests.1");
    CHECK(std::string(a.label) == SDM_TEST_ARCHIVE);
    CHECK(sdm_archive_info_get(rt.get(), 1, &a, nullptr) == SDM_ERROR_NOT_FOUND);
}

TEST_CASE("archives that fail to mount say why and change nothing", "[capi][archive]") {
    RuntimePtr rt = make_runtime("/nonexistent/libcuda.so.1");
    sdm_error* e = nullptr;
    CHECK(sdm_archive_mount_file(rt.get(), "/nonexistent/kernels.sdma", &e) == SDM_ERROR_IO);
    ErrorPtr io(e);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("/nonexistent/kernels.sdma"));
    const char garbage[300] = "not an archive";
    CHECK(sdm_archive_mount_memory(rt.get(), garbage, sizeof garbage, "garbage", &e) == SDM_ERROR_ARCHIVE_CORRUPT);
    ErrorPtr corrupt(e);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("archive garbage"));
    CHECK(sdm_archive_mount_memory(rt.get(), nullptr, 4, "x", nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    uint32_t archives = 7;
    REQUIRE(sdm_archive_count(rt.get(), &archives, nullptr) == SDM_OK);
    CHECK(archives == 0);
}

TEST_CASE("old drivers, missing entry points and a failing cuInit are statuses", "[capi][driver]") {
    SECTION("a 11.8 driver") {
        fake_configure({.devices = {kH200}, .driver_version = 11080});
        RuntimePtr rt = make_runtime();
        sdm_error* e = nullptr;
        int32_t count = 0;
        CHECK(sdm_device_count(rt.get(), &count, &e) == SDM_ERROR_DRIVER_TOO_OLD);
        ErrorPtr guard(e);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("version 11.8") && Catch::Contains("needs 12.0"));
    }
    SECTION("an entry point the driver lacks") {
        fake_configure({.devices = {kH200}, .missing = {"cuDeviceGetName"}});
        RuntimePtr rt = make_runtime();
        sdm_error* e = nullptr;
        sdm_device_info info{};
        info.struct_size = sizeof info;
        CHECK(sdm_device_info_get(rt.get(), 0, &info, &e) == SDM_ERROR_DRIVER_TOO_OLD);
        ErrorPtr guard(e);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("no entry point cuDeviceGetName"));
        int32_t count = 0;
        CHECK(sdm_device_count(rt.get(), &count, nullptr) == SDM_OK);  // the rest still works
        CHECK(count == 1);
    }
    SECTION("cuInit failing") {
        fake({kH200});
        fake_fail("cuInit", static_cast<CUresult>(999));
        RuntimePtr rt = make_runtime();
        sdm_error* e = nullptr;
        int32_t version = 0;
        CHECK(sdm_driver_version(rt.get(), &version, &e) == SDM_ERROR_DRIVER);
        ErrorPtr guard(e);
        CHECK(sdm_error_native(e) == 999);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("cuInit failed with CUDA_ERROR_UNKNOWN"));
    }
    SECTION("no devices at all") {
        fake({});
        RuntimePtr rt = make_runtime();
        int32_t count = -1;
        REQUIRE(sdm_device_count(rt.get(), &count, nullptr) == SDM_OK);
        CHECK(count == 0);
        sdm_error* e = nullptr;
        sdm_device_class c = 0;
        CHECK(sdm_device_class_get(rt.get(), 0, &c, &e) == SDM_ERROR_NO_DEVICE);
        ErrorPtr guard(e);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("no CUDA device 0"));
    }
}

TEST_CASE("the hardware matrix through the driver", "[capi][device]") {
    fake(kMatrix);
    RuntimePtr rt = make_runtime();
    int32_t count = 0;
    REQUIRE(sdm_device_count(rt.get(), &count, nullptr) == SDM_OK);
    REQUIRE(count == 11);
    const sdm_device_class expected[] = {SDM_DEVICE_CLASS_MODERN, SDM_DEVICE_CLASS_MODERN, SDM_DEVICE_CLASS_MODERN, SDM_DEVICE_CLASS_MODERN,
                                         SDM_DEVICE_CLASS_A100,   SDM_DEVICE_CLASS_RTX,    SDM_DEVICE_CLASS_RTX,    SDM_DEVICE_CLASS_RTX,
                                         SDM_DEVICE_CLASS_UNSUPPORTED, SDM_DEVICE_CLASS_UNSUPPORTED, SDM_DEVICE_CLASS_UNSUPPORTED};
    for (int32_t i = 0; i < count; ++i) {
        const sdm_device_info info = info_of(rt.get(), i);
        INFO(info.name);
        CHECK(info.ordinal == i);
        CHECK(info.device_class == expected[i]);
        sdm_device_class c = -1;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_device_class_get(rt.get(), i, &c, &e);
        ErrorPtr guard(e);
        if (expected[i] == SDM_DEVICE_CLASS_UNSUPPORTED) {
            CHECK(s == SDM_ERROR_UNSUPPORTED_DEVICE);
            CHECK(c == -1);
            // The whole message through the C ABI, the RTX clause included.
            CHECK(std::string(sdm_error_message(e)) ==
                  "sparse_delta_memory supports NVIDIA H100 / B200 / GB300 (compute capability 9.0 / 10.0 / 10.3), A100 (8.0) and RTX 30 / 40 / 50 "
                  "(8.6 / 8.9 / 12.0); device " + std::to_string(i) + " (" + info.name + ") has compute capability " +
                      std::to_string(info.capability_major) + "." + std::to_string(info.capability_minor) + " with " +
                      std::to_string(info.smem_optin_bytes) + " bytes of opt-in shared memory per block");
            CHECK(info.smem_cap_bytes == 0);
            CHECK(info.pdl_allowed == 0);
        } else {
            CHECK(s == SDM_OK);
            CHECK(c == expected[i]);
        }
    }
    const sdm_device_info h200 = info_of(rt.get(), 1);
    CHECK(std::string(h200.name) == "NVIDIA H200");
    CHECK(h200.capability_major == 9);
    CHECK(h200.sm_count == 132);
    CHECK(h200.l2_bytes == 62914560);
    CHECK(h200.smem_cap_bytes == 232448);
    CHECK(h200.smem_per_sm_bytes == 233472);
    CHECK(h200.pdl_allowed == 1);
    CHECK(h200.clusters_allowed == 1);
    const sdm_device_info a100 = info_of(rt.get(), 4);
    CHECK(a100.smem_cap_bytes == 166912);
    CHECK(a100.smem_per_sm_bytes == 167936);
    CHECK(a100.pdl_allowed == 0);
    const sdm_device_info rtx5090 = info_of(rt.get(), 7);
    CHECK(rtx5090.capability_major == 12);
    CHECK(rtx5090.smem_cap_bytes == 101376);
    CHECK(rtx5090.clusters_allowed == 0);
}

TEST_CASE("device reads are memoized; errors are not", "[capi][device]") {
    fake({kH200});
    fake_fail("cuDeviceGetAttribute", CUDA_ERROR_OUT_OF_MEMORY, 3);
    RuntimePtr rt = make_runtime();
    sdm_device_info info{};
    info.struct_size = sizeof info;
    sdm_error* e = nullptr;
    CHECK(sdm_device_info_get(rt.get(), 0, &info, &e) == SDM_ERROR_DRIVER);  // the third attribute read fails
    ErrorPtr guard(e);
    CHECK(sdm_error_native(e) == 2);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("reading CUDA device 0: cuDeviceGetAttribute failed"));
    info = info_of(rt.get(), 0);  // not memoized: read again, and now it works
    CHECK(info.device_class == SDM_DEVICE_CLASS_MODERN);
    const int64_t reads = fake_calls("cuDeviceGetAttribute");
    for (int i = 0; i < 100; ++i) (void)info_of(rt.get(), 0);
    sdm_device_class c = 0;
    CHECK(sdm_device_class_get(rt.get(), 0, &c, nullptr) == SDM_OK);
    CHECK(fake_calls("cuDeviceGetAttribute") == reads);
}

TEST_CASE("forced rows reproduce any row on any device, and must nest", "[capi][device]") {
    fake({kH200});
    RuntimePtr rt = make_runtime();
    CHECK(info_of(rt.get(), 0).device_class == SDM_DEVICE_CLASS_MODERN);
    uint64_t a100 = 0, rtx = 0;
    REQUIRE(sdm_testing_force_row_push(8, 0, 166912, 108, 41943040, &a100, nullptr) == SDM_OK);
    sdm_device_info info = info_of(rt.get(), 0);
    CHECK(info.device_class == SDM_DEVICE_CLASS_A100);
    CHECK(info.sm_count == 108);
    CHECK(info.l2_bytes == 41943040);
    CHECK(std::string(info.name) == "NVIDIA H200");  // the name stays the device's
    REQUIRE(sdm_testing_force_row_push(8, 6, 101376, 82, 0, &rtx, nullptr) == SDM_OK);
    info = info_of(rt.get(), 0);
    CHECK(info.device_class == SDM_DEVICE_CLASS_RTX);
    CHECK(info.l2_bytes == 62914560);  // no L2 given: the device's own
    REQUIRE(sdm_testing_force_row_push(7, 0, 98304, 80, 0, &rtx, nullptr) == SDM_OK);
    sdm_device_class c = 0;
    CHECK(sdm_device_class_get(rt.get(), 0, &c, nullptr) == SDM_ERROR_UNSUPPORTED_DEVICE);
    CHECK(sdm_testing_force_row_pop(rtx, nullptr) == SDM_OK);
    // Out of order: pop the outer row while the inner one is active.
    sdm_error* e = nullptr;
    CHECK(sdm_testing_force_row_pop(a100, &e) == SDM_ERROR_INVALID_ARGUMENT);
    ErrorPtr guard(e);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("must nest"));
    // What remains is the rtx row pushed second; popping it restores the device.
    uint64_t inner = 0;
    REQUIRE(sdm_testing_force_row_push(9, 0, 232448, 132, 0, &inner, nullptr) == SDM_OK);
    CHECK(sdm_testing_force_row_pop(inner, nullptr) == SDM_OK);
    CHECK(sdm_testing_force_row_pop(inner, nullptr) == SDM_ERROR_INVALID_ARGUMENT);  // twice
}

TEST_CASE("the log callback receives the runtime's messages", "[capi][log]") {
    std::vector<std::pair<sdm_log_level, std::string>> seen;
    const auto sink = [](void* user, sdm_log_level level, const char* message, size_t length) {
        REQUIRE(std::strlen(message) == length);
        static_cast<std::vector<std::pair<sdm_log_level, std::string>>*>(user)->emplace_back(level, std::string(message, length));
    };
    fake({kH200});
    RuntimePtr rt = make_runtime(SDM_FAKE_CUDA_PATH, sink, &seen, SDM_LOG_INFO);
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    int32_t version = 0;
    REQUIRE(sdm_driver_version(rt.get(), &version, nullptr) == SDM_OK);
    CHECK(version == 13000);
    bool mounted = false, loaded = false;
    for (const auto& [level, text] : seen) {
        CHECK(level == SDM_LOG_INFO);
        mounted |= text.find("mounted archive " SDM_TEST_ARCHIVE) != std::string::npos;
        loaded |= text.find("loaded CUDA driver") != std::string::npos;
    }
    CHECK(mounted);
    CHECK(loaded);
    // Below the level: nothing.
    seen.clear();
    RuntimePtr quiet = make_runtime(SDM_FAKE_CUDA_PATH, sink, &seen, SDM_LOG_ERROR);
    REQUIRE(sdm_archive_mount_file(quiet.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    CHECK(seen.empty());
    RuntimePtr off = make_runtime(SDM_FAKE_CUDA_PATH, sink, &seen, SDM_LOG_OFF);
    CHECK(sdm_archive_mount_file(off.get(), "/nonexistent.sdma", nullptr) == SDM_ERROR_IO);
    CHECK(seen.empty());
    // Unknown extensions on the chain are skipped.
    sdm_chain extension{sizeof(sdm_chain), 4242, nullptr};
    sdm_runtime_params chained{};
    chained.struct_size = sizeof chained;
    chained.next = &extension;
    sdm_runtime* r2 = nullptr;
    REQUIRE(sdm_runtime_create(&chained, &r2, nullptr) == SDM_OK);
    sdm_runtime_destroy(r2);
    sdm_runtime_params bad{};
    bad.struct_size = sizeof bad;
    bad.log_level = 9;
    sdm_runtime* r = nullptr;
    CHECK(sdm_runtime_create(&bad, &r, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
}
