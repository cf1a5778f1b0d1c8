// Plans and launches through the C ABI and the fake driver (runtime/kernel/launch.*): sdm_plan_select with
// its memo (one occupancy query per problem), clusters, forced rows; sdm_launch with the argument
// count, the shared-memory attribute set once per size, cuLaunchKernelEx's cluster and PDL
// attributes, and the driver's refusals. tests/gpu/test_gpu_launch.cpp launches for real.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>
#include <string>

#include <cuda.h>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_testing.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

sdm_plan select(const sdm_kernel* k, int64_t n, sdm_status expect = SDM_OK, std::string* message = nullptr) {
    sdm_plan plan{};
    plan.struct_size = sizeof plan;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_plan_select(k, &n, 1, &plan, &e);
    if (message != nullptr) *message = sdm_error_message(e);
    if (s != expect) FAIL(sdm_status_string(s) << ": " << sdm_error_message(e));
    sdm_error_destroy(e);
    return plan;
}

struct Args {
    void* y{nullptr};
    float factor{2.f};
    int n{1024};
    void* values[3]{&y, &factor, &n};
};

}  // namespace

TEST_CASE_METHOD(FakeRuntime, "sdm_plan_select: the manifest's plan, checked by the occupancy calculator, memoized per problem", "[launch][plan]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    const sdm_plan p = select(k, 1 << 20);
    CHECK(p.grid == 1056);
    CHECK(p.block == 256);
    CHECK(p.smem_bytes == 0);
    CHECK(p.flags == SDM_PLAN_PDL);
    CHECK(p.cluster[0] == 1);
    CHECK(p.blocks_per_sm == 8);
    CHECK(p.occupancy == 8);  // the fake's model: 2048 threads per SM / 256
    CHECK(p.rule == 0);
    CHECK(fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == 1);
    for (int i = 0; i < 100; ++i) (void)select(k, 1 << 20);
    CHECK(fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == 1);  // memoized
    // Another problem: another plan. Past a quarter of L2: clusters of two, checked as clusters.
    const sdm_plan big = select(k, int64_t{1} << 25);
    CHECK(big.rule == 1);
    CHECK(big.cluster[0] == 2);
    CHECK(big.block == 1024);
    CHECK(big.grid == 32768);
    CHECK(fake_calls("cuOccupancyMaxActiveClusters") == 1);
    // A forced row is another device: GB300's plan, then H200's again once it is popped.
    uint64_t token = 0;
    REQUIRE(sdm_testing_force_row_push(10, 3, 232448, 152, 135528448, &token, nullptr) == SDM_OK);
    const sdm_plan gb300 = select(k, 1 << 20);
    CHECK(gb300.grid == 608);
    CHECK(gb300.block == 512);
    CHECK(gb300.smem_bytes == 27863);
    REQUIRE(sdm_testing_force_row_pop(token, nullptr) == SDM_OK);
    CHECK(select(k, 1 << 20).grid == 1056);
    // A kernel without rules, and bad arguments.
    std::string message;
    (void)select(kernel_of(rt.get(), "axpy"), 1, SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("kernel axpy has no launch plans (its manifest gives none); choose the launch shape yourself"));
    sdm_plan small{};
    small.struct_size = 8;
    int64_t n = 1;
    CHECK(sdm_plan_select(k, &n, 1, &small, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("a plan no block of which fits is refused; a failing occupancy query is an error, not memoized", "[launch][plan]") {
    FakeRuntime f({.devices = {kA100}});
    REQUIRE(sdm_archive_mount_file(f.rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = kernel_of(f.rt.get(), "scale");
    std::string message;
    fake_set_occupancy(0);  // the calculator says: no block fits (registers, say)
    (void)select(k, 1 << 20, SDM_ERROR_INVALID_ARGUMENT, &message);
    CHECK_THAT(message, Catch::Contains("kernel scale cannot run with grid 8192, block 128") && Catch::Contains("no block of it fits"));
    fake_set_occupancy(std::nullopt);
    // The fake reads its failures at cuInit: a new runtime sees them.
    fake_fail("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_ERROR_INVALID_CONTEXT);
    RuntimePtr failing = f.another();
    REQUIRE(sdm_archive_mount_file(failing.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* fk = kernel_of(failing.get(), "scale");
    (void)select(fk, 1 << 20, SDM_ERROR_DRIVER, &message);
    CHECK_THAT(message, Catch::Contains("CUDA_ERROR_INVALID_CONTEXT"));
    fake_clear_failures();
    int32_t version = 0;
    REQUIRE(sdm_driver_version(f.another().get(), &version, nullptr) == SDM_OK);  // a cuInit that clears the failure
    CHECK(select(fk, 1 << 20).occupancy == 16);  // the error was not memoized
    const sdm_plan p = select(k, 1 << 20);
    CHECK(p.grid == 8192);
    CHECK(p.flags == 0);
    CHECK(p.occupancy == 16);
}

TEST_CASE_METHOD(FakeRuntime, "sdm_launch: argument count, cuLaunchKernelEx attributes, the shared memory limit set once per size", "[launch]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    sdm_plan p = select(k, 1 << 20);
    Args a;
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_OK);
    CHECK(fake_calls("cuLaunchKernelEx") == 1);
    sdm_error* e = nullptr;
    CHECK(sdm_launch(k, &p, nullptr, a.values, 2, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel scale takes 3 argument(s) (ptr,f32,i32), not 2"));
    sdm_error_destroy(e);
    CHECK(fake_calls("cuLaunchKernelEx") == 1);
    // Clusters (a plan from sdm_plan_select) launch; the fake checks the grid against the cluster.
    sdm_plan big = select(k, int64_t{1} << 25);
    REQUIRE(sdm_launch(k, &big, nullptr, a.values, 3, nullptr) == SDM_OK);
    // More than the default 48 KiB of dynamic shared memory: the limit is raised once per size.
    p.smem_bytes = 100000;
    for (int i = 0; i < 3; ++i) REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_OK);
    CHECK(fake_calls("cuFuncSetAttribute") == 1);
    p.smem_bytes = 50000;  // within what is set already
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_OK);
    p.smem_bytes = 200000;
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_OK);
    CHECK(fake_calls("cuFuncSetAttribute") == 2);
    // A block past the driver's limit: refused before the driver, naming the dimension and its limit.
    p.smem_bytes = 0;
    p.block = 2048;
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel scale cannot launch with grid 1056, block 2048") && Catch::Contains("block x of 2048 (1..1024)"));
    sdm_error_destroy(e);
    // A plan the driver refuses (a cluster of 16 blocks, past the portable 8): the error names the
    // kernel, the plan and the CUresult.
    p.block = 256;
    p.cluster[0] = 16;
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, &e) == SDM_ERROR_DRIVER);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("launching kernel scale with grid 1056, block 256, smem 0, cluster 16x1x1") &&
                                         Catch::Contains("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
    CHECK(sdm_error_native(e) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
    sdm_error_destroy(e);
}

TEST_CASE("sdm_launch on an A100: PDL and clusters are refused by the driver, the plan without them launches", "[launch]") {
    FakeRuntime f({.devices = {kA100}});
    REQUIRE(sdm_archive_mount_file(f.rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = kernel_of(f.rt.get(), "scale");
    sdm_plan p = select(k, 1 << 20);
    Args a;
    REQUIRE(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_OK);
    p.flags = SDM_PLAN_PDL;
    CHECK(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_ERROR_DRIVER);
    p.flags = 0;
    p.cluster[0] = 2;
    CHECK(sdm_launch(k, &p, nullptr, a.values, 3, nullptr) == SDM_ERROR_DRIVER);
}

TEST_CASE_METHOD(FakeRuntime, "8 threads selecting plans and launching at once agree with one thread", "[launch][concurrency]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    sdm_kernel* k = kernel_of(rt.get(), "scale");
    std::vector<sdm_plan> expected;
    for (int64_t n = 1; n <= 1 << 26; n *= 4) expected.push_back(select(k, n));
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            Args a;
            for (int round = 0; round < 200; ++round) {
                size_t i = 0;
                for (int64_t n = 1; n <= 1 << 26; n *= 4, ++i) {
                    sdm_plan p{};
                    p.struct_size = sizeof p;
                    if (sdm_plan_select(k, &n, 1, &p, nullptr) != SDM_OK || std::memcmp(&p, &expected[i], sizeof p) != 0) ++wrong;
                    p.smem_bytes = static_cast<uint32_t>((t + round) % 4) * 40000;  // raising the limit from several threads
                    if (sdm_launch(k, &p, nullptr, a.values, 3, nullptr) != SDM_OK) ++wrong;
                }
            }
        });
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
    CHECK(fake_calls("cuFuncSetAttribute") <= 3);  // 40000 is under 48 KiB; 80000 and 120000 at most once each
}
