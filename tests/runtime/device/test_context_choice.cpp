// Which CUDA context sdm works in, through the C ABI on the fake driver (runtime/device/context.hpp):
// 1.0's cuda_context serves only the device it belongs to; device_contexts gives each device the
// host's own context (checked against it); SDM_RUNTIME_CURRENT_CONTEXT follows the calling
// thread's context at every fetch, preload and launch. The fake's only contexts are primary ones:
// retained by the test outside sdm, they are the host's own as far as sdm can tell (the GPU test
// does the same with cuCtxCreate and a green context).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

struct Params {
    sdm_runtime_params p{};
    TempDir dir;
    std::string cache;
    std::vector<std::string> log;
    Params() : cache(dir.path + "/cache") {
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.cuda_driver = SDM_FAKE_CUDA_PATH;
        p.cache_dir = cache.c_str();
        p.log_level = SDM_LOG_DEBUG;
        p.log_fn = [](void* user, sdm_log_level, const char* m, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(m); };
        p.log_user_data = &log;
    }
    RuntimePtr create() {
        sdm_runtime* r = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_runtime_create(&p, &r, &e);
        INFO(sdm_error_message(e));
        sdm_error_destroy(e);
        REQUIRE(s == SDM_OK);
        mount(r, make_archive("kernels", {"sm_90"}), "kernels.sdma");
        return RuntimePtr(r);
    }
    std::string refused() {
        sdm_runtime* r = nullptr;
        sdm_error* e = nullptr;
        CHECK(sdm_runtime_create(&p, &r, &e) == SDM_ERROR_INVALID_ARGUMENT);
        CHECK(r == nullptr);
        std::string message = sdm_error_message(e);
        sdm_error_destroy(e);
        return message;
    }
};

sdm_status fetch(sdm_runtime* rt, int32_t ordinal, sdm_kernel** k, std::string* message = nullptr) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_kernel_get(rt, ordinal, "scale", nullptr, k, &e);
    if (message != nullptr) *message = sdm_error_message(e);
    sdm_error_destroy(e);
    return s;
}

}  // namespace

TEST_CASE("1.0's cuda_context serves the device it belongs to; other devices keep their primary contexts", "[context]") {
    fake({kH200, kH200});
    CUcontext host1 = fake_host_context(1);
    Params params;
    params.p.cuda_context = host1;
    RuntimePtr rt = params.create();
    sdm_kernel* k = nullptr;
    REQUIRE(fetch(rt.get(), 1, &k) == SDM_OK);
    CHECK(fake_calls("@contexts") == 1);  // the host's only: device 1 works in it
    REQUIRE(fetch(rt.get(), 0, &k) == SDM_OK);
    CHECK(fake_calls("@contexts") == 2);  // device 0's primary context, not the host's context of device 1
    CHECK(count_containing(params.log, "CUDA device 0 uses its primary context: the host's context (cuda_context) belongs to device 1") == 1);
    rt.reset();
    CHECK(fake_calls("@contexts") == 1);  // the host's stays
}

TEST_CASE("device_contexts: each device works in the host's context for it, checked against the device", "[context]") {
    fake({kH200, kH200, kH200});
    CUcontext c0 = fake_host_context(0), c1 = fake_host_context(1);
    const int64_t host_retains = fake_calls("@contexts");  // the test's (sections run the case again)
    SECTION("two devices, one context each; the third keeps its primary context") {
        void* contexts[] = {c0, c1};
        Params params;
        params.p.device_contexts = contexts;
        params.p.device_context_count = 2;
        RuntimePtr rt = params.create();
        contexts[0] = contexts[1] = nullptr;  // copied at creation
        sdm_kernel *k0 = nullptr, *k1 = nullptr, *k2 = nullptr;
        REQUIRE(fetch(rt.get(), 0, &k0) == SDM_OK);
        REQUIRE(fetch(rt.get(), 1, &k1) == SDM_OK);
        CHECK(fake_calls("@contexts") == host_retains);  // no primary context retained by sdm
        CHECK(fake_calls("@modules") == 2);  // one image, a module of each device's context (the module path)
        CHECK(launch_scale(k0) == SDM_OK);
        CHECK(launch_scale(k1) == SDM_OK);
        REQUIRE(fetch(rt.get(), 2, &k2) == SDM_OK);
        CHECK(fake_calls("@contexts") == host_retains + 1);
    }
    SECTION("a context given for the wrong device is refused, naming both") {
        void* contexts[] = {c1, c0};
        Params params;
        params.p.device_contexts = contexts;
        params.p.device_context_count = 2;
        RuntimePtr rt = params.create();
        sdm_kernel* k = nullptr;
        std::string message;
        CHECK(fetch(rt.get(), 0, &k, &message) == SDM_ERROR_MISMATCH);
        CHECK_THAT(message, Catch::Contains("the context the host gave for CUDA device 0") && Catch::Contains("belongs to device 1"));
        CHECK(fake_image_loads() == 0);
    }
    SECTION("malformed choices are refused at creation") {
        void* contexts[] = {c0};
        Params params;
        params.p.device_context_count = 1;
        CHECK_THAT(params.refused(), Catch::Contains("device_contexts is NULL"));
        params.p.device_contexts = contexts;
        params.p.device_context_count = 1025;
        CHECK_THAT(params.refused(), Catch::Contains("more than the 1024"));
        params.p.device_context_count = 1;
        params.p.cuda_context = c0;
        CHECK_THAT(params.refused(), Catch::Contains("set one of them"));
        params.p.cuda_context = nullptr;
        params.p.flags |= SDM_RUNTIME_CURRENT_CONTEXT;
        CHECK_THAT(params.refused(), Catch::Contains("set one of them"));
    }
}

TEST_CASE("SDM_RUNTIME_CURRENT_CONTEXT: fetches, preloads and launches follow the calling thread's context", "[context]") {
    fake({kH200, kH200});
    const int64_t host_retains = fake_calls("@contexts");
    Params params;
    params.p.flags |= SDM_RUNTIME_CURRENT_CONTEXT;
    RuntimePtr rt = params.create();
    sdm_kernel* k = nullptr;
    std::string message;
    CHECK(fetch(rt.get(), 0, &k, &message) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(message, Catch::Contains("no CUDA context is current on this thread"));
    (void)fake_host_context(1, true);  // device 1's context current (retained by the test)
    CHECK(fetch(rt.get(), 0, &k, &message) == SDM_ERROR_MISMATCH);
    CHECK_THAT(message, Catch::Contains("belongs to device 1, not device 0"));
    sdm_kernel* in1 = nullptr;
    REQUIRE(fetch(rt.get(), 1, &in1) == SDM_OK);
    CHECK(launch_scale(in1) == SDM_OK);
    fake_pop_context();
    (void)fake_host_context(0, true);  // now device 0's
    CHECK(launch_scale(in1, nullptr, &message) == SDM_ERROR_MISMATCH);  // fetched in device 1's context
    CHECK_THAT(message, Catch::Contains("fetched in another CUDA context than the one current on this thread"));
    sdm_kernel* in0 = nullptr;
    REQUIRE(fetch(rt.get(), 0, &in0) == SDM_OK);
    CHECK(in0 != in1);
    CHECK(launch_scale(in0) == SDM_OK);
    CHECK(fake_calls("@libraries") == 1);  // one image, shared by the two contexts
    CHECK(fake_calls("@contexts") == host_retains + 2);  // the test's two: sdm retained no primary context
    // Preload's workers load into the caller's context.
    mount(rt.get(), make_archive("more", {"sm_90"}, {"axpy"}), "more.sdma");
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(fake_calls("@libraries") == 2);
    fake_pop_context();
    CHECK(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_ERROR_INVALID_ARGUMENT);  // none current
    rt.reset();
    CHECK(fake_calls("@libraries") == 0);
}

TEST_CASE("SDM_RUNTIME_CURRENT_CONTEXT: a context destroyed and made again at the same address is another context, served anew", "[context][hostile]") {
    fake({kH200});
    fake_reset();  // no retain of an earlier test's left: the test's release below is the last
    Params params;
    params.p.flags |= SDM_RUNTIME_CURRENT_CONTEXT;
    RuntimePtr rt = params.create();
    const CUcontext first = fake_host_context(0, true);
    sdm_kernel* before = nullptr;
    REQUIRE(fetch(rt.get(), 0, &before) == SDM_OK);
    CHECK(launch_scale(before) == SDM_OK);
    fake_pop_context();
    fake_release_host_context(0);  // the last retain: the context and what was loaded in it are gone
    const CUcontext second = fake_host_context(0, true);
    REQUIRE(second == first);  // the same address, as a driver may hand out again
    sdm_kernel* after = nullptr;
    REQUIRE(fetch(rt.get(), 0, &after) == SDM_OK);
    CHECK(after != before);  // keyed by the context's id (cuCtxGetId), not its address: not the dead handle
    CHECK(launch_scale(after) == SDM_OK);
    fake_pop_context();
    rt.reset();
}
