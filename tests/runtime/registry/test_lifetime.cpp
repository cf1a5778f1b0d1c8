// What the C ABI's objects need of their runtime after sdm_runtime_destroy (include/sdm/sdm.h,
// docs/ABI.md, "Lifetimes"): a kernel list is a snapshot sharing only the runtime's error slot, so
// every call on it, a failing one included (its error recorded), stays valid and touches no freed
// memory; an sdm_error (a call's, or sdm_runtime_last_error's) owns its strings. Run under ASan in
// ./run.sh test's sanitizer stage, where a use of freed memory fails.
#include <catch2/catch.hpp>

#include <string>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

TEST_CASE_METHOD(FakeRuntime, "a kernel list outlives its runtime: reads and failures after sdm_runtime_destroy", "[lifetime]") {
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(rt.get(), SDM_LIST_SERVED, &list, nullptr) == SDM_OK);
    rt.reset();
    uint32_t count = 0;
    REQUIRE(sdm_kernel_list_count(list, &count, nullptr) == SDM_OK);
    CHECK(count == 2);
    sdm_kernel_entry entry{};
    entry.struct_size = sizeof entry;
    REQUIRE(sdm_kernel_list_get(list, 0, &entry, nullptr) == SDM_OK);
    CHECK(std::string(entry.name) == "axpy");
    CHECK(std::string(entry.module) == "kernels");
    sdm_error* e = nullptr;  // a failure records into the error slot the list shares
    CHECK(sdm_kernel_list_get(list, 7, &entry, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("index 7 past the list's 2 entries"));
    sdm_error_destroy(e);
    CHECK(sdm_kernel_list_count(list, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_kernel_list_destroy(list);
}

TEST_CASE_METHOD(FakeRuntime, "a kernel list's failure reaches its live runtime's last error", "[lifetime]") {
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(rt.get(), SDM_LIST_SERVED, &list, nullptr) == SDM_OK);
    sdm_kernel_entry entry{};
    entry.struct_size = sizeof entry;
    CHECK(sdm_kernel_list_get(list, 5, &entry, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error* last = nullptr;
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    CHECK_THAT(sdm_error_message(last), Catch::Contains("sdm_kernel_list_get: index 5 past the list's 2 entries"));
    sdm_error_destroy(last);
    sdm_kernel_list_destroy(list);
}

TEST_CASE_METHOD(FakeRuntime, "errors outlive their runtime", "[lifetime]") {
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "kernels.sdma");
    sdm_error* e = nullptr;
    sdm_kernel* k = nullptr;
    REQUIRE(sdm_kernel_get(rt.get(), 0, "absent", nullptr, &k, &e) == SDM_ERROR_NOT_FOUND);
    sdm_error* last = nullptr;
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    rt.reset();
    CHECK(sdm_error_code(e) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("absent"));
    CHECK(std::string(sdm_error_message(last)) == sdm_error_message(e));
    sdm_error_destroy(e);
    sdm_error_destroy(last);
}
