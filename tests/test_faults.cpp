// Fault injection through the fake driver (issue 9, item 4): every driver entry point sdm calls
// fails once in turn (SDM_FAKE_CUDA_FAIL=entry=CUDA_ERROR_UNKNOWN@1) during a whole workflow:
// create, mount, fetch two kernels, select plans (one with clusters), launch (one needing the
// shared-memory attribute), destroy. Each failure must surface as a status with a message naming
// the call (never SDM_ERROR_INTERNAL, never a crash), the same step must then succeed (the runtime
// keeps serving), and destroying the runtime must leave no module or context behind. Run under
// ASan + UBSan (LSan) in ./run.sh test's sanitizer stage.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

const char* const kEntries[] = {
    "cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
    "cuFuncGetAttribute", "cuFuncSetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuOccupancyMaxActiveClusters",
    "cuLaunchKernelEx",
};

}  // namespace

TEST_CASE("every driver call failing once: a status with a message, then the runtime keeps serving", "[faults]") {
    for (const char* entry : kEntries) {
        INFO(entry);
        TempDir cache;
        fake_reset();  // what an earlier round's failed teardown left behind goes
        fake(kH200);
        setenv("SDM_FAKE_CUDA_FAIL", (std::string(entry) + "=CUDA_ERROR_UNKNOWN@1").c_str(), 1);
        RuntimePtr rt = make_runtime(cache.path);
        int failed = 0;
        // Runs `step`; when it fails, checks the error and runs it again, which must succeed.
        const auto step = [&](const char* what, const std::function<sdm_status(sdm_error**)>& call) {
            sdm_error* e = nullptr;
            const sdm_status s = call(&e);
            if (s != SDM_OK) {
                ++failed;
                INFO(what << ": " << sdm_error_message(e));
                CHECK(s != SDM_ERROR_INTERNAL);
                CHECK(std::string(sdm_error_message(e)).size() > 10);
                sdm_error_destroy(e);
                unsetenv("SDM_FAKE_CUDA_FAIL");  // (cuInit re-reads it: a failed cuInit would fail again)
                e = nullptr;
                const sdm_status again = call(&e);
                INFO("again: " << sdm_error_message(e));
                CHECK(again == SDM_OK);
            }
            sdm_error_destroy(e);
        };
        sdm_kernel* scale = nullptr;
        sdm_kernel* axpy = nullptr;
        step("mount", [&](sdm_error** e) { return sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, e); });
        step("device count", [&](sdm_error** e) {
            int32_t n = 0;
            return sdm_device_count(rt.get(), &n, e);
        });
        step("scale", [&](sdm_error** e) { return sdm_kernel_get(rt.get(), 0, "scale", nullptr, &scale, e); });
        step("axpy", [&](sdm_error** e) { return sdm_kernel_get(rt.get(), 0, "axpy", nullptr, &axpy, e); });
        sdm_plan plan{}, clustered{};
        plan.struct_size = clustered.struct_size = sizeof plan;
        step("plan", [&](sdm_error** e) {
            const int64_t n = 1 << 20;
            return sdm_plan_select(scale, &n, 1, &plan, e);
        });
        step("cluster plan", [&](sdm_error** e) {
            const int64_t n = int64_t{1} << 25;
            return sdm_plan_select(scale, &n, 1, &clustered, e);
        });
        void* y = nullptr;
        float factor = 2.f;
        int count = 1 << 20;
        void* args[] = {&y, &factor, &count};
        step("launch", [&](sdm_error** e) { return sdm_launch(scale, &plan, nullptr, args, 3, e); });
        sdm_plan wide = plan;
        wide.smem_bytes = 100000;  // needs the shared-memory attribute
        step("wide launch", [&](sdm_error** e) { return sdm_launch(scale, &wide, nullptr, args, 3, e); });
        step("cluster launch", [&](sdm_error** e) { return sdm_launch(scale, &clustered, nullptr, args, 3, e); });
        unsetenv("SDM_FAKE_CUDA_FAIL");
        rt.reset();  // unloads and releases; a failing unload or release is logged, not lost
        const bool teardown_entry = std::string(entry) == "cuModuleUnload" || std::string(entry) == "cuDevicePrimaryCtxRelease" ||
                                    std::string(entry) == "cuCtxPopCurrent";
        // A failed unload or release at teardown is logged (nothing can retry it): a primary
        // context whose release failed stays retained; its modules go with the context, as the
        // driver unloads them when its last retain goes. Anything else leaves nothing behind.
        CHECK(fake_calls("@modules") == 0);
        CHECK(fake_calls("@contexts") == (std::string(entry) == "cuDevicePrimaryCtxRelease" ? 1 : 0));
        if (!teardown_entry) CHECK(failed == 1);  // the injected failure surfaced exactly once, in some step
    }
}
