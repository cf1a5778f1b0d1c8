// The fake CUDA driver (tests/fake_cuda): loaded with dlopen, every entry point resolved through
// cuGetProcAddress_v2 as sdm's runtime does, configured through sdm_fake_cuda_configure (and, in
// the tests of that grammar, the environment) and cuInit.
#include <catch2/catch.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_config.hpp"
#include "sdm_fake_cuda.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

const FakeDevice kRtx3090{"NVIDIA GeForce RTX 3090", 8, 6, 101376, 82, 6291456};
const FakeDevice kB200{"NVIDIA B200", 10, 0, 232448, 148, 132120576};
const FakeDevice kGb300{"NVIDIA GB300", 10, 3, 232448, 160, 132120576};
const FakeDevice kRtx5090{"NVIDIA GeForce RTX 5090", 12, 0, 101376, 170, 100663296};
// The same rows as the environment writes them (SDM_FAKE_CUDA_DEVICES).
constexpr const char* kH200Row = "NVIDIA H200,9.0,232448,132,62914560";
constexpr const char* kA100Row = "NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040";

#define FAKE_ENTRIES(X)                                                                              \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)        \
    X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                    \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent) X(cuCtxPopCurrent)   \
    X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuModuleLoadData)   \
    X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)             \
    X(cuStreamIsCapturing) X(cuLaunchKernelEx)

// cuda.h's macros map a base name onto its current version (cuDeviceTotalMem -> _v2), so each
// member has the prototype sdm's runtime gets for the base name.
struct Api {
    void* handle{nullptr};
    CUresult (*get_proc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*){nullptr};
    sdm_fake_cuda_configure_fn configure{nullptr};
    sdm_fake_cuda_calls_fn calls{nullptr};
    sdm_fake_cuda_reset_fn reset{nullptr};
#define FAKE_MEMBER(name) decltype(&::name) name{nullptr};
    FAKE_ENTRIES(FAKE_MEMBER)
#undef FAKE_MEMBER
};

const char* const kVariables[] = {"SDM_FAKE_CUDA_DEVICES",     "SDM_FAKE_CUDA_VERSION",   "SDM_FAKE_CUDA_FAIL",
                                  "SDM_FAKE_CUDA_MISSING",     "SDM_FAKE_CUDA_DISABLE_JIT", "SDM_FAKE_CUDA_CAPTURING",
                                  "SDM_FAKE_CUDA_OCCUPANCY",   "SDM_FAKE_CUDA_IMAGE_LOG", "SDM_FAKE_CUDA_RECORD_PARAMS"};

void* lookup(const Api& api, const char* name, CUresult* result = nullptr, CUdriverProcAddressQueryResult* status = nullptr) {
    void* fn = reinterpret_cast<void*>(&lookup);  // must be overwritten
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    const CUresult r = api.get_proc(name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (result) *result = r;
    if (status) *status = st;
    return fn;
}

Api load_api() {
    for (const char* v : kVariables) unsetenv(v);
    const char* path = std::getenv("SDM_FAKE_CUDA_LIB");
    Api api;
    api.handle = dlopen(path && *path ? path : SDM_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!api.handle) FAIL("dlopen: " << dlerror());
    api.get_proc = reinterpret_cast<decltype(api.get_proc)>(dlsym(api.handle, "cuGetProcAddress_v2"));
    api.configure = reinterpret_cast<sdm_fake_cuda_configure_fn>(dlsym(api.handle, "sdm_fake_cuda_configure"));
    api.calls = reinterpret_cast<sdm_fake_cuda_calls_fn>(dlsym(api.handle, "sdm_fake_cuda_calls"));
    api.reset = reinterpret_cast<sdm_fake_cuda_reset_fn>(dlsym(api.handle, "sdm_fake_cuda_reset"));
    if (!api.get_proc || !api.configure || !api.calls || !api.reset) FAIL("the fake driver lacks an export");
#define FAKE_RESOLVE(name)                                                      \
    {                                                                           \
        CUresult r = CUDA_ERROR_UNKNOWN;                                        \
        api.name = reinterpret_cast<decltype(api.name)>(lookup(api, #name, &r)); \
        if (r != CUDA_SUCCESS || !api.name) FAIL("cuGetProcAddress_v2(" #name ") failed");  \
    }
    FAKE_ENTRIES(FAKE_RESOLVE)
#undef FAKE_RESOLVE
    return api;
}

const Api& api() {
    static const Api a = load_api();
    return a;
}

// Makes `config` the fake's configuration, with `devices`; what sdm_fake_cuda_configure returned.
CUresult reconfigure(std::vector<FakeDevice> devices, FakeConfig config = {}) {
    config.devices = std::move(devices);
    return fake_apply(config, api().configure);
}

// A clean driver, then `devices` and the rest of `config`, then cuInit.
CUresult configure(std::vector<FakeDevice> devices, FakeConfig config = {}) {
    api().reset();
    REQUIRE(reconfigure(std::move(devices), std::move(config)) == CUDA_SUCCESS);
    return api().cuInit(0);
}

// A clean driver configured by the environment given (everything else unset), then cuInit.
CUresult configure_env(const char* devices, std::vector<std::pair<const char*, const char*>> extra = {}) {
    const Api& a = api();
    a.reset();
    REQUIRE(a.configure(nullptr) == CUDA_SUCCESS);
    for (const char* v : kVariables) unsetenv(v);
    if (devices) setenv("SDM_FAKE_CUDA_DEVICES", devices, 1);
    for (const auto& [name, value] : extra) setenv(name, value, 1);
    return a.cuInit(0);
}

int device_attribute(CUdevice_attribute attribute, CUdevice dev) {
    int value = -1;
    const CUresult r = api().cuDeviceGetAttribute(&value, attribute, dev);
    INFO("attribute " << attribute);
    REQUIRE(r == CUDA_SUCCESS);
    return value;
}

int function_attribute(CUfunction_attribute attribute, CUfunction f) {
    int value = -1;
    REQUIRE(api().cuFuncGetAttribute(&value, attribute, f) == CUDA_SUCCESS);
    return value;
}

// Retains device `ordinal`'s primary context and makes it current; undoes both at scope end.
struct Current {
    CUcontext ctx{nullptr};
    CUdevice dev{0};
    explicit Current(int ordinal) : dev(ordinal) {
        REQUIRE(api().cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
        REQUIRE(api().cuCtxPushCurrent(ctx) == CUDA_SUCCESS);
    }
    ~Current() {
        CUcontext popped = nullptr;
        api().cuCtxPopCurrent(&popped);
        api().cuDevicePrimaryCtxRelease(dev);
    }
    Current(const Current&) = delete;
    Current& operator=(const Current&) = delete;
};

std::vector<std::byte> text_image(const std::string& text) {
    std::vector<std::byte> bytes(text.size() + 1);
    std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;  // NUL-terminated
}

std::vector<std::byte> ptx_image(const std::string& file) {
    auto bytes = sdm::test::data_file(file);
    bytes.push_back(std::byte{0});
    return bytes;
}

CUresult load(const std::vector<std::byte>& image, CUmodule* module) {
    *module = nullptr;
    return api().cuModuleLoadData(module, image.data());
}

// Loads a data file on `device`; the result code.
CUresult load_on(const FakeDevice& device, const std::string& file) {
    REQUIRE(configure({device}) == CUDA_SUCCESS);
    Current current(0);
    const auto image = file.ends_with(".ptx") ? ptx_image(file) : sdm::test::data_file(file);
    CUmodule module = nullptr;
    const CUresult r = load(image, &module);
    if (r == CUDA_SUCCESS) CHECK(api().cuModuleUnload(module) == CUDA_SUCCESS);
    return r;
}

const char* error_name(CUresult r) {
    const char* name = nullptr;
    return api().cuGetErrorName(r, &name) == CUDA_SUCCESS ? name : "?";
}

// Runs `f` with stderr going to a temporary file; what it wrote.
template <typename F>
std::string capture_stderr(F&& f) {
    std::fflush(stderr);
    FILE* tmp = std::tmpfile();
    REQUIRE(tmp);
    const int saved = dup(2);
    dup2(fileno(tmp), 2);
    f();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string out;
    std::rewind(tmp);
    char buf[512];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, n);
    std::fclose(tmp);
    return out;
}

}  // namespace

TEST_CASE("only the driver's own exports are visible; the rest comes from cuGetProcAddress", "[fake_cuda]") {
    const Api& a = api();
    CHECK(dlsym(a.handle, "cuInit") != nullptr);
    CHECK(dlsym(a.handle, "cuDriverGetVersion") != nullptr);
    CHECK(dlsym(a.handle, "cuGetProcAddress") != nullptr);
    CHECK(dlsym(a.handle, "cuDeviceGetCount") == nullptr);
    CHECK(dlsym(a.handle, "cuModuleLoadData") == nullptr);
    CHECK(dlsym(a.handle, "sdm_fake_cuda_reset") != nullptr);
    CHECK(dlsym(a.handle, "sdm_fake_cuda_configure") != nullptr);
    // The proc table hands out the same function as the export.
    CHECK(lookup(a, "cuInit") == dlsym(a.handle, "cuInit"));

    CUresult r = CUDA_SUCCESS;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    for (const char* name : {"cuNoSuchThing", "cuDeviceTotalMem_v2", "cuMemAllocManaged", ""}) {
        INFO(name);
        CHECK(lookup(a, name, &r, &status) == nullptr);
        CHECK(r == CUDA_ERROR_NOT_FOUND);
        CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    CHECK(lookup(a, "cuGetProcAddress", &r, &status) != nullptr);
    CHECK(r == CUDA_SUCCESS);
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
}

TEST_CASE("device memory for the examples' buffers: host memory, copied in and out", "[fake_cuda]") {
    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    const auto mem_alloc = reinterpret_cast<decltype(&cuMemAlloc)>(lookup(api(), "cuMemAlloc"));
    const auto mem_free = reinterpret_cast<decltype(&cuMemFree)>(lookup(api(), "cuMemFree"));
    const auto htod = reinterpret_cast<decltype(&cuMemcpyHtoD)>(lookup(api(), "cuMemcpyHtoD"));
    const auto dtoh = reinterpret_cast<decltype(&cuMemcpyDtoH)>(lookup(api(), "cuMemcpyDtoH"));
    const auto memset32 = reinterpret_cast<decltype(&cuMemsetD32)>(lookup(api(), "cuMemsetD32"));
    REQUIRE((mem_alloc && mem_free && htod && dtoh && memset32));
    CUdeviceptr d = 0;
    CHECK(mem_alloc(&d, 16) == CUDA_ERROR_INVALID_CONTEXT);  // no current context
    Current current(0);
    REQUIRE(mem_alloc(&d, 16) == CUDA_SUCCESS);
    CHECK(memset32(d, 7u, 4) == CUDA_SUCCESS);
    const uint32_t in[2] = {1, 2};
    CHECK(htod(d + 8, in, sizeof in) == CUDA_SUCCESS);
    uint32_t out[4] = {};
    CHECK(dtoh(out, d, sizeof out) == CUDA_SUCCESS);
    CHECK((out[0] == 7 && out[1] == 7 && out[2] == 1 && out[3] == 2));
    CHECK(mem_alloc(&d, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(mem_free(d) == CUDA_SUCCESS);
}

TEST_CASE("before cuInit only versions, error texts and cuGetProcAddress work", "[fake_cuda]") {
    const Api& a = api();
    a.reset();
    REQUIRE(reconfigure({}, {.driver_version = 12040}) == CUDA_SUCCESS);
    int version = 0;
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12040);  // the configuration as it is, without cuInit
    REQUIRE(reconfigure({}) == CUDA_SUCCESS);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 13000);
    CHECK(a.cuDriverGetVersion(nullptr) == CUDA_ERROR_INVALID_VALUE);

    const char* text = nullptr;
    CHECK(a.cuGetErrorName(CUDA_ERROR_NO_BINARY_FOR_GPU, &text) == CUDA_SUCCESS);
    CHECK(std::string(text) == "CUDA_ERROR_NO_BINARY_FOR_GPU");
    CHECK(a.cuGetErrorString(CUDA_ERROR_INVALID_IMAGE, &text) == CUDA_SUCCESS);
    CHECK(std::string(text) == "device kernel image is invalid");
    CHECK(a.cuGetErrorName(static_cast<CUresult>(123456), &text) == CUDA_ERROR_INVALID_VALUE);
    CHECK(text == nullptr);

    int count = -1;
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
    CUcontext ctx = nullptr;
    CHECK(a.cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(a.cuCtxGetCurrent(&ctx) == CUDA_ERROR_NOT_INITIALIZED);

    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    CHECK(a.cuInit(1) == CUDA_ERROR_INVALID_VALUE);  // flags must be 0; the driver is left uninitialized
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
}

TEST_CASE("device rows and their attributes", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200, kA100, kRtx3090, kGb300}, {.driver_version = 12080}) == CUDA_SUCCESS);
    int count = 0, version = 0;
    REQUIRE(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 4);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12080);

    CUdevice dev = -1;
    CHECK(a.cuDeviceGet(&dev, 3) == CUDA_SUCCESS);
    CHECK(dev == 3);
    CHECK(a.cuDeviceGet(&dev, 4) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDeviceGet(&dev, -1) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDeviceGet(nullptr, 0) == CUDA_ERROR_INVALID_VALUE);

    char name[256];
    CHECK(a.cuDeviceGetName(name, sizeof name, 1) == CUDA_SUCCESS);
    CHECK(std::string(name) == "NVIDIA A100-SXM4-80GB");
    CHECK(a.cuDeviceGetName(name, 7, 0) == CUDA_SUCCESS);
    CHECK(std::string(name) == "NVIDIA");  // truncated, NUL-terminated
    CHECK(a.cuDeviceGetName(name, sizeof name, 9) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDeviceGetName(nullptr, 10, 0) == CUDA_ERROR_INVALID_VALUE);

    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == 9);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0) == 0);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == 132);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0) == 62914560);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0) == 232448);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0) == 233472);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0) == 49152);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) == 1024);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == 32);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 0) == 32);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0) == 1);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1) == 0);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 2) == 0);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 3) == 1);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 1) == 166912);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 2) == 6);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 3) == 10);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 3) == 3);
    int value = 0;
    CHECK(a.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(a.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 4) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == CUDA_ERROR_INVALID_VALUE);

    size_t bytes = 0;
    CHECK(a.cuDeviceTotalMem(&bytes, 2) == CUDA_SUCCESS);
    CHECK(bytes == size_t{80} << 30);
    CHECK(a.cuDeviceTotalMem(&bytes, 4) == CUDA_ERROR_INVALID_DEVICE);

    // A reconfiguration takes effect at the next cuInit.
    REQUIRE(reconfigure({kRtx5090}, {.driver_version = 12080}) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 4);
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == 12);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12080);
    // The version needs no cuInit (hosts ask before theirs), so it is read at each call.
    REQUIRE(reconfigure({kRtx5090}, {.driver_version = 11080}) == CUDA_SUCCESS);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 11080);
}

TEST_CASE("no device: cuInit says CUDA_ERROR_NO_DEVICE, as libcuda does", "[fake_cuda]") {
    CHECK(configure({}) == CUDA_ERROR_NO_DEVICE);
    int count = -1;
    CHECK(api().cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
}

TEST_CASE("a malformed environment fails cuInit and names the culprit on stderr", "[fake_cuda]") {
    const std::pair<std::string, std::string> cases[] = {
        {std::string(kH200Row) + ";NVIDIA H200,9.0,232448,132", "row 2 'NVIDIA H200,9.0,232448,132'"},
        {"NVIDIA H200,9,232448,132,62914560", "row 1"},
        {"NVIDIA H200,9.0,lots,132,62914560", "row 1"},
        {",9.0,232448,132,62914560", "row 1"},
        {"NVIDIA H200,9.0,232448,-4,62914560", "row 1"},
    };
    for (const auto& [devices, expect] : cases) {
        INFO(devices);
        CUresult r = CUDA_SUCCESS;
        const std::string err = capture_stderr([&] { r = configure_env(devices.c_str()); });
        CHECK(r == CUDA_ERROR_INVALID_VALUE);
        CHECK_THAT(err, Catch::Contains(expect) && Catch::Contains("SDM_FAKE_CUDA_DEVICES"));
        int count = -1;
        CHECK(api().cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
    }
    for (const char* fail : {"cuModuleLoadData", "cuNope=2", "cuInit=CUDA_ERROR_BANANA", "cuInit=3@0"}) {
        INFO(fail);
        CUresult r = CUDA_SUCCESS;
        const std::string err = capture_stderr([&] { r = configure_env(kH200Row, {{"SDM_FAKE_CUDA_FAIL", fail}}); });
        CHECK(r == CUDA_ERROR_INVALID_VALUE);
        CHECK_THAT(err, Catch::Contains("SDM_FAKE_CUDA_FAIL"));
    }
    CUresult r = CUDA_SUCCESS;
    CHECK_THAT(capture_stderr([&] { r = configure_env(kH200Row, {{"SDM_FAKE_CUDA_VERSION", "12.8"}}); }),
               Catch::Contains("SDM_FAKE_CUDA_VERSION"));
    CHECK(r == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("the environment: the same configuration, from strings", "[fake_cuda][env]") {
    const Api& a = api();
    CHECK(configure_env(nullptr) == CUDA_ERROR_NO_DEVICE);
    CHECK(configure_env("") == CUDA_ERROR_NO_DEVICE);
    // Spaces around fields, a trailing ';' (no row), codes by name, by number and "throw", names
    // with spaces.
    REQUIRE(configure_env(" NVIDIA H200 , 9.0, 232448,132,62914560 ;NVIDIA GeForce RTX 5090,12.0,101376,170,100663296;",
                          {{"SDM_FAKE_CUDA_VERSION", "12080"},
                           {"SDM_FAKE_CUDA_FAIL", "cuDeviceTotalMem=CUDA_ERROR_OUT_OF_MEMORY, cuDeviceGetCount=46@3,cuCtxSynchronize=throw@1"},
                           {"SDM_FAKE_CUDA_MISSING", "cuStreamIsCapturing, cuModuleLoadDataEx"}}) == CUDA_SUCCESS);
    int count = 0, version = 0;
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 2);
    char name[64];
    CHECK(a.cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS);
    CHECK(std::string(name) == "NVIDIA H200");
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1) == 12);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12080);
    size_t bytes = 0;
    CHECK(a.cuDeviceTotalMem(&bytes, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_DEVICE_UNAVAILABLE);
    CHECK_THROWS_AS(a.cuCtxSynchronize(), std::bad_alloc);
    CHECK(a.cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    CUresult r = CUDA_SUCCESS;
    for (const char* missing : {"cuStreamIsCapturing", "cuModuleLoadDataEx"}) {
        INFO(missing);
        CHECK(lookup(a, missing, &r) == nullptr);
        CHECK(r == CUDA_ERROR_NOT_FOUND);
    }
    // Read at each call: the version, the JIT switch, the capture status.
    setenv("SDM_FAKE_CUDA_VERSION", "11080", 1);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 11080);
    {
        Current current(0);
        const auto ptx = text_image(".version 8.0\n.target sm_80\n.visible .entry k()\n{\n\tret;\n}\n");
        CUmodule m = nullptr;
        setenv("SDM_FAKE_CUDA_DISABLE_JIT", "1", 1);
        CHECK(load(ptx, &m) == CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
        setenv("SDM_FAKE_CUDA_DISABLE_JIT", "0", 1);
        REQUIRE(load(ptx, &m) == CUDA_SUCCESS);
        CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        setenv("SDM_FAKE_CUDA_CAPTURING", "1", 1);
        CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_SUCCESS);
        CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    }
    // The devices at the next cuInit.
    setenv("SDM_FAKE_CUDA_DEVICES", kA100Row, 1);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 2);
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    for (const char* v : kVariables) unsetenv(v);
}

TEST_CASE("sdm_fake_cuda_configure wins over the environment until it is called with NULL", "[fake_cuda][env]") {
    const Api& a = api();
    REQUIRE(configure_env((std::string(kH200Row) + ";" + kA100Row).c_str(), {{"SDM_FAKE_CUDA_VERSION", "12040"}}) == CUDA_SUCCESS);
    REQUIRE(reconfigure({kRtx5090}) == CUDA_SUCCESS);
    int count = 0, version = 0;
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 13000);  // the configuration's default, not the environment's 12040
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    {
        Current current(0);
        setenv("SDM_FAKE_CUDA_CAPTURING", "1", 1);
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_SUCCESS);
        CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    }
    // Nor does a malformed environment matter while a configuration is set, a reset included.
    setenv("SDM_FAKE_CUDA_DEVICES", "not a row", 1);
    CHECK(a.cuInit(0) == CUDA_SUCCESS);
    a.reset();
    CHECK(a.cuInit(0) == CUDA_SUCCESS);
    // NULL: the environment again.
    REQUIRE(a.configure(nullptr) == CUDA_SUCCESS);
    CUresult r = CUDA_SUCCESS;
    CHECK_THAT(capture_stderr([&] { r = a.cuInit(0); }), Catch::Contains("SDM_FAKE_CUDA_DEVICES row 1 'not a row'"));
    CHECK(r == CUDA_ERROR_INVALID_VALUE);
    setenv("SDM_FAKE_CUDA_DEVICES", kA100Row, 1);
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12040);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == 8);
    {
        Current current(0);
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_SUCCESS);
        CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    }
    for (const char* v : kVariables) unsetenv(v);
}

TEST_CASE("an invalid configuration is refused, named on stderr, and changes nothing", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    const std::string long_name(256, 'x');
    const std::pair<FakeConfig, std::string> cases[] = {
        {{.devices = {{"", 9, 0, 232448, 132, 62914560}}}, "device 0 (''"},
        {{.devices = {kH200, {long_name, 9, 0, 232448, 132, 62914560}}}, "device 1"},
        {{.devices = {{"NVIDIA H200", 0, 0, 232448, 132, 62914560}}}, "capability 1.0 to 99.9"},
        {{.devices = {{"NVIDIA H200", 9, 10, 232448, 132, 62914560}}}, "capability 1.0 to 99.9"},
        {{.devices = {{"NVIDIA H200", 9, 0, 0, 132, 62914560}}}, "smem_optin_bytes and sm_count above 0"},
        {{.devices = {{"NVIDIA H200", 9, 0, 232448, 0, 62914560}}}, "smem_optin_bytes and sm_count above 0"},
        {{.devices = {{"NVIDIA H200", 9, 0, 232448, 132, -1}}}, "l2_bytes 0 or more"},
        {{.driver_version = -1}, "driver_version -1"},
        {{.failures = {{"cuNope", CUDA_ERROR_UNKNOWN}}}, "'cuNope' is no entry point of the fake driver"},
        {{.failures = {{"cuInit", CUDA_ERROR_UNKNOWN, -1}}}, "nth -1 is below 0"},
        {{.occupancy = -2}, "occupancy -2 is below 0"},
    };
    for (const auto& [config, expect] : cases) {
        INFO(expect);
        CUresult r = CUDA_SUCCESS;
        const std::string err = capture_stderr([&] { r = fake_apply(config, a.configure); });
        CHECK(r == CUDA_ERROR_INVALID_VALUE);
        CHECK_THAT(err, Catch::Contains("sdm_fake_cuda_configure: ") && Catch::Contains(expect));
    }
    sdm_fake_cuda_config dangling{};
    dangling.device_count = 1;
    CHECK_THAT(capture_stderr([&] { CHECK(a.configure(&dangling) == CUDA_ERROR_INVALID_VALUE); }), Catch::Contains("NULL array"));
    // The H200 configured before is still what cuInit adopts.
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    int count = 0;
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(count == 1);
    CHECK(device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) == 132);
}

TEST_CASE("failure injection: every call, the n-th call, cuInit, even the version and proc-address queries", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}, {.failures = {{"cuDeviceTotalMem", CUDA_ERROR_OUT_OF_MEMORY},
                                             {"cuModuleLoadData", CUDA_ERROR_UNKNOWN, 2},
                                             {"cuDeviceGetCount", CUDA_ERROR_DEVICE_UNAVAILABLE, 3}}}) == CUDA_SUCCESS);
    size_t bytes = 0;
    CHECK(a.cuDeviceTotalMem(&bytes, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(a.cuDeviceTotalMem(&bytes, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(a.calls("cuDeviceTotalMem") == 2);
    int count = 0;
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_DEVICE_UNAVAILABLE);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);

    {
        Current current(0);
        const auto cubin = sdm::test::data_file("kernels.sm_90.cubin");
        CUmodule m1 = nullptr, m2 = nullptr, m3 = nullptr;
        CHECK(load(cubin, &m1) == CUDA_SUCCESS);
        CHECK(load(cubin, &m2) == CUDA_ERROR_UNKNOWN);
        CHECK(m2 == nullptr);
        CHECK(load(cubin, &m3) == CUDA_SUCCESS);
        CHECK(a.cuModuleUnload(m1) == CUDA_SUCCESS);
        CHECK(a.cuModuleUnload(m3) == CUDA_SUCCESS);
    }

    // cuInit adopts the configuration again and restarts the call numbers.
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_DEVICE_UNAVAILABLE);

    // cuInit's own rule applies to the very call that read it.
    CHECK(configure({kH200}, {.failures = {{"cuInit", CUDA_ERROR_NO_DEVICE}}}) == CUDA_ERROR_NO_DEVICE);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(configure({kH200}, {.failures = {{"cuInit", CUDA_ERROR_UNKNOWN, 1}}}) == CUDA_ERROR_UNKNOWN);
    CHECK(configure({kH200}, {.failures = {{"cuInit", CUDA_ERROR_UNKNOWN, 2}}}) == CUDA_SUCCESS);
    // Even the version and proc-address queries can be made to fail.
    CHECK(configure({kH200}, {.failures = {{"cuDriverGetVersion", CUDA_ERROR_STUB_LIBRARY}, {"cuGetProcAddress", CUDA_ERROR_INVALID_VALUE, 1}}}) ==
          CUDA_SUCCESS);
    int version = 0;
    CHECK(a.cuDriverGetVersion(&version) == CUDA_ERROR_STUB_LIBRARY);
    CUresult r = CUDA_SUCCESS;
    lookup(a, "cuInit", &r);
    CHECK(r == CUDA_ERROR_INVALID_VALUE);
    CHECK(lookup(a, "cuInit", &r) != nullptr);
    CHECK(r == CUDA_SUCCESS);
}

TEST_CASE("missing entry points simulate an older driver", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}, {.missing = {"cuStreamIsCapturing", "cuModuleLoadDataEx"}}) == CUDA_SUCCESS);
    CUresult r = CUDA_SUCCESS;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    for (const char* name : {"cuStreamIsCapturing", "cuModuleLoadDataEx"}) {
        INFO(name);
        CHECK(lookup(a, name, &r, &status) == nullptr);
        CHECK(r == CUDA_ERROR_NOT_FOUND);
        CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    CHECK(lookup(a, "cuModuleLoadData", &r, &status) != nullptr);
    CHECK(r == CUDA_SUCCESS);
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
    // A null status pointer is allowed.
    void* fn = nullptr;
    CHECK(a.get_proc("cuStreamIsCapturing", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) == CUDA_ERROR_NOT_FOUND);
    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    CHECK(lookup(a, "cuStreamIsCapturing", &r) != nullptr);
    CHECK(r == CUDA_SUCCESS);
}

TEST_CASE("primary contexts: one per device, refcounted, current per thread", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200, kA100}) == CUDA_SUCCESS);
    CUcontext c0 = nullptr, c0b = nullptr, c1 = nullptr, cur = nullptr;
    REQUIRE(a.cuDevicePrimaryCtxRetain(&c0, 0) == CUDA_SUCCESS);
    REQUIRE(a.cuDevicePrimaryCtxRetain(&c0b, 0) == CUDA_SUCCESS);
    REQUIRE(a.cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS);
    CHECK(c0 == c0b);
    CHECK(c0 != c1);
    CHECK(a.calls("@contexts") == 3);
    CHECK(a.cuDevicePrimaryCtxRetain(&cur, 2) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDevicePrimaryCtxRetain(nullptr, 0) == CUDA_ERROR_INVALID_VALUE);

    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == nullptr);
    CUdevice dev = -1;
    CHECK(a.cuCtxGetDevice(&dev) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(a.cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(a.cuCtxPopCurrent(&cur) == CUDA_ERROR_INVALID_CONTEXT);
    int bogus = 0;
    CHECK(a.cuCtxPushCurrent(reinterpret_cast<CUcontext>(&bogus)) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(a.cuCtxPushCurrent(nullptr) == CUDA_ERROR_INVALID_VALUE);

    REQUIRE(a.cuCtxPushCurrent(c0) == CUDA_SUCCESS);
    REQUIRE(a.cuCtxPushCurrent(c1) == CUDA_SUCCESS);
    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == c1);
    CHECK(a.cuCtxGetDevice(&dev) == CUDA_SUCCESS);
    CHECK(dev == 1);
    CHECK(a.cuCtxSynchronize() == CUDA_SUCCESS);

    // Another thread has its own, empty stack.
    CUresult other_get = CUDA_ERROR_UNKNOWN, other_device = CUDA_SUCCESS;
    CUcontext other = c0;
    std::thread([&] {
        other_get = a.cuCtxGetCurrent(&other);
        CUdevice d = 0;
        other_device = a.cuCtxGetDevice(&d);
    }).join();
    CHECK(other_get == CUDA_SUCCESS);
    CHECK(other == nullptr);
    CHECK(other_device == CUDA_ERROR_INVALID_CONTEXT);

    CHECK(a.cuCtxPopCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == c1);
    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == c0);
    CHECK(a.cuCtxSetCurrent(c1) == CUDA_SUCCESS);  // replaces the top
    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == c1);
    CHECK(a.cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);  // pops
    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == nullptr);
    CHECK(a.cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);  // nothing to pop: no-op
    CHECK(a.cuCtxPopCurrent(nullptr) == CUDA_ERROR_INVALID_CONTEXT);

    // cuInit adopts the configuration again but keeps live contexts.
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.calls("@contexts") == 3);
    REQUIRE(a.cuDevicePrimaryCtxRetain(&cur, 0) == CUDA_SUCCESS);
    CHECK(cur == c0);

    CHECK(a.cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CHECK(a.cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CHECK(a.cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS);
    CHECK(a.calls("@contexts") == 1);
    CHECK(a.cuDevicePrimaryCtxRelease(1) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(a.cuDevicePrimaryCtxRelease(5) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(a.cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CHECK(a.calls("@contexts") == 0);

    // A released primary context may still be current, but is destroyed for any work.
    REQUIRE(a.cuCtxPushCurrent(c0) == CUDA_SUCCESS);
    CHECK(a.cuCtxSynchronize() == CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CUmodule m = nullptr;
    CHECK(load(sdm::test::data_file("kernels.sm_90.cubin"), &m) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK(a.cuCtxPopCurrent(nullptr) == CUDA_SUCCESS);
}

TEST_CASE("cubins load where the real driver would run them", "[fake_cuda]") {
    CHECK(load_on(kRtx3090, "kernels.sm_80.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kA100, "kernels.sm_80.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kH200, "kernels.sm_80.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(load_on(kA100, "kernels.sm_86.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(load_on(kH200, "kernels.sm_90.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kH200, "kernels.sm_90a.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kB200, "kernels.sm_90a.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(load_on(kRtx3090, "kernels.sm_90a.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(load_on(kB200, "kernels.sm_100f.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kGb300, "kernels.sm_100f.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kRtx5090, "kernels.sm_100f.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(load_on(kRtx5090, "kernels.sm_120.cubin") == CUDA_SUCCESS);
    CHECK(load_on(kB200, "kernels.sm_120.cubin") == CUDA_ERROR_NO_BINARY_FOR_GPU);
}

TEST_CASE("a module's kernels, and its PTX and binary versions", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200, kRtx3090}) == CUDA_SUCCESS);
    struct Case {
        int ordinal;
        const char* file;
        int ptx_version;
        int binary_version;
    };
    const Case cases[] = {{0, "kernels.sm_90a.cubin", 90, 90},
                          {0, "kernels.compute_80.ptx", 80, 90},  // old-arch PTX JIT-compiled on an H200
                          {0, "kernels.compute_90.ptx", 90, 90},
                          {1, "kernels.sm_80.cubin", 80, 80},
                          {1, "kernels.sm_86.cubin", 86, 86},
                          {1, "kernels.compute_80.ptx", 80, 86}};
    for (const auto& c : cases) {
        INFO(c.file << " on device " << c.ordinal);
        Current current(c.ordinal);
        const std::string file = c.file;
        const auto image = file.ends_with(".ptx") ? ptx_image(file) : sdm::test::data_file(file);
        CUmodule m = nullptr;
        REQUIRE(load(image, &m) == CUDA_SUCCESS);
        CHECK(a.calls("@modules") == 1);
        CUfunction scale = nullptr, axpy = nullptr, again = nullptr, nope = nullptr;
        REQUIRE(a.cuModuleGetFunction(&scale, m, "scale") == CUDA_SUCCESS);
        REQUIRE(a.cuModuleGetFunction(&axpy, m, "axpy") == CUDA_SUCCESS);
        CHECK(scale != axpy);
        CHECK(a.cuModuleGetFunction(&again, m, "scale") == CUDA_SUCCESS);
        CHECK(again == scale);
        CHECK(a.cuModuleGetFunction(&nope, m, "nope") == CUDA_ERROR_NOT_FOUND);
        CHECK(a.cuModuleGetFunction(&nope, m, nullptr) == CUDA_ERROR_INVALID_VALUE);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION, scale) == c.ptx_version);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION, axpy) == c.binary_version);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, scale) == 1024);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_NUM_REGS, scale) == 32);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, scale) == 0);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, scale) == 136);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, scale) == 24);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, scale) == 1);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, scale) == 49152);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, scale) == -1);
        CHECK(function_attribute(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, scale) == 4);
        int value = 0;
        CHECK(a.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX, scale) == CUDA_ERROR_INVALID_VALUE);
        CHECK(a.cuFuncGetAttribute(nullptr, CU_FUNC_ATTRIBUTE_NUM_REGS, scale) == CUDA_ERROR_INVALID_VALUE);

        // Unloading invalidates the module and its functions.
        REQUIRE(a.cuModuleUnload(m) == CUDA_SUCCESS);
        CHECK(a.calls("@modules") == 0);
        CHECK(a.cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE);
        CHECK(a.cuModuleGetFunction(&again, m, "scale") == CUDA_ERROR_INVALID_HANDLE);
        CHECK(a.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, scale) == CUDA_ERROR_INVALID_HANDLE);
    }
}

TEST_CASE("the parameter buffer of the last launch, laid out by the image's parameter table", "[fake_cuda]") {
    const Api& a = api();
    a.reset();
    const auto last_params = reinterpret_cast<sdm_fake_cuda_last_params_fn>(dlsym(a.handle, "sdm_fake_cuda_last_params"));
    REQUIRE(last_params != nullptr);
    size_t size = 0;
    CHECK(last_params(nullptr, 0, &size) == CUDA_ERROR_NOT_FOUND);  // no launch yet
    REQUIRE(configure({kH200}, {.record_params = true}) == CUDA_SUCCESS);
    Current current(0);
    // mixed(char, double, int, long long, Odd (3 bytes), Wide (16, aligned 8), void*), from the cubin's
    // EIATTR_KPARAM_INFO and from the PTX's .param list: the same 64-byte buffer.
    for (const std::string file : {"params.sm_90.cubin", "params.compute_90.ptx"}) {
        INFO(file);
        CUmodule m = nullptr;
        REQUIRE(load(file.ends_with(".ptx") ? ptx_image(file) : sdm::test::data_file(file), &m) == CUDA_SUCCESS);
        CUfunction mixed = nullptr;
        REQUIRE(a.cuModuleGetFunction(&mixed, m, "mixed") == CUDA_SUCCESS);
        char c = 'c';
        double d = 2.5;
        int32_t i = -7;
        int64_t l = int64_t{1} << 40;
        const char odd[3] = {'x', 'y', 'z'};
        unsigned char wide[16];
        for (int k = 0; k < 16; ++k) wide[k] = static_cast<unsigned char>(0xa0 + k);
        void* p = reinterpret_cast<void*>(uintptr_t{0x7f0000001000});
        void* params[] = {&c, &d, &i, &l, const_cast<char*>(odd), wide, &p};
        CUlaunchConfig config{};
        config.gridDimX = config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = config.blockDimY = config.blockDimZ = 1;
        REQUIRE(a.cuLaunchKernelEx(&config, mixed, params, nullptr) == CUDA_SUCCESS);
        std::vector<unsigned char> expected(64, 0);
        std::memcpy(&expected[0], &c, 1);
        std::memcpy(&expected[8], &d, 8);
        std::memcpy(&expected[16], &i, 4);
        std::memcpy(&expected[24], &l, 8);
        std::memcpy(&expected[32], odd, 3);
        std::memcpy(&expected[40], wide, 16);
        std::memcpy(&expected[56], &p, 8);
        REQUIRE(last_params(nullptr, 0, &size) == CUDA_SUCCESS);
        CHECK(size == 64);
        std::vector<unsigned char> got(size);
        REQUIRE(last_params(got.data(), got.size(), nullptr) == CUDA_SUCCESS);
        CHECK(got == expected);
        // The buffer as `extra` gives it (CU_LAUNCH_PARAM_BUFFER_POINTER), taken as it is.
        std::vector<unsigned char> buffer(expected.rbegin(), expected.rend());
        size_t buffer_size = buffer.size();
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size, CU_LAUNCH_PARAM_END};
        REQUIRE(a.cuLaunchKernelEx(&config, mixed, nullptr, extra) == CUDA_SUCCESS);
        std::vector<unsigned char> first(4);
        REQUIRE(last_params(first.data(), first.size(), &size) == CUDA_SUCCESS);  // a short buffer gets the first bytes
        CHECK(size == 64);
        CHECK(first == std::vector<unsigned char>(buffer.begin(), buffer.begin() + 4));
        REQUIRE(a.cuModuleUnload(m) == CUDA_SUCCESS);
    }
    // Off (the default): a launch records no parameters, as it reads none.
    REQUIRE(reconfigure({kH200}) == CUDA_SUCCESS);
    CUmodule m = nullptr;
    REQUIRE(load(sdm::test::data_file("params.sm_90.cubin"), &m) == CUDA_SUCCESS);
    CUfunction none = nullptr;
    REQUIRE(a.cuModuleGetFunction(&none, m, "no_params") == CUDA_SUCCESS);
    CUlaunchConfig config{};
    config.gridDimX = config.gridDimY = config.gridDimZ = config.blockDimX = config.blockDimY = config.blockDimZ = 1;
    REQUIRE(a.cuLaunchKernelEx(&config, none, nullptr, nullptr) == CUDA_SUCCESS);
    CHECK(last_params(nullptr, 0, &size) == CUDA_ERROR_NOT_FOUND);
    REQUIRE(a.cuModuleUnload(m) == CUDA_SUCCESS);
}

TEST_CASE("module loading refuses what the real driver refuses", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200, kB200, kRtx3090}) == CUDA_SUCCESS);
    const auto cubin = sdm::test::data_file("kernels.sm_90.cubin");
    CUmodule m = nullptr;
    CHECK(load(cubin, &m) == CUDA_ERROR_INVALID_CONTEXT);  // no current context

    {
        Current current(0);
        CHECK(a.cuModuleLoadData(nullptr, cubin.data()) == CUDA_ERROR_INVALID_VALUE);
        CHECK(a.cuModuleLoadData(&m, nullptr) == CUDA_ERROR_INVALID_VALUE);
        CHECK(a.cuModuleUnload(reinterpret_cast<CUmodule>(&m)) == CUDA_ERROR_INVALID_HANDLE);

        // The size comes from the ELF headers: bytes after the image do not matter.
        auto padded = cubin;
        padded.resize(cubin.size() + 4096, std::byte{0xa5});
        REQUIRE(load(padded, &m) == CUDA_SUCCESS);
        CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);

        auto damaged = cubin;
        sdm::store_u16(damaged, 18, 62);  // e_machine x86-64
        CHECK(load(damaged, &m) == CUDA_ERROR_INVALID_IMAGE);
        damaged = cubin;
        sdm::store_u64(damaged, 40, uint64_t{1} << 40);  // section headers far away
        CHECK(load(damaged, &m) == CUDA_ERROR_INVALID_IMAGE);

        CHECK(load(sdm::test::data_file("kernels.fatbin"), &m) == CUDA_ERROR_INVALID_IMAGE);
        CHECK(load(sdm::test::data_file("kernels.lto_90.ltoir"), &m) == CUDA_ERROR_INVALID_IMAGE);
        CHECK(load(text_image(""), &m) == CUDA_ERROR_INVALID_IMAGE);
        CHECK(load(text_image("just some words\n"), &m) == CUDA_ERROR_INVALID_PTX);
        CHECK(load(text_image(".version 8.0\n.target compute_80\n"), &m) == CUDA_ERROR_INVALID_PTX);
        CHECK(m == nullptr);

        // PTX targets: base up to the device's arch, `a` exactly, `f` within the family.
        const auto ptx = [](const char* target) {
            return text_image(".version 8.0\n.target " + std::string(target) +
                              "\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n");
        };
        const std::pair<const char*, CUresult> on_h200[] = {
            {"sm_80", CUDA_SUCCESS},   {"sm_90", CUDA_SUCCESS},
            {"sm_90a", CUDA_SUCCESS},  {"sm_100", CUDA_ERROR_NO_BINARY_FOR_GPU},
            {"sm_86a", CUDA_ERROR_NO_BINARY_FOR_GPU}, {"sm_100f", CUDA_ERROR_NO_BINARY_FOR_GPU}};
        for (const auto& [target, expect] : on_h200) {
            INFO(target);
            m = nullptr;
            CHECK(load(ptx(target), &m) == expect);
            if (m) CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
        }
        Current b200(1);
        for (const auto& [target, expect] : {std::pair{"sm_100f", CUDA_SUCCESS}, std::pair{"sm_90a", CUDA_ERROR_NO_BINARY_FOR_GPU},
                                             std::pair{"sm_90", CUDA_SUCCESS}, std::pair{"sm_103f", CUDA_ERROR_NO_BINARY_FOR_GPU}}) {
            INFO(target << " on a B200");
            m = nullptr;
            CHECK(load(ptx(target), &m) == expect);
            if (m) CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
        }
    }
    CHECK(a.calls("@modules") == 0);
}

TEST_CASE("the PTX ISA must be one the configured driver's JIT knows", "[fake_cuda]") {
    const auto ptx80 = ptx_image("kernels.compute_80.ptx");  // .version 9.0 (CUDA 13.0)
    const auto isa = [](const char* version) {
        return text_image(".version " + std::string(version) + "\n.target sm_80\n.visible .entry k()\n{\n\tret;\n}\n");
    };
    struct Case {
        int driver;
        const char* ptx_isa;
        CUresult expect;
    };
    const Case cases[] = {{13000, "9.0", CUDA_SUCCESS},
                          {12090, "9.0", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {12090, "8.8", CUDA_SUCCESS},
                          {12080, "8.8", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {12080, "8.7", CUDA_SUCCESS},
                          {12060, "8.5", CUDA_SUCCESS},
                          {12060, "8.6", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {12040, "8.4", CUDA_SUCCESS},
                          {12040, "8.5", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {12000, "8.0", CUDA_SUCCESS},
                          {12000, "8.1", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {11080, "7.8", CUDA_SUCCESS},
                          {11080, "8.0", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
                          {13010, "9.1", CUDA_SUCCESS}};
    const Api& a = api();
    for (const auto& c : cases) {
        INFO("driver " << c.driver << ", PTX ISA " << c.ptx_isa);
        REQUIRE(configure({kH200}, {.driver_version = c.driver}) == CUDA_SUCCESS);
        Current current(0);
        CUmodule m = nullptr;
        CHECK(load(isa(c.ptx_isa), &m) == c.expect);
        if (m) CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
    }

    REQUIRE(configure({kH200}, {.driver_version = 12040}) == CUDA_SUCCESS);
    Current current(0);
    CUmodule m = nullptr;
    CHECK(load(ptx80, &m) == CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    CHECK(load(sdm::test::data_file("kernels.sm_90.cubin"), &m) == CUDA_SUCCESS);  // cubins need no JIT
    CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
}

TEST_CASE("disable_jit: no PTX loads, from the next call on", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}, {.disable_jit = true}) == CUDA_SUCCESS);
    Current current(0);
    CUmodule m = nullptr;
    CHECK(load(ptx_image("kernels.compute_90.ptx"), &m) == CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
    REQUIRE(load(sdm::test::data_file("kernels.sm_90.cubin"), &m) == CUDA_SUCCESS);
    CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
    REQUIRE(reconfigure({kH200}) == CUDA_SUCCESS);  // no cuInit needed
    REQUIRE(load(ptx_image("kernels.compute_90.ptx"), &m) == CUDA_SUCCESS);
    CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
}

TEST_CASE("cuModuleLoadDataEx writes the failure into the error log buffer", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}, {.driver_version = 12040}) == CUDA_SUCCESS);
    Current current(0);
    char log[1024];
    std::memset(log, 'x', sizeof log);
    char info[64];
    std::memset(info, 'x', sizeof info);
    CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {reinterpret_cast<void*>(uintptr_t{4}), log, reinterpret_cast<void*>(uintptr_t{sizeof log}), info,
                      reinterpret_cast<void*>(uintptr_t{sizeof info})};
    const auto ptx = ptx_image("kernels.compute_80.ptx");
    CUmodule m = nullptr;
    CHECK(a.cuModuleLoadDataEx(&m, ptx.data(), 5, options, values) == CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    const std::string text = log;
    CHECK_THAT(text, Catch::Contains("Unsupported .version 9.0") && Catch::Contains("'8.4'"));
    CHECK(reinterpret_cast<uintptr_t>(values[2]) == text.size());
    CHECK(info[0] == '\0');

    // Capped at the buffer's size, NUL included.
    char small[8];
    CUjit_option small_options[] = {CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER};
    void* small_values[] = {reinterpret_cast<void*>(uintptr_t{sizeof small}), small};
    CHECK(a.cuModuleLoadDataEx(&m, ptx.data(), 2, small_options, small_values) ==
          CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    CHECK(std::string(small) == text.substr(0, 7));
    CHECK(reinterpret_cast<uintptr_t>(small_values[0]) == 7);

    // A cubin for another arch, and a success, which leaves an empty log.
    values[2] = reinterpret_cast<void*>(uintptr_t{sizeof log});
    const auto sm80 = sdm::test::data_file("kernels.sm_80.cubin");
    CHECK(a.cuModuleLoadDataEx(&m, sm80.data(), 5, options, values) == CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK_THAT(std::string(log), Catch::Contains("sm_80") && Catch::Contains("NVIDIA H200") && Catch::Contains("9.0"));
    values[2] = reinterpret_cast<void*>(uintptr_t{sizeof log});
    const auto sm90 = sdm::test::data_file("kernels.sm_90.cubin");
    REQUIRE(a.cuModuleLoadDataEx(&m, sm90.data(), 5, options, values) == CUDA_SUCCESS);
    CHECK(log[0] == '\0');
    CHECK(reinterpret_cast<uintptr_t>(values[2]) == 0);
    CHECK(a.cuModuleUnload(m) == CUDA_SUCCESS);
    CHECK(a.cuModuleLoadDataEx(&m, sm90.data(), 1, nullptr, values) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("stream capture status", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_ERROR_INVALID_CONTEXT);
    Current current(0);
    CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_SUCCESS);
    CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(a.cuStreamIsCapturing(nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(reconfigure({kH200}, {.capturing = true}) == CUDA_SUCCESS);  // read at each call
    CHECK(a.cuStreamIsCapturing(nullptr, &status) == CUDA_SUCCESS);
    CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
}

TEST_CASE("call counters restart at cuInit", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200, kA100}) == CUDA_SUCCESS);
    CHECK(a.calls("cuInit") == 1);
    CHECK(a.calls("cuDeviceGetCount") == 0);
    int count = 0;
    for (int i = 0; i < 3; ++i) CHECK(a.cuDeviceGetCount(&count) == CUDA_SUCCESS);
    CHECK(a.cuDeviceGetCount(nullptr) == CUDA_ERROR_INVALID_VALUE);  // failed calls count too
    CHECK(a.calls("cuDeviceGetCount") == 4);
    {
        Current current(1);
        CUmodule m = nullptr;
        CHECK(load(sdm::test::data_file("kernels.sm_80.cubin"), &m) == CUDA_SUCCESS);
        CHECK(a.calls("cuModuleLoadData") == 1);
        CHECK(a.calls("cuModuleLoadDataEx") == 0);
        CHECK(a.calls("@modules") == 1);
        // The last release of a primary context destroys its modules.
    }
    CHECK(a.calls("@modules") == 0);
    CHECK(a.calls("@contexts") == 0);
    CHECK(a.calls("cuDevicePrimaryCtxRetain") == 1);
    CHECK(a.calls("cuDevicePrimaryCtxRelease") == 1);
    lookup(a, "cuDeviceGet");
    CHECK(a.calls("cuGetProcAddress") == 1);
    CHECK(a.calls("cuNoSuchThing") == -1);
    CHECK(a.calls(nullptr) == -1);

    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CHECK(a.calls("cuInit") == 1);
    CHECK(a.calls("cuDeviceGetCount") == 0);
    CHECK(a.calls("cuModuleLoadData") == 0);
    a.reset();
    CHECK(a.calls("cuInit") == 0);
    CHECK(a.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(a.calls("cuDeviceGetCount") == 1);
    CHECK(std::string(error_name(CUDA_ERROR_NOT_INITIALIZED)) == "CUDA_ERROR_NOT_INITIALIZED");
}

TEST_CASE("reset forgets modules, contexts and the thread's stack", "[fake_cuda]") {
    const Api& a = api();
    REQUIRE(configure({kH200}) == CUDA_SUCCESS);
    CUcontext ctx = nullptr;
    REQUIRE(a.cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    REQUIRE(a.cuCtxPushCurrent(ctx) == CUDA_SUCCESS);
    CUmodule m = nullptr;
    REQUIRE(load(sdm::test::data_file("kernels.sm_90.cubin"), &m) == CUDA_SUCCESS);
    CUfunction f = nullptr;
    REQUIRE(a.cuModuleGetFunction(&f, m, "axpy") == CUDA_SUCCESS);
    a.reset();
    CHECK(a.calls("@modules") == 0);
    CHECK(a.calls("@contexts") == 0);
    REQUIRE(a.cuInit(0) == CUDA_SUCCESS);
    CUcontext cur = ctx;
    CHECK(a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CHECK(cur == nullptr);
    CHECK(a.cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE);
    int value = 0;
    CHECK(a.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_ERROR_INVALID_HANDLE);
}
