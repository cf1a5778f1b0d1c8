// The image policy after every load (runtime/select/image_policy.*), the driver's CUDA_FORCE_PTX_JIT /
// CUDA_DISABLE_PTX_JIT switches, and the RTX "untested" warning and flag, through the C ABI and
// the fake driver (which reports CU_FUNC_ATTRIBUTE_PTX_VERSION from the cubin's .note.nv.cuinfo, as
// the real driver does). tests/gpu/test_gpu_load.cpp refuses the same cubin on the H200.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "archive/image.hpp"
#include "sdm/sdm.h"
#include "sdm/sdm_testing.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

constexpr const char* kFrom80 = "kernels.sm_90-from-compute_80.cubin=sm_90";

}  // namespace

TEST_CASE("the test cubin compiled from compute_80 says so in its .note.nv.cuinfo", "[policy]") {
    const auto from80 = sdm::archive::inspect_cubin(data_file("kernels.sm_90-from-compute_80.cubin"));
    REQUIRE(from80);
    CHECK(from80->sm == 90);
    CHECK(from80->virtual_sm == 80);
    const auto native = sdm::archive::inspect_cubin(data_file("kernels.sm_90.cubin"));
    REQUIRE(native);
    CHECK(native->virtual_sm == 90);
}

TEST_CASE("an image compiled from compute_80 is refused on a modern device, every time, with no fallback", "[policy]") {
    FakeRuntime f({.log = true});
    // The archive also holds compute_90 PTX: a refusal must not fall back to it.
    mount(f.rt.get(), make_archive("kernels", {kFrom80, "compute_90"}), "old.sdma");
    int32_t version = 0;
    REQUIRE(sdm_driver_version(f.rt.get(), &version, nullptr) == SDM_OK);
    std::string message;
    info_of(f.rt.get(), 0, "scale", SDM_ERROR_IMAGE_REFUSED, &message);
    CHECK_THAT(message, Catch::Contains("compute_80") && Catch::Contains("old.sdma") && Catch::Contains("module kernels") &&
                            Catch::Contains("cubin") && Catch::Contains("sm_90") && Catch::Contains("NVIDIA H200") &&
                            Catch::Contains("class modern") && Catch::Contains("Rebuild the archive with a cubin for sm_90"));
    CHECK(fake_calls("@modules") == 0);  // the refused module was unloaded
    CHECK(fake_image_loads() == 1);
    // Not memoized: the next call loads and refuses again; the PTX is never linked.
    info_of(f.rt.get(), 0, "axpy", SDM_ERROR_IMAGE_REFUSED);
    CHECK(fake_image_loads() == 2);
    CHECK(fake_calls("cuFuncGetAttribute") == 2);
    CHECK(count_containing(f.log, "nvJitLink") == 0);
    CHECK(count_containing(f.log, "refused") >= 2);
}

TEST_CASE("compute_80 is refused on a forced modern row and accepted on the a100 row", "[policy][rows]") {
    SECTION("forced H100 row: the sm_90 cubin from compute_80 is refused") {
        FakeRuntime f;
        mount(f.rt.get(), make_archive("kernels", {kFrom80}), "old.sdma");
        uint64_t token = 0;
        REQUIRE(sdm_testing_force_row_push(9, 0, 232448, 132, 52428800, &token, nullptr) == SDM_OK);
        std::string message;
        info_of(f.rt.get(), 0, "scale", SDM_ERROR_IMAGE_REFUSED, &message);
        CHECK_THAT(message, Catch::Contains("compute_80"));
        REQUIRE(sdm_testing_force_row_pop(token, nullptr) == SDM_OK);
    }
    SECTION("forced a100 row: compute_80 PTX through the driver's JIT is accepted") {
        FakeRuntime f({.jit_flags = kDriverJitOnly});
        mount(f.rt.get(), make_archive("kernels", {"compute_80"}), "ptx80.sdma");
        uint64_t token = 0;
        REQUIRE(sdm_testing_force_row_push(8, 0, 166912, 108, 41943040, &token, nullptr) == SDM_OK);
        const auto info = info_of(f.rt.get(), 0, "scale");
        CHECK(info.image_kind == 2);
        CHECK(info.image_sm == 80);
        CHECK(info.source == 4);
        REQUIRE(sdm_testing_force_row_pop(token, nullptr) == SDM_OK);
    }
    SECTION("a real A100: the sm_80 cubin (ptxVersion 80) is accepted") {
        FakeRuntime f({.devices = {kA100}});
        mount(f.rt.get(), make_archive("kernels", {"sm_80"}), "a100.sdma");
        CHECK(info_of(f.rt.get(), 0, "scale").image_sm == 80);
    }
}

TEST_CASE("an accepted image is memoized per device and image: the driver is asked once", "[policy]") {
    FakeRuntime f({.devices = {kH200, kH200}});
    const auto bytes = make_archive("kernels", {"sm_90"});
    mount(f.rt.get(), bytes, "first.sdma");
    int32_t version = 0;
    REQUIRE(sdm_driver_version(f.rt.get(), &version, nullptr) == SDM_OK);
    info_of(f.rt.get(), 0, "scale");
    CHECK(fake_calls("cuFuncGetAttribute") == 1);
    // The same image again (a remount of the same bytes serves the kernel now): no new check.
    mount(f.rt.get(), bytes, "again.sdma");
    CHECK(std::string(info_of(f.rt.get(), 0, "scale").archive) == "again.sdma");
    CHECK(fake_image_loads() == 2);
    CHECK(fake_calls("cuFuncGetAttribute") == 1);
    // Another device is checked for itself.
    info_of(f.rt.get(), 1, "scale");
    CHECK(fake_calls("cuFuncGetAttribute") == 2);
}

TEST_CASE("an RTX device: one untested-hardware warning per device, and the flag", "[policy][rtx]") {
    FakeRuntime f({.devices = {kRtx4090}, .log = true});
    mount(f.rt.get(), make_archive("kernels", {"sm_86"}, {"scale"}), "one.sdma");
    mount(f.rt.get(), make_archive("other", {"sm_86"}, {"axpy"}), "two.sdma");
    info_of(f.rt.get(), 0, "scale");
    info_of(f.rt.get(), 0, "axpy");  // a second module: no second warning
    CHECK(count_containing(f.log, "has not been tested on RTX-class GPUs: device 0 (NVIDIA GeForce RTX 4090, compute capability 8.9)") == 1);
    sdm_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(sdm_device_info_get(f.rt.get(), 0, &info, nullptr) == SDM_OK);
    CHECK(info.untested == 1);
    fake({kH200});
    RuntimePtr h200 = make_runtime(f.cache_dir);
    REQUIRE(sdm_device_info_get(h200.get(), 0, &info, nullptr) == SDM_OK);
    CHECK(info.untested == 0);
}

TEST_CASE("the untested-hardware warning is once per process and device, not once per runtime", "[policy][rtx]") {
    // Devices of their own (the memo is the process's: another test's RTX 4090 must not count here).
    const FakeDevice rtx3080{"NVIDIA GeForce RTX 3080 (policy memo)", 8, 6, 101376, 68, 5242880};
    const FakeDevice rtx5080{"NVIDIA GeForce RTX 5080 (policy memo)", 12, 0, 101376, 84, 67108864};
    FakeRuntime f({.devices = {rtx3080, rtx5080}, .log = true});
    const auto archive = make_archive("kernels", {"sm_86", "sm_120"}, {"scale"});
    mount(f.rt.get(), archive, "first.sdma");
    info_of(f.rt.get(), 0, "scale");
    RuntimePtr second = f.another();  // a second runtime beside the first, as a host's library might make
    mount(second.get(), archive, "second.sdma");
    info_of(second.get(), 0, "scale");
    f.restart();  // and a third, after the first is gone
    mount(f.rt.get(), archive, "third.sdma");
    info_of(f.rt.get(), 0, "scale");
    CHECK(count_containing(f.log, "has not been tested on RTX-class GPUs: device 0 (NVIDIA GeForce RTX 3080 (policy memo), compute capability 8.6)") == 1);
    // Another device is warned about for itself, once, from whichever runtime loads on it first.
    info_of(second.get(), 1, "scale");
    info_of(f.rt.get(), 1, "scale");
    CHECK(count_containing(f.log, "has not been tested on RTX-class GPUs: device 1 (NVIDIA GeForce RTX 5080 (policy memo), compute capability 12.0)") == 1);
    CHECK(count_containing(f.log, "has not been tested on RTX-class GPUs") == 2);
}

TEST_CASE_METHOD(FakeRuntime, "CUDA_FORCE_PTX_JIT=1: the PTX path, never a cubin", "[policy][switches]") {
    EnvGuard force("CUDA_FORCE_PTX_JIT", "1");
    SECTION("PTX is there: linked, though a cubin fits") {
        mount(rt.get(), make_archive("kernels", {"sm_90", "compute_90"}), "both.sdma");
        const auto info = info_of(rt.get(), 0, "scale");
        CHECK(info.image_kind == 2);
        CHECK(info.source == 3);
    }
    SECTION("cubins only: no image, and the message says why") {
        mount(rt.get(), make_archive("kernels", {"sm_90"}), "cubin.sdma");
        std::string message;
        info_of(rt.get(), 0, "scale", SDM_ERROR_NO_IMAGE, &message);
        CHECK_THAT(message, Catch::Contains("CUDA_FORCE_PTX_JIT=1 is set"));
    }
}

TEST_CASE("CUDA_DISABLE_PTX_JIT=1: no PTX for the driver's JIT; nvJitLink still links", "[policy][switches]") {
    EnvGuard disable("CUDA_DISABLE_PTX_JIT", "1");
    FakeRuntime f({.jit_flags = kDriverJitOnly});
    mount(f.rt.get(), make_archive("kernels", {"compute_90"}), "ptx.sdma");
    std::string message;
    info_of(f.rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
    CHECK_THAT(message, Catch::Contains("CUDA_DISABLE_PTX_JIT=1 is set"));
    CHECK(fake_calls("cuModuleLoadDataEx") == 0);
    f.options.jit_flags = 0;
    f.restart();
    mount(f.rt.get(), make_archive("kernels", {"compute_90"}), "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 3);
}
