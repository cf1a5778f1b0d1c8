// Fault injection through the fake driver: every driver entry point sdm resolves (the one list,
// runtime/platform/driver_entry_points.hpp) fails once in turn (fake_fail(entry, CUDA_ERROR_UNKNOWN, 1))
// during a whole workflow that calls each of them (the context queries with the runtime following
// the thread's context, cuModuleLoadData on a driver without the library entry points): create, mount, fetch a kernel from a cubin and
// one through the driver's JIT, select plans (one with clusters), launch (one needing the
// shared-memory attribute, one the driver refuses, whose message needs the error's name and
// text), destroy. Each failure must surface as a status with a message naming the call (never
// SDM_ERROR_INTERNAL, never a crash), the same step must then succeed (the runtime keeps
// serving), and destroying the runtime must leave no module or context behind. Run under ASan +
// UBSan (LSan) in ./run.sh test's sanitizer stage.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <functional>
#include <string>
#include <vector>

#include "runtime/platform/driver_entry_points.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

const char* const kEntries[] = {
#define SDM_FAULT_ENTRY(name) #name,
    SDM_DRIVER_ENTRY_POINTS(SDM_FAULT_ENTRY)
#undef SDM_FAULT_ENTRY
};

// The entry points only a failure calls: naming the CUresult of another call that failed.
bool names_errors(const std::string& entry) { return entry == "cuGetErrorName" || entry == "cuGetErrorString"; }

}  // namespace

TEST_CASE("every driver call failing once: a status with a message, then the runtime keeps serving", "[faults]") {
    for (const char* entry : kEntries) {
        INFO(entry);
        TempDir cache;
        fake_reset();  // what an earlier round's failed teardown left behind goes
        const std::string_view name(entry);
        const bool follows_current = name == "cuCtxGetCurrent" || name == "cuCtxGetDevice" || name == "cuCtxGetId";
        // The library entry points are the library path's (runtime/load/library.hpp, LoadPath).
        if (name.starts_with("cuLibrary") || name == "cuKernelGetFunction") setenv("SDM_LOAD_PATH", "library", 1);
        else unsetenv("SDM_LOAD_PATH");
        if (name == "cuModuleLoadData") fake_configure({.devices = {kH200}, .missing = {"cuLibraryLoadData"}});
        else fake({kH200});
        if (follows_current) (void)fake_host_context(0, true);  // the host's context, current on this thread
        fake_fail(entry, CUDA_ERROR_UNKNOWN, 1);
        RuntimePtr rt = make_runtime(cache.path, kDriverJitOnly, 0, nullptr, follows_current ? SDM_RUNTIME_CURRENT_CONTEXT : 0);
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
                fake_clear_failures();  // (cuInit reads the failures again: a failed cuInit would fail again)
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
        // axpy from PTX, newer than the golden archive's cubins: the driver's JIT takes it
        // (cuStreamIsCapturing first, then cuModuleLoadDataEx).
        const auto ptx = make_archive("jitted", {"compute_90"}, {"axpy"});
        step("mount PTX", [&](sdm_error** e) { return sdm_archive_mount_memory(rt.get(), ptx.data(), ptx.size(), "ptx.sdma", e); });
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
        // A user's kernels (launch.cu): a cooperative launch with a priority (the device's
        // attribute, the occupancy, the priority range), a plan for elements (the driver's block
        // size), a __constant__ global looked up, written and read.
        const auto user = launch_archive();
        step("mount user", [&](sdm_error** e) { return sdm_archive_mount_memory(rt.get(), user.data(), user.size(), "launch.sdma", e); });
        sdm_kernel* grid_sum = nullptr;
        sdm_kernel* table = nullptr;
        step("grid_sum", [&](sdm_error** e) { return sdm_kernel_get(rt.get(), 0, "grid_sum", nullptr, &grid_sum, e); });
        step("scale_by_table", [&](sdm_error** e) { return sdm_kernel_get(rt.get(), 0, "scale_by_table", nullptr, &table, e); });
        step("cooperative launch", [&](sdm_error** e) {
            sdm_plan coop{};
            coop.struct_size = sizeof coop;
            coop.flags = SDM_PLAN_COOPERATIVE;
            coop.grid = 132;
            coop.block = 256;
            coop.priority = -1;
            void* p = nullptr;
            void* total = nullptr;
            void* two[] = {&p, &total};
            return sdm_launch(grid_sum, &coop, nullptr, two, 2, e);
        });
        step("plan for elements", [&](sdm_error** e) {
            sdm_plan shaped{};
            shaped.struct_size = sizeof shaped;
            return sdm_plan_for_elements(table, 1 << 20, 0, &shaped, e);
        });
        float coefficients[16] = {};
        step("global write", [&](sdm_error** e) { return sdm_global_write(table, "coefficients", 0, coefficients, sizeof coefficients, nullptr, e); });
        step("global read", [&](sdm_error** e) { return sdm_global_read(table, "coefficients", 0, coefficients, sizeof coefficients, nullptr, e); });
        {  // a launch the driver refuses (a cluster of 16): its message names the CUresult, by name and text when the driver can
            sdm_plan refused = plan;
            refused.cluster[0] = 16;
            sdm_error* e = nullptr;
            CHECK(sdm_launch(scale, &refused, nullptr, args, 3, &e) == SDM_ERROR_DRIVER);
            const std::string message = sdm_error_message(e);
            sdm_error_destroy(e);
            if (names_errors(entry)) {
                ++failed;  // the injected failure: the message falls back to the number
                CHECK_THAT(message, Catch::Contains("cuLaunchKernelEx failed with"));
            } else {
                CHECK_THAT(message, Catch::Contains("CUDA_ERROR_INVALID_CLUSTER_SIZE (invalid cluster size)"));
            }
            fake_clear_failures();
        }
        fake_clear_failures();
        rt.reset();  // unloads and releases; a failing unload or release is logged, not lost
        const bool teardown_entry = name == "cuModuleUnload" || name == "cuLibraryUnload" || name == "cuDevicePrimaryCtxRelease" ||
                                    name == "cuCtxPopCurrent";
        // Called only when a reload retires a module: test_reload.cpp fails each of them there.
        const bool retire_entry = std::string_view(entry).starts_with("cuEvent") || std::string(entry) == "cuCtxSynchronize";
        // Called only for a launch into a capturing stream: test_graphs.cpp fails each of them there.
        const bool graph_entry = name == "cuUserObjectCreate" || name == "cuUserObjectRelease" || name == "cuGraphRetainUserObject";
        // A failed unload or release at teardown is logged (nothing can retry it): a primary
        // context whose release failed stays retained; its modules go with the context, as the
        // driver unloads them when its last retain goes. Anything else leaves nothing behind.
        CHECK(fake_calls("@modules") == 0);
        CHECK(fake_calls("@contexts") == (name == "cuDevicePrimaryCtxRelease" || follows_current ? 1 : 0));  // or the host's own
        if (follows_current) fake_pop_context();
        // Called only under a device-memory budget, where a failure is a fallback the log names:
        // test_budget.cpp fails it there.
        const bool budget_entry = name == "cuMemGetInfo";
        if (!teardown_entry && !retire_entry && !graph_entry && !budget_entry) CHECK(failed == 1);  // the injected failure surfaced exactly once, in some step
    }
    unsetenv("SDM_LOAD_PATH");
}
