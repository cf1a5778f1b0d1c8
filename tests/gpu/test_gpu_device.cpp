// GPU test: the real driver through the C ABI. Exits 77 (Meson's "skipped") where there is no
// driver or no device, so CI skips it cleanly; on the GPU machine tests/gpu/run.sh runs it. On an
// H200 it checks the row common/hardware_matrix.cpp gives: modern, 132 SMs, 62,914,560 B of L2, 232,448 B opt-in
// shared memory, PDL and clusters allowed.
#include <cstdio>
#include <cstring>
#include <string>

#include "sdm/sdm.h"
#include "sdm/sdm_testing.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

}  // namespace

int main() {
    sdm_runtime_params params{};
    params.struct_size = sizeof params;
    params.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    sdm_runtime* rt = nullptr;
    if (sdm_runtime_create(&params, &rt, nullptr) != SDM_OK) return 1;
    int32_t count = 0;
    sdm_error* error = nullptr;
    const sdm_status status = sdm_device_count(rt, &count, &error);
    if (status == SDM_ERROR_NO_DRIVER || (status == SDM_OK && count == 0)) {
        std::printf("skipped: %s\n", status == SDM_OK ? "no CUDA device" : sdm_error_message(error));
        sdm_error_destroy(error);
        sdm_runtime_destroy(rt);
        return 77;
    }
    check(status == SDM_OK, std::string("sdm_device_count: ") + sdm_status_string(status) + " " + sdm_error_message(error));
    sdm_error_destroy(error);
    int32_t version = 0;
    const sdm_status version_status = sdm_driver_version(rt, &version, nullptr);
    check(version_status == SDM_OK && version >= 12000, "driver version " + std::to_string(version) + " >= 12000");

    for (int32_t i = 0; i < count; ++i) {
        sdm_device_info info{};
        info.struct_size = sizeof info;
        check(sdm_device_info_get(rt, i, &info, nullptr) == SDM_OK, "device " + std::to_string(i) + " info");
        std::printf("device %d: %s, cc %d.%d, class %s, %d SMs, %llu B L2, %d B opt-in smem, cap %d, per SM %d, PDL %d, clusters %d\n", i,
                    info.name, info.capability_major, info.capability_minor, sdm_device_class_name(info.device_class), info.sm_count,
                    static_cast<unsigned long long>(info.l2_bytes), info.smem_optin_bytes, info.smem_cap_bytes, info.smem_per_sm_bytes,
                    info.pdl_allowed, info.clusters_allowed);
        if (std::strstr(info.name, "H200") != nullptr) {
            check(info.device_class == SDM_DEVICE_CLASS_MODERN, "H200 classifies modern");
            check(info.capability_major == 9 && info.capability_minor == 0, "H200 is compute capability 9.0");
            check(info.sm_count == 132, "H200 has 132 SMs");
            check(info.l2_bytes == 62914560, "H200 has 62,914,560 B of L2");
            check(info.smem_optin_bytes >= 232448, "H200 opt-in shared memory >= 232,448 B");
            check(info.smem_cap_bytes == 232448 && info.smem_per_sm_bytes == 233472, "modern plans assume 232,448 B (233,472 per SM)");
            check(info.pdl_allowed == 1 && info.clusters_allowed == 1, "PDL and clusters allowed");
        }
        // A forced row over the real device: every row of the matrix is reachable on one GPU.
        uint64_t token = 0;
        check(sdm_testing_force_row_push(8, 0, 166912, 108, 41943040, &token, nullptr) == SDM_OK, "force the A100 row");
        sdm_device_class c = 0;
        check(sdm_device_class_get(rt, i, &c, nullptr) == SDM_OK && c == SDM_DEVICE_CLASS_A100, "forced row reads a100");
        check(sdm_testing_force_row_pop(token, nullptr) == SDM_OK, "pop the row");
        sdm_device_info again{};
        again.struct_size = sizeof again;
        check(sdm_device_info_get(rt, i, &again, nullptr) == SDM_OK && again.device_class == info.device_class, "the real class is back");
    }
    // An unsupported forced row gets the seed's message with the real device's name.
    uint64_t token = 0;
    sdm_testing_force_row_push(7, 5, 65536, 40, 0, &token, nullptr);
    sdm_device_class c = 0;
    error = nullptr;
    const sdm_status refused = sdm_device_class_get(rt, 0, &c, &error);
    check(refused == SDM_ERROR_UNSUPPORTED_DEVICE && std::strstr(sdm_error_message(error), "compute capability 7.5 with 65536 bytes") != nullptr,
          std::string("a 7.5 row is refused: ") + sdm_error_message(error));
    sdm_error_destroy(error);
    sdm_testing_force_row_pop(token, nullptr);
    sdm_runtime_destroy(rt);
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
