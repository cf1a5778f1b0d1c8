// Kernel attributes and settings through the C ABI and the fake driver (ABI 1.4,
// runtime/kernel/kernel_attributes.cpp): every attribute as the fake reports it, a struct too small
// refused, the dynamic shared memory limit and the carveout set, refused past their limits, and
// given again to the kernel fetched after a reload; occupancy as the driver answers it; and none of
// it hands the CUfunction out (a reload's retirement still waits only for sdm's streams).
// tests/gpu/test_gpu_attributes.cpp compares the same with a real driver.
#include <catch2/catch.hpp>

#include <string>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

sdm_kernel_attributes attributes_of(const sdm_kernel* k) {
    sdm_kernel_attributes a{};
    a.struct_size = sizeof a;
    sdm_error* e = nullptr;
    if (sdm_kernel_attributes_get(k, &a, &e) != SDM_OK) FAIL(sdm_error_message(e));
    return a;
}

// sdm_kernel_set with the status expected; the message.
std::string set(const sdm_kernel* k, sdm_kernel_setting setting, int32_t value, sdm_status expect = SDM_OK) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_kernel_set(k, setting, value, &e);
    std::string message = sdm_error_message(e);
    sdm_error_destroy(e);
    if (s != expect) FAIL(sdm_status_string(s) << ": " << message);
    return message;
}

}  // namespace

TEST_CASE("every attribute is what the driver reports, in its own field; cluster fields only from 9.0", "[attributes]") {
    FakeRuntime f;
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale_by_table");
    const sdm_kernel_attributes a = attributes_of(k);
    CHECK(a.struct_size == sizeof a);
    CHECK(a.flags == SDM_KERNEL_ATTRIBUTES_CLUSTER);
    CHECK(a.max_threads_per_block == 1024);  // the fake's fixed answers (fake_cuda.cpp), each distinct
    CHECK(a.shared_size_bytes == 0);
    CHECK(a.const_size_bytes == 136);
    CHECK(a.local_size_bytes == 24);
    CHECK(a.num_regs == 32);
    CHECK(a.ptx_version == 90);
    CHECK(a.binary_version == 90);
    CHECK(a.cache_mode_ca == 1);
    CHECK(a.max_dynamic_shared_size_bytes == 49152);
    CHECK(a.preferred_shared_memory_carveout == -1);
    CHECK(a.cluster_size_must_be_set == 0);
    CHECK(a.required_cluster_width == 2);
    CHECK(a.required_cluster_height == 3);
    CHECK(a.required_cluster_depth == 4);
    CHECK(a.non_portable_cluster_size_allowed == 5);
    CHECK(a.cluster_scheduling_policy_preference == 6);
}

TEST_CASE("an A100 has no clusters: the cluster fields stay 0 and the flag says they were not read", "[attributes]") {
    FakeRuntime old({.devices = {kA100}});
    mount(old.rt.get(), make_archive("kernels", {"sm_80"}), "a100.sdma");
    const sdm_kernel_attributes b = attributes_of(kernel_of(old.rt.get(), "scale"));
    CHECK(b.flags == 0);
    CHECK(b.binary_version == 80);
    CHECK(b.required_cluster_depth == 0);
    CHECK(b.num_regs == 32);
}

TEST_CASE("a struct_size below the 1.4 size is refused and nothing is written; NULLs are refused", "[attributes][abi]") {
    FakeRuntime f;
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale_by_table");
    sdm_kernel_attributes a{};
    a.struct_size = 68;
    a.num_regs = -7;
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_attributes_get(k, &a, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("sdm_kernel_attributes.struct_size is 68, below the 72 bytes of ABI 1.4"));
    sdm_error_destroy(e);
    CHECK(a.num_regs == -7);
    CHECK(sdm_kernel_attributes_get(k, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_kernel_attributes_get(nullptr, &a, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    int32_t blocks = -1;
    CHECK(sdm_kernel_max_active_blocks(k, 128, 0, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_kernel_max_active_blocks(k, 0, 0, &blocks, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_kernel_max_active_blocks(k, 1025, 0, &blocks, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(blocks == -1);
    CHECK(sdm_kernel_max_potential_block_size(k, 0, 0, nullptr, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_kernel_set(nullptr, SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 0, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("settings reach the driver, are refused past the device's limits naming both, and read back", "[attributes][settings]") {
    FakeRuntime f;
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale_by_table");
    const int64_t sets = fake_calls("cuFuncSetAttribute");
    set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 100000);
    set(k, SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 50);
    CHECK(fake_calls("cuFuncSetAttribute") == sets + 2);
    sdm_kernel_attributes a = attributes_of(k);
    CHECK(a.max_dynamic_shared_size_bytes == 100000);
    CHECK(a.preferred_shared_memory_carveout == 50);
    // Past the limits: refused before the driver, nothing changed.
    CHECK_THAT(set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 232449, SDM_ERROR_INVALID_ARGUMENT),
               Catch::Contains("a dynamic shared memory limit of 232449 B is outside 0 .. 232448 B, what device 0 (NVIDIA H200) allows it: its 232448 B "
                               "of opt-in shared memory per block less the kernel's 0 B of static shared memory"));
    CHECK_THAT(set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, -1, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("-1 B is outside 0 .. 232448 B"));
    CHECK_THAT(set(k, SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 101, SDM_ERROR_INVALID_ARGUMENT),
               Catch::Contains("a shared memory carveout of 101 is outside -1 (no preference) .. 100"));
    CHECK_THAT(set(k, 7, 1, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("setting 7 is not one sdm_kernel_set knows"));
    CHECK(fake_calls("cuFuncSetAttribute") == sets + 2);
    a = attributes_of(k);
    CHECK(a.max_dynamic_shared_size_bytes == 100000);
    CHECK(a.preferred_shared_memory_carveout == 50);
    // The whole opt-in is allowed; a launch needing more than is set raises it, as before.
    set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 232448);
    set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 1024);
    CHECK(attributes_of(k).max_dynamic_shared_size_bytes == 1024);
    int32_t blocks = 0;
    REQUIRE(sdm_kernel_max_active_blocks(k, 256, 4096, &blocks, nullptr) == SDM_OK);
    CHECK(attributes_of(k).max_dynamic_shared_size_bytes == 4096);  // raised as sdm_launch would
}

TEST_CASE("settings are recorded per kernel and device: the kernel fetched after a reload gets them, other kernels do not", "[attributes][settings][reload]") {
    FakeRuntime f;
    const std::string path = f.dir.path + "/launch.sdma";
    drop(path, launch_archive());
    REQUIRE(sdm_archive_mount_file(f.rt.get(), path.c_str(), nullptr) == SDM_OK);
    sdm_kernel* old = kernel_of(f.rt.get(), "scale_by_table");
    set(old, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 65536);
    set(old, SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 25);
    drop(path, launch_archive("2"));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_reload(f.rt.get(), &reloaded, nullptr) == SDM_OK);
    REQUIRE(reloaded == 1);
    const int64_t sets = fake_calls("cuFuncSetAttribute");
    sdm_kernel* fresh = kernel_of(f.rt.get(), "scale_by_table");
    REQUIRE(fresh != old);
    CHECK(fake_calls("cuFuncSetAttribute") == sets + 2);  // both recorded settings, at the fetch
    const sdm_kernel_attributes a = attributes_of(fresh);
    CHECK(a.max_dynamic_shared_size_bytes == 65536);
    CHECK(a.preferred_shared_memory_carveout == 25);
    // Another kernel of the module has none of them.
    const sdm_kernel_attributes other = attributes_of(kernel_of(f.rt.get(), "grid_sum"));
    CHECK(other.max_dynamic_shared_size_bytes == 49152);
    CHECK(other.preferred_shared_memory_carveout == -1);
    // The handle fetched again serves from the registry without setting anything again.
    CHECK(kernel_of(f.rt.get(), "scale_by_table") == fresh);
    CHECK(fake_calls("cuFuncSetAttribute") == sets + 2);
    // None of this handed the CUfunction out: retiring the old module waits for no context.
    REQUIRE(sdm_kernel_release(f.rt.get(), old, nullptr) == SDM_OK);
    CHECK(fake_calls("cuCtxSynchronize") == 0);
}

TEST_CASE("a recorded setting the driver refuses at the fetch after a reload fails that fetch, naming the setting", "[attributes][settings][reload]") {
    FakeRuntime f;
    // The fake reads its failures at cuInit (the runtime's first driver call, at the first fetch):
    // the second cuFuncSetAttribute since then, the fetch's after the reload, fails.
    fake_fail("cuFuncSetAttribute", CUDA_ERROR_INVALID_VALUE, 2);
    const std::string path = f.dir.path + "/launch.sdma";
    drop(path, launch_archive());
    REQUIRE(sdm_archive_mount_file(f.rt.get(), path.c_str(), nullptr) == SDM_OK);
    sdm_kernel* old = kernel_of(f.rt.get(), "scale_by_table");
    set(old, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 65536);
    drop(path, launch_archive("2"));
    REQUIRE(sdm_runtime_reload(f.rt.get(), nullptr, nullptr) == SDM_OK);
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_get(f.rt.get(), 0, "scale_by_table", nullptr, &k, &e) == SDM_ERROR_DRIVER);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("the dynamic shared memory limit recorded for kernel scale_by_table (sdm_kernel_set) cannot be "
                                                     "given to the kernel just loaded from archive"));
    sdm_error_destroy(e);
    const sdm_kernel_attributes a = attributes_of(kernel_of(f.rt.get(), "scale_by_table"));  // the next fetch loads it again
    CHECK(a.max_dynamic_shared_size_bytes == 65536);
}

TEST_CASE("settings are per device: the kernel of the name on another device has none, and its own limit", "[attributes][settings]") {
    FakeRuntime f({.devices = {kH200, kA100}});
    mount(f.rt.get(), make_archive("kernels", {"sm_90", "sm_80"}), "kernels.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale", 0);
    set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 200000);  // an H200 takes it; recorded for device 0 only
    sdm_kernel* on_a100 = kernel_of(f.rt.get(), "scale", 1);
    CHECK(attributes_of(on_a100).max_dynamic_shared_size_bytes == 49152);
    CHECK_THAT(set(on_a100, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 200000, SDM_ERROR_INVALID_ARGUMENT),
               Catch::Contains("outside 0 .. 166912 B, what device 1 (NVIDIA A100-SXM4-80GB) allows it"));
}

TEST_CASE("occupancy: blocks per SM and the suggested block size are the driver's", "[attributes][occupancy]") {
    FakeRuntime f;
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale_by_table");
    int32_t blocks = -1;
    REQUIRE(sdm_kernel_max_active_blocks(k, 256, 0, &blocks, nullptr) == SDM_OK);
    CHECK(blocks == 8);  // the fake's model: 2048 threads per SM
    REQUIRE(sdm_kernel_max_active_blocks(k, 1024, 100000, &blocks, nullptr) == SDM_OK);
    CHECK(blocks == 2);  // 233,472 B per SM / (100,000 + 1,024 reserved)
    int32_t block = -1, min_grid = -1;
    REQUIRE(sdm_kernel_max_potential_block_size(k, 0, 0, &block, &min_grid, nullptr) == SDM_OK);
    CHECK(block == 1024);
    CHECK(min_grid == 264);  // 2 blocks per SM x 132 SMs
    REQUIRE(sdm_kernel_max_potential_block_size(k, 0, 256, &block, nullptr, nullptr) == SDM_OK);
    CHECK(block == 256);
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_max_potential_block_size(k, 0, 2048, &block, &min_grid, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("a block size limit of 2048 threads, over the 1024"));
    sdm_error_destroy(e);
    // The same questions asked of the driver directly, on the same function.
    sdm_host::CudaDriver cu;
    REQUIRE(cu.attach(SDM_FAKE_CUDA_PATH));
    void* function = nullptr;
    REQUIRE(sdm_kernel_function(k, &function, nullptr) == SDM_OK);
    int direct = 0;
    REQUIRE(cu.get<decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor)>("cuOccupancyMaxActiveBlocksPerMultiprocessor")(
                &direct, static_cast<CUfunction>(function), 1024, 100000) == CUDA_SUCCESS);
    CHECK(direct == 2);
}

TEST_CASE("a failing occupancy query is the caller's error, with its CUresult; a failing attribute read too", "[attributes][occupancy][faults]") {
    FakeRuntime f;
    fake_fail("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_ERROR_UNKNOWN);  // read at the first fetch's cuInit
    fake_fail("cuFuncGetAttribute", CUDA_ERROR_INVALID_CONTEXT);
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    sdm_kernel* k = kernel_of(f.rt.get(), "scale_by_table");
    int32_t blocks = -1;
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_max_active_blocks(k, 512, 0, &blocks, &e) == SDM_ERROR_DRIVER);
    CHECK(sdm_error_native(e) == CUDA_ERROR_UNKNOWN);
    CHECK(blocks == -1);
    sdm_error_destroy(e);
    sdm_kernel_attributes a{};
    a.struct_size = sizeof a;
    a.num_regs = -7;
    CHECK(sdm_kernel_attributes_get(k, &a, &e) == SDM_ERROR_DRIVER);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("reading the most threads per block of kernel scale_by_table"));
    CHECK(a.num_regs == -7);
    sdm_error_destroy(e);
}
