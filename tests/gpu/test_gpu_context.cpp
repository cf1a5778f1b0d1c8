// GPU test: contexts with the real driver, the paths tests/runtime/device/test_context.cpp walks on the fake.
// Exits 77 without a driver or a device.
#include <cstdio>

#include "cuda_driver.hpp"
#include "runtime/runtime.hpp"

using namespace sdm::runtime;

int main() {
    int failures = 0;
    const auto check = [&](bool ok, const char* what) {
        std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
        failures += ok ? 0 : 1;
    };
    Runtime rt(RuntimeOptions{});
    auto count = rt.devices().count();
    if (!count || *count == 0) {
        std::printf("skipped: %s\n", count ? "no CUDA device" : count.error().message.c_str());
        return 77;
    }
    auto contexts = rt.contexts();
    check(contexts.ok(), "contexts");
    if (!contexts) return 1;
    Driver& driver = (*contexts)->driver();
    auto primary = (*contexts)->get(0);
    check(primary.ok(), "retain device 0's primary context");
    if (!primary) return 1;
    check((*contexts)->get(0).value() == *primary, "retained once");
    // The test asks the driver which device is current itself (sdm never needs to ask).
    sdm_host::CudaDriver cu;
    check(cu.attach(), "the driver, for the test's own calls");
    const auto current_device = cu.get<decltype(&cuCtxGetDevice)>("cuCtxGetDevice");
    CUdevice device = -1;
    check(current_device(&device) != CUDA_SUCCESS, "no context current before the scope");
    {
        auto scope = ContextScope::enter(driver, *primary);
        check(scope.ok(), "push the primary context");
        check(current_device(&device) == CUDA_SUCCESS && device == 0, "device 0 current inside the scope");
    }
    check(current_device(&device) != CUDA_SUCCESS, "nothing current after the scope");
    auto missing = (*contexts)->get(*count + 3);
    check(!missing.ok() && missing.error().native != 0, "a missing device is a driver error with its CUresult");
    if (!missing.ok()) std::printf("  %s\n", missing.error().message.c_str());
    std::printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
