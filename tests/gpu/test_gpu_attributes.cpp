// GPU test (exits 77 without a GPU): kernel attributes, settings and occupancy through the C ABI
// (ABI 1.4) against what the driver itself answers for the same CUfunction. The user kernels of
// the archive `sdm import` made of tests/data/launch.sm_90.cubin (SDM_TEST_USER_ARCHIVE): every
// field of sdm_kernel_attributes against cuFuncGetAttribute (matmul_tiled has static shared
// memory, so the sizes are not all 0); the dynamic shared memory limit set to the most the device
// allows the kernel and the carveout set, read back through sdm and through the driver; one byte
// more refused naming both figures; blocks per SM and the suggested block size equal to
// cuOccupancyMaxActiveBlocksPerMultiprocessor and cuOccupancyMaxPotentialBlockSize.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gpu_driver.hpp"
#include "sdm/sdm.h"

using sdm::gpu_test::check;
using sdm::gpu_test::Cuda;
using sdm::gpu_test::skipped;
using sdm::gpu_test::failures;
using sdm::gpu_test::runtime_with;

#ifndef SDM_TEST_USER_ARCHIVE
#error "define SDM_TEST_USER_ARCHIVE as the path of the archive sdm import made of tests/data/launch.sm_90.cubin"
#endif

namespace {

std::string message(sdm_error* e) { return e != nullptr ? std::string(": ") + sdm_error_message(e) : std::string(); }

}  // namespace

int main() {
    Cuda cuda;
    if (!cuda.open_device0()) return skipped();
    const auto get_attribute = cuda.get<decltype(&cuFuncGetAttribute)>("cuFuncGetAttribute");
    const auto occupancy = cuda.get<decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const auto potential = cuda.get<decltype(&cuOccupancyMaxPotentialBlockSize)>("cuOccupancyMaxPotentialBlockSize");

    sdm_error* e = nullptr;
    sdm_runtime* rt = runtime_with(SDM_TEST_USER_ARCHIVE, "attributes", &e);
    if (rt == nullptr) return 1;
    sdm_device_info device{};
    device.struct_size = sizeof device;
    if (sdm_device_info_get(rt, 0, &device, &e) != SDM_OK) {
        std::printf("FAIL: %s\n", sdm_error_message(e));
        return 1;
    }
    std::printf("device 0: %s, capability %d.%d, %d B of opt-in shared memory per block\n", device.name, device.capability_major,
                device.capability_minor, device.smem_optin_bytes);

    for (const char* name : {"matmul_tiled", "scale_by_table", "grid_sum"}) {
        const std::string k_name = name;
        sdm_kernel* k = nullptr;
        if (sdm_kernel_get(rt, 0, name, nullptr, &k, &e) != SDM_OK) {
            check(false, "fetch " + k_name + message(e));
            sdm_error_destroy(e), e = nullptr;
            continue;
        }
        sdm_kernel_attributes a{};
        a.struct_size = sizeof a;
        check(sdm_kernel_attributes_get(k, &a, &e) == SDM_OK, k_name + ": sdm_kernel_attributes_get" + message(e));
        void* raw = nullptr;
        check(sdm_kernel_function(k, &raw, &e) == SDM_OK, k_name + ": sdm_kernel_function" + message(e));
        const auto function = static_cast<CUfunction>(raw);
        const auto driver = [&](CUfunction_attribute attribute) {
            int value = -12345;
            const CUresult rc = get_attribute(&value, attribute, function);
            return rc == CUDA_SUCCESS ? value : -12345;
        };
        const bool clusters = device.capability_major >= 9;
        check(((a.flags & SDM_KERNEL_ATTRIBUTES_CLUSTER) != 0) == clusters, k_name + ": the cluster flag follows the capability");
        const std::vector<std::pair<const char*, std::pair<int32_t, CUfunction_attribute>>> fields = {
            {"max_threads_per_block", {a.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}},
            {"shared_size_bytes", {a.shared_size_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}},
            {"const_size_bytes", {a.const_size_bytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES}},
            {"local_size_bytes", {a.local_size_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}},
            {"num_regs", {a.num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS}},
            {"ptx_version", {a.ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION}},
            {"binary_version", {a.binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION}},
            {"cache_mode_ca", {a.cache_mode_ca, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA}},
            {"max_dynamic_shared_size_bytes", {a.max_dynamic_shared_size_bytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}},
            {"preferred_shared_memory_carveout", {a.preferred_shared_memory_carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT}},
        };
        for (const auto& [field, pair] : fields)
            check(pair.first == driver(pair.second), k_name + "." + field + " = " + std::to_string(pair.first) + ", the driver's " +
                                                         std::to_string(driver(pair.second)));
        if (clusters) {
            const std::vector<std::pair<const char*, std::pair<int32_t, CUfunction_attribute>>> cluster_fields = {
                {"cluster_size_must_be_set", {a.cluster_size_must_be_set, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET}},
                {"required_cluster_width", {a.required_cluster_width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH}},
                {"required_cluster_height", {a.required_cluster_height, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT}},
                {"required_cluster_depth", {a.required_cluster_depth, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH}},
                {"non_portable_cluster_size_allowed", {a.non_portable_cluster_size_allowed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED}},
                {"cluster_scheduling_policy_preference",
                 {a.cluster_scheduling_policy_preference, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE}},
            };
            for (const auto& [field, pair] : cluster_fields)
                check(pair.first == driver(pair.second), k_name + "." + field + " = " + std::to_string(pair.first) + ", the driver's " +
                                                             std::to_string(driver(pair.second)));
        }

        // The settings: the most the device allows this kernel, and a carveout; read back both ways.
        const int32_t limit = device.smem_optin_bytes - a.shared_size_bytes;
        check(sdm_kernel_set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, limit, &e) == SDM_OK,
              k_name + ": dynamic shared memory limit " + std::to_string(limit) + message(e));
        sdm_error_destroy(e), e = nullptr;
        check(sdm_kernel_set(k, SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 50, &e) == SDM_OK, k_name + ": carveout 50" + message(e));
        sdm_error_destroy(e), e = nullptr;
        sdm_kernel_attributes b{};
        b.struct_size = sizeof b;
        check(sdm_kernel_attributes_get(k, &b, &e) == SDM_OK, k_name + ": read back" + message(e));
        check(b.max_dynamic_shared_size_bytes == limit && driver(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) == limit,
              k_name + ": the limit reads back as " + std::to_string(b.max_dynamic_shared_size_bytes) + " (driver " +
                  std::to_string(driver(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)) + ")");
        check(b.preferred_shared_memory_carveout == driver(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT),
              k_name + ": the carveout reads back as the driver's (" + std::to_string(b.preferred_shared_memory_carveout) + ")");
        const sdm_status over = sdm_kernel_set(k, SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, limit + 1, &e);
        const std::string why = sdm_error_message(e);
        check(over == SDM_ERROR_INVALID_ARGUMENT && why.find(std::to_string(limit + 1)) != std::string::npos &&
                  why.find(std::to_string(limit) + " B") != std::string::npos,
              k_name + ": one byte more is refused naming both: " + why);
        sdm_error_destroy(e), e = nullptr;
        check(driver(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) == limit, k_name + ": the refusal changed nothing");

        // Occupancy: the driver's answers for the same function, as it is set now.
        for (const auto& [threads, smem] : std::vector<std::pair<uint32_t, uint32_t>>{{32, 0}, {128, 0}, {256, 16384}, {1024, 0}, {512, 65536}}) {
            if (static_cast<int32_t>(threads) > a.max_threads_per_block) continue;
            int32_t blocks = -1;
            check(sdm_kernel_max_active_blocks(k, threads, smem, &blocks, &e) == SDM_OK, k_name + ": max active blocks" + message(e));
            int direct = -2;
            occupancy(&direct, function, static_cast<int>(threads), smem);
            check(blocks == direct, k_name + ": " + std::to_string(threads) + " threads, " + std::to_string(smem) + " B: " + std::to_string(blocks) +
                                        " blocks per SM, the driver's " + std::to_string(direct));
        }
        for (const auto& [smem, cap] : std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {8192, 0}, {0, 256}}) {
            int32_t block = -1, grid = -1;
            check(sdm_kernel_max_potential_block_size(k, smem, cap, &block, &grid, &e) == SDM_OK, k_name + ": potential block size" + message(e));
            int direct_block = -2, direct_grid = -2;
            potential(&direct_grid, &direct_block, function, nullptr, smem, static_cast<int>(cap));
            check(block == direct_block && grid == direct_grid, k_name + ": " + std::to_string(smem) + " B, limit " + std::to_string(cap) + ": " +
                                                                    std::to_string(block) + " threads x " + std::to_string(grid) +
                                                                    " blocks, the driver's " + std::to_string(direct_block) + " x " +
                                                                    std::to_string(direct_grid));
        }
        sdm_error_destroy(e), e = nullptr;
    }
    sdm_runtime_destroy(rt);
    std::printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
