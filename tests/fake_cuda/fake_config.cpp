#include "fake_config.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <utility>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace sdm::test {

CUresult fake_apply(const FakeConfig& config, sdm_fake_cuda_configure_fn configure) {
    std::vector<sdm_fake_cuda_device> devices;
    for (const auto& d : config.devices)
        devices.push_back({d.name.c_str(), d.capability_major, d.capability_minor, d.smem_optin_bytes, d.sm_count, d.l2_bytes});
    std::vector<sdm_fake_cuda_failure> failures;
    for (const auto& f : config.failures) failures.push_back({f.entry_point.c_str(), f.code, f.throws ? 1 : 0, f.nth});
    std::vector<const char*> missing;
    for (const auto& name : config.missing) missing.push_back(name.c_str());
    sdm_fake_cuda_config c{};
    c.devices = devices.data();
    c.device_count = devices.size();
    c.driver_version = config.driver_version;
    c.failures = failures.data();
    c.failure_count = failures.size();
    c.missing = missing.data();
    c.missing_count = missing.size();
    c.disable_jit = config.disable_jit ? 1 : 0;
    c.capturing = config.capturing ? 1 : 0;
    c.force_occupancy = config.occupancy.has_value() ? 1 : 0;
    c.occupancy = config.occupancy.value_or(0);
    c.image_log = config.image_log.c_str();
    c.hold_work = config.hold_work ? 1 : 0;
    c.record_params = config.record_params ? 1 : 0;
    c.hold_loads = config.hold_loads ? 1 : 0;
    return static_cast<CUresult>(configure(&c));
}

void* fake_symbol(const char* name) {
#ifdef _WIN32
    HMODULE lib = LoadLibraryA(SDM_FAKE_CUDA_PATH);  // nvcuda.dll, the one libsdm loads by the same path
    REQUIRE(lib != nullptr);
    void* symbol = reinterpret_cast<void*>(GetProcAddress(lib, name));
#else
    void* lib = dlopen(SDM_FAKE_CUDA_PATH, RTLD_NOW);
    REQUIRE(lib != nullptr);
    void* symbol = dlsym(lib, name);
#endif
    REQUIRE(symbol != nullptr);
    return symbol;  // the fake is linked -z nodelete (a DLL stays while a reference is left): the handle may be dropped
}

namespace {

// What fake_configure applied last; the shorthands change it.
FakeConfig& applied() {
    static FakeConfig config;
    return config;
}

void apply_again() {
    REQUIRE(fake_apply(applied(), reinterpret_cast<sdm_fake_cuda_configure_fn>(fake_symbol("sdm_fake_cuda_configure"))) == CUDA_SUCCESS);
}

}  // namespace

void fake_configure(FakeConfig config) {
    applied() = std::move(config);
    apply_again();
}

void fake(std::vector<FakeDevice> devices) { fake_configure({.devices = std::move(devices)}); }

void fake_fail(const char* entry_point, CUresult code, int64_t nth) {
    applied().failures.push_back({entry_point, code, nth, false});
    apply_again();
}

void fake_throw(const char* entry_point, int64_t nth) {
    applied().failures.push_back({entry_point, CUDA_SUCCESS, nth, true});
    apply_again();
}

void fake_clear_failures() {
    applied().failures.clear();
    apply_again();
}

void fake_set_disable_jit(bool disable) {
    applied().disable_jit = disable;
    apply_again();
}

void fake_set_capturing(bool capturing) {
    applied().capturing = capturing;
    apply_again();
}

void fake_set_occupancy(std::optional<int> blocks) {
    applied().occupancy = blocks;
    apply_again();
}

void fake_set_hold_work(bool hold) {
    applied().hold_work = hold;
    apply_again();
}

void fake_set_hold_loads(bool hold) {
    applied().hold_loads = hold;
    apply_again();
}

void fake_release_loads(int64_t count) { reinterpret_cast<sdm_fake_cuda_release_loads_fn>(fake_symbol("sdm_fake_cuda_release_loads"))(count); }

void fake_wait_held_loads(int64_t count) {
    // Not a timing assertion: the bound only turns a hang (a load that never comes) into a failure.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (fake_calls("@held_loads") < count && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(fake_calls("@held_loads") >= count);
}

void fake_set_record_params(bool record) {
    applied().record_params = record;
    apply_again();
}

int64_t fake_calls(const char* what) { return reinterpret_cast<sdm_fake_cuda_calls_fn>(fake_symbol("sdm_fake_cuda_calls"))(what); }

int64_t fake_image_loads() { return fake_calls("cuLibraryLoadData") + fake_calls("cuModuleLoadData"); }

sdm_fake_cuda_launch fake_last_launch() {
    sdm_fake_cuda_launch l{};
    REQUIRE(reinterpret_cast<sdm_fake_cuda_last_launch_fn>(fake_symbol("sdm_fake_cuda_last_launch"))(&l) == CUDA_SUCCESS);
    return l;
}

std::vector<unsigned char> fake_last_params() {
    const auto last_params = reinterpret_cast<sdm_fake_cuda_last_params_fn>(fake_symbol("sdm_fake_cuda_last_params"));
    size_t size = 0;
    REQUIRE(last_params(nullptr, 0, &size) == CUDA_SUCCESS);
    std::vector<unsigned char> buffer(size);
    REQUIRE(last_params(buffer.data(), buffer.size(), nullptr) == CUDA_SUCCESS);
    return buffer;
}

void fake_finish_work() { reinterpret_cast<sdm_fake_cuda_finish_work_fn>(fake_symbol("sdm_fake_cuda_finish_work"))(); }

namespace {

template <typename Fn>
Fn fake_entry(const char* name) {
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    void* fn = nullptr;
    REQUIRE(reinterpret_cast<GetProc>(fake_symbol("cuGetProcAddress_v2"))(name, &fn, 12000, 0, nullptr) == CUDA_SUCCESS);
    return reinterpret_cast<Fn>(fn);
}

}  // namespace

CUcontext fake_host_context(int ordinal, bool push) {
    CUcontext context = nullptr;
    if (fake_entry<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&context, ordinal) == CUDA_ERROR_NOT_INITIALIZED) {
        REQUIRE(reinterpret_cast<decltype(&::cuInit)>(fake_symbol("cuInit"))(0) == CUDA_SUCCESS);
        REQUIRE(fake_entry<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&context, ordinal) == CUDA_SUCCESS);
    }
    REQUIRE(context != nullptr);
    if (push) REQUIRE(fake_entry<decltype(&::cuCtxPushCurrent)>("cuCtxPushCurrent")(context) == CUDA_SUCCESS);
    return context;
}

void fake_release_host_context(int ordinal) {
    REQUIRE(fake_entry<decltype(&::cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease")(ordinal) == CUDA_SUCCESS);
}

void fake_pop_context() {
    CUcontext popped = nullptr;
    REQUIRE(fake_entry<decltype(&::cuCtxPopCurrent)>("cuCtxPopCurrent")(&popped) == CUDA_SUCCESS);
}

void fake_reset() { reinterpret_cast<sdm_fake_cuda_reset_fn>(fake_symbol("sdm_fake_cuda_reset"))(); }

}  // namespace sdm::test
