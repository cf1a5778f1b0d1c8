// Contexts through the fake driver: the primary context by default (retained once, released with
// the runtime), or the host's own (used as is, never released); ContextScope restores the thread.
#include <catch2/catch.hpp>

#include "cuda_driver.hpp"
#include "fake_config.hpp"
#include "runtime/runtime.hpp"

using namespace sdm;
using namespace sdm::runtime;
using namespace sdm::test;

namespace {

RuntimeOptions fake_options() {
    fake({kH200, kA100});
    RuntimeOptions o;
    o.cuda_driver = SDM_FAKE_CUDA_PATH;
    return o;
}

// The device of the context current on this thread, asked of the fake driver directly (sdm itself
// never needs to ask).
Result<CUdevice> current_device(Driver&) {
    sdm_host::CudaDriver cu;
    REQUIRE(cu.attach(SDM_FAKE_CUDA_PATH));
    CUdevice device = -1;
    const CUresult rc = cu.get<decltype(&cuCtxGetDevice)>("cuCtxGetDevice")(&device);
    if (rc != CUDA_SUCCESS) return make_error(ErrorCode::driver, "cuCtxGetDevice failed with CUresult " + std::to_string(static_cast<int>(rc)));
    return device;
}

}  // namespace

TEST_CASE("primary contexts: retained once per device, current inside a scope, released with the runtime", "[context]") {
    {
        Runtime rt(fake_options());
        auto contexts = rt.contexts();
        REQUIRE(contexts);
        auto c0 = (*contexts)->get(0);
        auto c1 = (*contexts)->get(1);
        REQUIRE(c0);
        REQUIRE(c1);
        CHECK(*c0 != *c1);
        CHECK((*contexts)->get(0).value() == *c0);  // retained once
        CHECK(fake_calls("cuDevicePrimaryCtxRetain") == 2);
        CHECK(fake_calls("@contexts") == 2);
        Driver& driver = (*contexts)->driver();
        CHECK_FALSE(current_device(driver));  // nothing current on this thread
        {
            auto scope = ContextScope::enter(driver, *c1);
            REQUIRE(scope);
            CHECK(current_device(driver).value() == 1);
            {
                auto inner = ContextScope::enter(driver, *c0);
                REQUIRE(inner);
                CHECK(current_device(driver).value() == 0);
            }
            CHECK(current_device(driver).value() == 1);  // restored
        }
        CHECK_FALSE(current_device(driver));
        auto missing = (*contexts)->get(5);
        REQUIRE_FALSE(missing);
        CHECK(missing.error().code == ErrorCode::driver);
        CHECK_THAT(missing.error().message, Catch::Contains("primary context of CUDA device 5"));
    }
    CHECK(fake_calls("@contexts") == 0);  // the runtime released what it retained
}

TEST_CASE("a host's own context is used as is and never released", "[context]") {
    RuntimeOptions o = fake_options();
    Runtime probe(o);  // loads the fake and runs cuInit with this configuration
    REQUIRE(probe.driver());
    using Retain = CUresult (*)(CUcontext*, CUdevice);
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    void* fn = nullptr;
    REQUIRE(reinterpret_cast<GetProc>(fake_symbol("cuGetProcAddress_v2"))("cuDevicePrimaryCtxRetain", &fn, 12000, 0, nullptr) == CUDA_SUCCESS);
    CUcontext host = nullptr;
    REQUIRE(reinterpret_cast<Retain>(fn)(&host, 0) == CUDA_SUCCESS);
    {
        o.contexts.host = host;
        Runtime rt(o);
        auto contexts = rt.contexts();
        REQUIRE(contexts);
        CHECK((*contexts)->get(0).value() == host);  // the engine's context serves its device's work
        auto other = (*contexts)->get(1);             // and only its device's: device 1 keeps its primary context
        REQUIRE(other);
        CHECK(*other != host);
        CHECK(fake_calls("@contexts") == 2);
    }
    CHECK(fake_calls("@contexts") == 1);  // still the host's
}
