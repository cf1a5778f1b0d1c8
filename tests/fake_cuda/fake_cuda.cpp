// A fake CUDA driver for machines without a GPU: enough of the Driver API for sdm's runtime
// (devices, primary contexts, module loading, function attributes), configured through
// sdm_fake_cuda_configure or by environment variables, with failures injectable per entry point.
// Modules are checked the way the real driver checks them, with sdm's own image parsers: a cubin
// must match the device's SM (a and f variants included), PTX must target an arch the device can
// JIT for, in an ISA the configured driver version knows. Nothing runs: there is no memory and no
// stream; cuLaunchKernel only checks that the function's module is still loaded.
// Graphs: a stream in capture (cuStreamBeginCapture) records its launches into its graph instead
// of running them; a graph and each executable graph instantiated from it hold the graph's user
// objects, whose destructors run (on another thread, after the call's lock is let go) when the
// last reference goes; cuGraphLaunch fails for a kernel whose module was unloaded.
//
// Like libcuda, it exports cuGetProcAddress(_v2), cuInit and cuDriverGetVersion; every other
// entry point is reachable only through cuGetProcAddress, by its base name ("cuCtxPushCurrent",
// not "cuCtxPushCurrent_v2"). Types and enum values come from the toolkit's cuda.h. The test
// helpers and the configuration are documented in sdm_fake_cuda.h.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "runtime/platform/driver_entry_points.hpp"
#include "common/digest.hpp"
#include "common/hash.hpp"
#include "archive/image.hpp"
#include "archive/kernel_params.hpp"
#include "sdm_fake_cuda.h"

#define SDM_FAKE_EXPORT __attribute__((visibility("default")))

// Handles are pointers to these: cuda.h only declares the structs, the driver defines them.
struct CUctx_st {
    int device{0};
    int refcount{0};  // primary context retains; 0: inactive (its modules are gone)
    uint64_t id{0};   // cuCtxGetId: new each time it becomes active, as a context the driver creates again
};
struct CUfunc_st;
struct CUmod_st {
    CUctx_st* context{nullptr};
    int device{0};
    std::vector<std::string> kernels;
    int binary_version{0};  // cubin: its SM; PTX: the device's major*10+minor
    int ptx_version{0};     // cubin: its SM; PTX: its .target arch
    std::map<std::string, std::unique_ptr<CUfunc_st>, std::less<>> functions;
    // Each kernel's parameters as sdm derives them from the image (archive/kernel_params.hpp), the
    // sizes a launch's kernelParams point to; a kernel whose parameters do not derive has none.
    std::map<std::string, sdm::archive::Signature, std::less<>> params;
    // Its variables (cubins: __device__, __constant__), host memory standing in for device memory,
    // zero-initialised (the fake does not read an image's initial values).
    std::map<std::string, std::vector<unsigned char>, std::less<>> globals;
    uint64_t image_bytes{0};                             // the cubin's extent or the PTX's length
    uint64_t pages{0};                                   // its device memory, in DeviceMemory's pages
};
// An event: the launches queued on its stream (every stream, for the legacy stream) when it was
// recorded are what it waits for.
struct CUevent_st {
    bool recorded{false};
    CUstream stream{nullptr};
    uint64_t seq{0};
};
// A context-independent library: its image (a copy, or the caller's bytes when it said they stay
// alive: CU_LIBRARY_BINARY_IS_PRESERVED, read again at each context's load), loaded into a context
// on first use, as the real driver does.
struct CUkern_st;
struct CUlib_st {
    std::vector<unsigned char> copy;
    const void* image{nullptr};
    bool preserved{false};
    std::vector<std::string> kernels;  // from the first load
    std::map<std::string, std::unique_ptr<CUkern_st>, std::less<>> handles;
    std::map<const CUctx_st*, CUmod_st*> loaded;  // its module in each context
};
struct CUkern_st {
    CUlib_st* library{nullptr};
    std::string name;
};
struct CUfunc_st {
    CUmod_st* module{nullptr};
    std::string name;
    int max_dynamic_smem{49152};  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set
    std::optional<sdm::archive::Signature> params;  // its module's params entry, if it has one
    int carveout{-1};             // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as set
};
// A user object: its destructor runs when its last reference (the creator's, a graph's, an
// executable graph's) goes.
struct CUuserObject_st {
    void* ptr{nullptr};
    CUhostFn destroy{nullptr};
    unsigned refs{0};
};
// A graph: the kernels captured into it, in order, and the references it holds on user objects.
struct CUgraph_st {
    std::vector<const CUfunc_st*> kernels;
    std::map<CUuserObject_st*, unsigned> held;
};
// An executable graph: the graph's kernels as instantiated, and one reference on each of its user objects.
struct CUgraphExec_st {
    std::vector<const CUfunc_st*> kernels;
    std::vector<CUuserObject_st*> held;
};

namespace {

// ---- entry points -----------------------------------------------------------------------------

// Every entry point sdm calls (runtime/platform/driver_entry_points.hpp: the one list), then what hosts
// and tests call beside sdm (the bootstrap, contexts of their own, memory, plain launches).
#define SDM_FAKE_EXTRA_ENTRIES(X)                                                                      \
    X(cuGetProcAddress) X(cuDeviceTotalMem) X(cuCtxSetCurrent)                                         \
    X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)   \
    X(cuMemsetD32) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphDestroy)                     \
    X(cuGraphInstantiateWithFlags) X(cuGraphExecDestroy) X(cuGraphLaunch)
#define SDM_FAKE_ENTRIES(X) SDM_DRIVER_ENTRY_POINTS(X) SDM_FAKE_EXTRA_ENTRIES(X)

enum Entry : int {
#define SDM_FAKE_ENUM(name) e_##name,
    SDM_FAKE_ENTRIES(SDM_FAKE_ENUM)
#undef SDM_FAKE_ENUM
        kEntryCount
};

constexpr std::array<const char*, kEntryCount> kEntryNames{
#define SDM_FAKE_NAME(name) #name,
    SDM_FAKE_ENTRIES(SDM_FAKE_NAME)
#undef SDM_FAKE_NAME
};

std::optional<Entry> find_entry(std::string_view name) {
    for (int e = 0; e < kEntryCount; ++e)
        if (name == kEntryNames[static_cast<size_t>(e)]) return static_cast<Entry>(e);
    return std::nullopt;
}

// ---- error codes ------------------------------------------------------------------------------

struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};

#define SDM_FAKE_ERR(code, text) ErrorText{code, #code, text}
constexpr ErrorText kErrors[] = {
    SDM_FAKE_ERR(CUDA_SUCCESS, "no error"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    SDM_FAKE_ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    SDM_FAKE_ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    SDM_FAKE_ERR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    SDM_FAKE_ERR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    SDM_FAKE_ERR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "the call requires a newer driver"),
    SDM_FAKE_ERR(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    SDM_FAKE_ERR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    SDM_FAKE_ERR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    SDM_FAKE_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    SDM_FAKE_ERR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    SDM_FAKE_ERR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
    SDM_FAKE_ERR(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    SDM_FAKE_ERR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    SDM_FAKE_ERR(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    SDM_FAKE_ERR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    SDM_FAKE_ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    SDM_FAKE_ERR(CUDA_ERROR_NOT_READY, "device not ready"),
    SDM_FAKE_ERR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    SDM_FAKE_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    SDM_FAKE_ERR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    SDM_FAKE_ERR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context for the specified device has already been initialized"),
    SDM_FAKE_ERR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    SDM_FAKE_ERR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    SDM_FAKE_ERR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    SDM_FAKE_ERR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    SDM_FAKE_ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    SDM_FAKE_ERR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    SDM_FAKE_ERR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    SDM_FAKE_ERR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    SDM_FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    SDM_FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    SDM_FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
    SDM_FAKE_ERR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    SDM_FAKE_ERR(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
    SDM_FAKE_ERR(CUDA_ERROR_FUNCTION_NOT_LOADED, "function not loaded"),
    SDM_FAKE_ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef SDM_FAKE_ERR

const ErrorText* find_error(CUresult code) {
    for (const auto& e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}

// ---- configuration ----------------------------------------------------------------------------
// One configuration, from sdm_fake_cuda_configure or parsed from the environment (sdm_fake_cuda.h
// says which wins and when each setting is read).

struct Device {
    std::string name;
    int major{0};
    int minor{0};
    int smem_optin{0};
    int sm_count{0};
    int l2_bytes{0};
    int cc() const { return major * 10 + minor; }
};

// What the real driver could report: the limits both sources are held to.
bool valid_device(const Device& d) {
    return !d.name.empty() && d.name.size() < 256 && d.major >= 1 && d.major <= 99 && d.minor >= 0 && d.minor <= 9 && d.smem_optin > 0 &&
           d.sm_count > 0 && d.l2_bytes >= 0;
}

struct FailRule {
    Entry entry{e_cuInit};
    CUresult code{CUDA_SUCCESS};
    int64_t nth{0};  // 1-based call number; 0: every call
    bool throws{false};  // code "throw": the call throws std::bad_alloc, as an allocation inside a load path would
};

constexpr int kDefaultVersion = 13000;

struct Config {
    std::vector<Device> devices;
    int version{kDefaultVersion};
    std::vector<FailRule> fails;
    std::set<std::string, std::less<>> missing;
    bool disable_jit{false};
    bool capturing{false};
    std::optional<int> occupancy;  // what cuOccupancyMaxActiveBlocksPerMultiprocessor reports instead of its model
    std::string image_log;         // "": none
    bool hold_work{false};         // launches stay queued until finished (sdm_fake_cuda_finish_work, a synchronize)
    bool record_params{false};     // a launch records its parameter buffer (sdm_fake_cuda_last_params)
    bool hold_loads{false};        // an image load waits for a permit (sdm_fake_cuda_release_loads)
};

// sdm_fake_cuda_configure's argument as a Config; on an invalid one, an empty optional and
// `error` says what.
std::optional<Config> from_struct(const sdm_fake_cuda_config& in, std::string& error) {
    Config c;
    if ((in.device_count > 0 && !in.devices) || (in.failure_count > 0 && !in.failures) || (in.missing_count > 0 && !in.missing)) {
        error = "a count above 0 with a NULL array";
        return std::nullopt;
    }
    for (size_t i = 0; i < in.device_count; ++i) {
        const sdm_fake_cuda_device& d = in.devices[i];
        Device device{d.name ? d.name : "", d.capability_major, d.capability_minor, d.smem_optin_bytes, d.sm_count, d.l2_bytes};
        if (!valid_device(device)) {
            error = "device " + std::to_string(i) + " ('" + device.name + "', " + std::to_string(d.capability_major) + "." +
                    std::to_string(d.capability_minor) + ", " + std::to_string(d.smem_optin_bytes) + ", " + std::to_string(d.sm_count) +
                    ", " + std::to_string(d.l2_bytes) +
                    ") is invalid: expected a name of 1 to 255 bytes, capability 1.0 to 99.9, smem_optin_bytes and sm_count above 0, "
                    "l2_bytes 0 or more";
            return std::nullopt;
        }
        c.devices.push_back(std::move(device));
    }
    if (in.driver_version < 0) {
        error = "driver_version " + std::to_string(in.driver_version) + " is not a driver version (e.g. 12080; 0: 13000)";
        return std::nullopt;
    }
    if (in.driver_version > 0) c.version = in.driver_version;
    for (size_t i = 0; i < in.failure_count; ++i) {
        const sdm_fake_cuda_failure& f = in.failures[i];
        const auto entry = f.entry_point ? find_entry(f.entry_point) : std::nullopt;
        if (!entry) {
            error = "failure " + std::to_string(i) + ": '" + (f.entry_point ? f.entry_point : "(null)") + "' is no entry point of the fake driver";
            return std::nullopt;
        }
        if (f.nth < 0) {
            error = "failure " + std::to_string(i) + " (" + f.entry_point + "): nth " + std::to_string(f.nth) + " is below 0 (0: every call)";
            return std::nullopt;
        }
        c.fails.push_back({*entry, static_cast<CUresult>(f.code), f.nth, f.throws != 0});
    }
    for (size_t i = 0; i < in.missing_count; ++i) {
        if (!in.missing[i]) {
            error = "missing[" + std::to_string(i) + "] is NULL";
            return std::nullopt;
        }
        c.missing.emplace(in.missing[i]);
    }
    c.disable_jit = in.disable_jit != 0;
    c.capturing = in.capturing != 0;
    if (in.force_occupancy != 0) {
        if (in.occupancy < 0) {
            error = "occupancy " + std::to_string(in.occupancy) + " is below 0";
            return std::nullopt;
        }
        c.occupancy = in.occupancy;
    }
    c.image_log = in.image_log ? in.image_log : "";
    c.hold_work = in.hold_work != 0;
    c.record_params = in.record_params != 0;
    c.hold_loads = in.hold_loads != 0;
    return c;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (size_t at = 0;;) {
        const size_t end = s.find(sep, at);
        out.push_back(s.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
        if (end == std::string_view::npos) return out;
        at = end + 1;
    }
}

template <typename T>
std::optional<T> parse_int(std::string_view s) {
    s = trim(s);
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

bool env_flag(const char* name) {
    const std::string_view v = trim(env(name));
    return !v.empty() && v != "0";
}

// SDM_FAKE_CUDA_DEVICES; on a malformed row, an empty optional and `error` says what.
std::optional<std::vector<Device>> parse_devices(std::string& error) {
    std::vector<Device> devices;
    const auto rows = split(env("SDM_FAKE_CUDA_DEVICES"), ';');
    for (size_t i = 0; i < rows.size(); ++i) {
        const std::string_view row = trim(rows[i]);
        if (row.empty()) continue;  // "" or a trailing ';'
        const auto fields = split(row, ',');
        Device d;
        bool ok = fields.size() == 5;
        if (ok) {
            d.name = std::string(trim(fields[0]));
            const std::string_view cc = trim(fields[1]);
            const size_t dot = cc.find('.');
            const auto major = dot == std::string_view::npos ? std::nullopt : parse_int<int>(cc.substr(0, dot));
            const auto minor = dot == std::string_view::npos ? std::nullopt : parse_int<int>(cc.substr(dot + 1));
            const auto smem = parse_int<int>(fields[2]);
            const auto sms = parse_int<int>(fields[3]);
            const auto l2 = parse_int<int>(fields[4]);
            ok = major && minor && smem && sms && l2;
            if (ok) {
                d.major = *major;
                d.minor = *minor;
                d.smem_optin = *smem;
                d.sm_count = *sms;
                d.l2_bytes = *l2;
                ok = valid_device(d);
            }
        }
        if (!ok) {
            error = "SDM_FAKE_CUDA_DEVICES row " + std::to_string(i + 1) + " '" + std::string(row) +
                    "' is malformed: expected name,major.minor,smem_optin_bytes,sm_count,l2_bytes "
                    "(e.g. NVIDIA H200,9.0,232448,132,62914560)";
            return std::nullopt;
        }
        devices.push_back(std::move(d));
    }
    return devices;
}

// SDM_FAKE_CUDA_FAIL; on a malformed item, an empty optional and `error` says what.
std::optional<std::vector<FailRule>> parse_fails(std::string& error) {
    std::vector<FailRule> rules;
    for (const std::string_view item_raw : split(env("SDM_FAKE_CUDA_FAIL"), ',')) {
        const std::string_view item = trim(item_raw);
        if (item.empty()) continue;
        const auto bad = [&](const std::string& why) {
            error = "SDM_FAKE_CUDA_FAIL item '" + std::string(item) + "': " + why +
                    " (expected entry=code[@n], e.g. cuModuleLoadData=CUDA_ERROR_OUT_OF_MEMORY@2; code 'throw' throws std::bad_alloc)";
            return std::nullopt;
        };
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos) return bad("no '='");
        const auto entry = find_entry(trim(item.substr(0, eq)));
        if (!entry) return bad("'" + std::string(trim(item.substr(0, eq))) + "' is no entry point of the fake driver");
        std::string_view code = item.substr(eq + 1);
        FailRule rule{*entry, CUDA_SUCCESS, 0};
        if (const size_t at = code.find('@'); at != std::string_view::npos) {
            const auto n = parse_int<int64_t>(code.substr(at + 1));
            if (!n || *n < 1) return bad("the call number after '@' must be 1 or more");
            rule.nth = *n;
            code = code.substr(0, at);
        }
        code = trim(code);
        if (code == "throw") {
            rule.throws = true;
        } else if (const auto n = parse_int<int>(code)) {
            rule.code = static_cast<CUresult>(*n);
        } else {
            const auto e = std::find_if(std::begin(kErrors), std::end(kErrors), [&](const ErrorText& t) { return code == t.name; });
            if (e == std::end(kErrors)) return bad("'" + std::string(code) + "' is neither a number nor a known CUDA_ERROR_ name");
            rule.code = e->code;
        }
        rules.push_back(rule);
    }
    return rules;
}

// The environment's configuration. A malformed variable sets `error` (the first one) and leaves
// its setting at the default; the others are read all the same, so that a call reading one
// setting (cuDriverGetVersion its version) is not failed by another's fault: cuInit is.
Config read_environment(std::string& error) {
    Config c;
    std::string why;
    const auto malformed = [&] {
        if (error.empty()) error = why;
    };
    if (auto devices = parse_devices(why)) c.devices = std::move(*devices);
    else malformed();

    if (const std::string_view version = trim(env("SDM_FAKE_CUDA_VERSION")); !version.empty()) {
        const auto v = parse_int<int>(version);
        if (v && *v > 0) {
            c.version = *v;
        } else {
            why = "SDM_FAKE_CUDA_VERSION '" + std::string(version) + "' is not a driver version (e.g. 12080)";
            malformed();
        }
    }

    if (auto fails = parse_fails(why)) c.fails = std::move(*fails);
    else malformed();

    for (const std::string_view name : split(env("SDM_FAKE_CUDA_MISSING"), ','))
        if (!trim(name).empty()) c.missing.emplace(trim(name));
    c.disable_jit = env_flag("SDM_FAKE_CUDA_DISABLE_JIT");
    c.capturing = env_flag("SDM_FAKE_CUDA_CAPTURING");
    if (const std::string_view occupancy = trim(env("SDM_FAKE_CUDA_OCCUPANCY")); !occupancy.empty()) {
        c.occupancy = parse_int<int>(occupancy);
        if (!c.occupancy || *c.occupancy < 0) {
            c.occupancy.reset();
            why = "SDM_FAKE_CUDA_OCCUPANCY '" + std::string(occupancy) + "' is not a number of blocks";
            malformed();
        }
    }
    c.image_log = env("SDM_FAKE_CUDA_IMAGE_LOG");
    c.hold_work = env_flag("SDM_FAKE_CUDA_HOLD_WORK");
    c.record_params = env_flag("SDM_FAKE_CUDA_RECORD_PARAMS");
    c.hold_loads = env_flag("SDM_FAKE_CUDA_HOLD_LOADS");
    return c;
}

// The newest PTX ISA the JIT of a driver version accepts (13.0 -> 9.0, 12.8 -> 8.7).
int max_ptx_isa(int driver_version) {
    if (driver_version >= 13000) return (driver_version / 1000 - 4) * 10 + (driver_version % 1000) / 10;
    struct Row {
        int version, isa;
    };
    static constexpr Row kRows[] = {{12090, 88}, {12080, 87}, {12050, 85}, {12040, 84}, {12030, 83}, {12020, 82},
                                    {12010, 81}, {12000, 80}, {11080, 78}, {11070, 77}, {11060, 76}, {11050, 75},
                                    {11040, 74}, {11030, 73}, {11020, 72}, {11010, 71}, {11000, 70}, {10020, 65},
                                    {10010, 64}, {10000, 63}, {9020, 62},  {9010, 61},  {9000, 60}};
    for (const auto& r : kRows)
        if (driver_version >= r.version) return r.isa;
    return 50;
}

std::string isa_text(int isa) { return std::to_string(isa / 10) + "." + std::to_string(isa % 10); }

// ---- state ------------------------------------------------------------------------------------

// Device memory as cuMemGetInfo reports it, per device: a loaded module takes its image's bytes and
// kModuleOverhead more (the driver's own allocations for it, which no image declares), in pages of
// kPage bytes of its own, as the driver rounds to its 2 MiB pages (modules do not share pages
// here). Memory cuMemAlloc hands out is not counted.
struct DeviceMemory {
    static constexpr uint64_t kPage = 64 << 10;
    static constexpr uint64_t kModuleOverhead = 16 << 10;
    uint64_t pages{0};
    uint64_t used() const { return pages * kPage; }
};

struct State {
    std::mutex mu;
    std::map<int, DeviceMemory> memory;  // by ordinal
    Config config;                     // what the last cuInit adopted
    std::optional<Config> configured;  // sdm_fake_cuda_configure's; while set, the environment is not read
    Config environment;                // the environment as last read
    bool initialized{false};
    std::array<int64_t, kEntryCount> calls{};
    std::vector<std::unique_ptr<CUctx_st>> contexts;  // the primary context of ordinal i, once retained
    std::map<const CUmod_st*, std::unique_ptr<CUmod_st>> modules;
    std::set<const CUfunc_st*> functions;
    // The work model (Config::hold_work): launches queued on their stream, in order, until finished.
    struct Queued {
        uint64_t seq;
        CUstream stream;
        const CUmod_st* module;
    };
    std::vector<Queued> queued;
    uint64_t next_seq{1};
    std::map<const CUevent_st*, std::unique_ptr<CUevent_st>> events;
    int64_t unloaded_busy{0};
    uint64_t next_context_id{0};       // cuCtxGetId's last id
    std::map<const CUlib_st*, std::unique_ptr<CUlib_st>> libraries;
    std::set<const CUkern_st*> kernels;
    sdm_fake_cuda_launch last_launch{};  // the last cuLaunchKernelEx that succeeded
    std::optional<std::vector<unsigned char>> last_params;  // its parameter buffer (sdm_fake_cuda_last_params)
    // Graphs: the captures in progress by stream, the graphs, executable graphs and user objects.
    struct Capture {
        uint64_t id;
        CUgraph_st* graph;
    };
    std::map<CUstream, Capture> captures;
    uint64_t next_capture_id{0};
    std::map<const CUgraph_st*, std::unique_ptr<CUgraph_st>> graphs;
    std::map<const CUgraphExec_st*, std::unique_ptr<CUgraphExec_st>> graph_execs;
    std::map<const CUuserObject_st*, std::unique_ptr<CUuserObject_st>> user_objects;
};

// Leaked on purpose: no destructor runs while another thread may still call in at exit.
State& state() {
    static State* s = [] {
        auto* st = new State;
        std::string error;
        Config c = read_environment(error);
        if (error.empty()) st->config = std::move(c);  // cuInit reports errors
        return st;
    }();
    return *s;
}

// The calling thread's context stack. Trivially destructible, so no TLS destructor pins the
// library; contexts are never freed, so a stale entry stays safe to compare.
constexpr int kMaxStack = 256;
thread_local CUctx_st* tls_stack[kMaxStack];
thread_local int tls_depth = 0;

CUctx_st* current() { return tls_depth > 0 ? tls_stack[tls_depth - 1] : nullptr; }

using Lock = std::unique_lock<std::mutex>;

// The configuration as it is now: sdm_fake_cuda_configure's, else the environment, read again
// (`error`: what is malformed in it, or ""). With s.mu held; the reference lasts until the next call.
const Config& live_config(State& s, std::string& error) {
    if (s.configured) return *s.configured;
    s.environment = read_environment(error);
    return s.environment;
}

const Config& live_config(State& s) {
    std::string ignored;
    return live_config(s, ignored);
}

// What `rules` make call number `n` of `e` do: a code to return, or nullopt to go on.
std::optional<CUresult> injected(const std::vector<FailRule>& rules, Entry e, int64_t n) {
    for (const auto& rule : rules)
        if (rule.entry == e && (rule.nth == 0 || rule.nth == n)) {
            if (rule.throws) throw std::bad_alloc();
            return rule.code;
        }
    return std::nullopt;
}

// Counts the call and applies the failure configuration: a code to return, or nullopt to go on.
std::optional<CUresult> enter(State& s, Entry e) { return injected(s.config.fails, e, ++s.calls[static_cast<size_t>(e)]); }

// Every entry point but the version, error-text and proc-address ones starts with this.
#define SDM_FAKE_ENTER(e)                                    \
    State& s = state();                                      \
    Lock lock(s.mu);                                         \
    if (const auto injected = enter(s, e)) return *injected; \
    if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED

bool valid_context(const State& s, const CUctx_st* ctx) {
    return ctx && std::any_of(s.contexts.begin(), s.contexts.end(), [&](const auto& c) { return c.get() == ctx; });
}

const Device* device(const State& s, CUdevice dev) {
    return dev >= 0 && static_cast<size_t>(dev) < s.config.devices.size() ? &s.config.devices[static_cast<size_t>(dev)] : nullptr;
}

void unload(State& s, const CUmod_st* m) {
    const auto it = s.modules.find(m);
    if (it == s.modules.end()) return;
    // Unloading a module whose kernel is still queued or running is the bug: counted, and that work dropped.
    const auto busy = std::erase_if(s.queued, [&](const State::Queued& q) { return q.module == m; });
    if (busy > 0) ++s.unloaded_busy;
    for (const auto& [name, f] : it->second->functions) s.functions.erase(f.get());
    s.memory[it->second->device].pages -= it->second->pages;
    s.modules.erase(it);
}

// `m`'s device memory (DeviceMemory), as it enters s.modules.
void place(State& s, CUmod_st& m) {
    m.pages = (m.image_bytes + DeviceMemory::kModuleOverhead + DeviceMemory::kPage - 1) / DeviceMemory::kPage;
    s.memory[m.device].pages += m.pages;
}

void unload_context_modules(State& s, const CUctx_st* ctx) {
    std::vector<const CUmod_st*> doomed;
    for (const auto& [m, module] : s.modules)
        if (module->context == ctx) doomed.push_back(m);
    for (const auto* m : doomed) unload(s, m);
}

// ---- initialization and versions --------------------------------------------------------------

CUresult CUDAAPI impl_cuInit(unsigned int flags) {
    State& s = state();
    Lock lock(s.mu);
    std::string error;
    Config config = live_config(s, error);
    s.calls.fill(0);
    s.config = error.empty() ? std::move(config) : Config{};
    s.initialized = false;
    if (!error.empty()) {
        std::fprintf(stderr, "sdm fake CUDA driver: cuInit: %s\n", error.c_str());
        ++s.calls[e_cuInit];
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (const auto injected = enter(s, e_cuInit)) return *injected;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (s.config.devices.empty()) return CUDA_ERROR_NO_DEVICE;  // as libcuda on a machine without a GPU
    s.initialized = true;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDriverGetVersion(int* version) {
    State& s = state();
    Lock lock(s.mu);
    // It needs no cuInit, and sdm asks it before cuInit: its failure rules, like the version, are
    // the configuration's as it is at the call (tests change the version between runtimes).
    const int64_t n = ++s.calls[e_cuDriverGetVersion];
    const Config& now = live_config(s);
    if (const auto injected_code = injected(now.fails, e_cuDriverGetVersion, n)) return *injected_code;
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = now.version;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuGetErrorName(CUresult error, const char** str) {
    State& s = state();
    Lock lock(s.mu);
    if (const auto injected = enter(s, e_cuGetErrorName)) return *injected;
    if (!str) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *str = e ? e->name : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI impl_cuGetErrorString(CUresult error, const char** str) {
    State& s = state();
    Lock lock(s.mu);
    if (const auto injected = enter(s, e_cuGetErrorString)) return *injected;
    if (!str) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *str = e ? e->text : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI impl_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult* status);

// ---- devices ----------------------------------------------------------------------------------

CUresult CUDAAPI impl_cuDeviceGetCount(int* count) {
    SDM_FAKE_ENTER(e_cuDeviceGetCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = static_cast<int>(s.config.devices.size());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDeviceGet(CUdevice* dev, int ordinal) {
    SDM_FAKE_ENTER(e_cuDeviceGet);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    if (!device(s, ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDeviceGetName(char* name, int len, CUdevice dev) {
    SDM_FAKE_ENTER(e_cuDeviceGetName);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    const Device* d = device(s, dev);
    if (!d) return CUDA_ERROR_INVALID_DEVICE;
    const size_t n = std::min(d->name.size(), static_cast<size_t>(len) - 1);
    std::memcpy(name, d->name.data(), n);
    name[n] = '\0';
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    SDM_FAKE_ENTER(e_cuDeviceGetAttribute);
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    const Device* d = device(s, dev);
    if (!d) return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = d->sm_count; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *pi = d->l2_bytes; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = d->major; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = d->minor; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = d->smem_optin; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *pi = 49152; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *pi = d->smem_optin + 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
        case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *pi = d->major >= 9 ? 1 : 0; break;
        // Every device from Pascal on, but one whose name says it has none (for the tests).
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *pi = d->major >= 6 && d->name.find("(no cooperative launch)") == std::string::npos ? 1 : 0; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *pi = 32; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
    SDM_FAKE_ENTER(e_cuDeviceTotalMem);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = size_t{80} << 30;
    return CUDA_SUCCESS;
}

// ---- contexts ---------------------------------------------------------------------------------

CUresult CUDAAPI impl_cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    SDM_FAKE_ENTER(e_cuDevicePrimaryCtxRetain);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    const auto i = static_cast<size_t>(dev);
    if (s.contexts.size() <= i) s.contexts.resize(i + 1);
    if (!s.contexts[i]) {
        s.contexts[i] = std::make_unique<CUctx_st>();
        s.contexts[i]->device = dev;
    }
    if (s.contexts[i]->refcount++ == 0) s.contexts[i]->id = ++s.next_context_id;
    *pctx = s.contexts[i].get();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuDevicePrimaryCtxRelease(CUdevice dev) {
    SDM_FAKE_ENTER(e_cuDevicePrimaryCtxRelease);
    if (!device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    const auto i = static_cast<size_t>(dev);
    if (s.contexts.size() <= i || !s.contexts[i] || s.contexts[i]->refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
    // The last release destroys the context's resources, as the real driver does.
    if (--s.contexts[i]->refcount == 0) unload_context_modules(s, s.contexts[i].get());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxPushCurrent(CUcontext ctx) {
    SDM_FAKE_ENTER(e_cuCtxPushCurrent);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_context(s, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth == kMaxStack) return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack[tls_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxPopCurrent(CUcontext* pctx) {
    SDM_FAKE_ENTER(e_cuCtxPopCurrent);
    if (tls_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUctx_st* ctx = tls_stack[--tls_depth];
    if (pctx) *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxGetCurrent(CUcontext* pctx) {
    SDM_FAKE_ENTER(e_cuCtxGetCurrent);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = current();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxSetCurrent(CUcontext ctx) {
    SDM_FAKE_ENTER(e_cuCtxSetCurrent);
    if (!ctx) {  // pops the top, or nothing on an empty stack
        if (tls_depth > 0) --tls_depth;
        return CUDA_SUCCESS;
    }
    if (!valid_context(s, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_depth == 0) tls_depth = 1;
    tls_stack[tls_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

// The calling thread's current context if it is usable, else the error a real driver returns.
CUresult usable_current(const State& s, CUctx_st*& ctx) {
    ctx = current();
    if (!ctx || !valid_context(s, ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->refcount == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxGetId(CUcontext ctx, unsigned long long* id) {
    SDM_FAKE_ENTER(e_cuCtxGetId);
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!ctx && usable_current(s, ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
    if (!valid_context(s, ctx) || ctx->refcount == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *id = ctx->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxGetDevice(CUdevice* dev) {
    SDM_FAKE_ENTER(e_cuCtxGetDevice);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    *dev = ctx->device;
    return CUDA_SUCCESS;
}


// ---- device memory ----------------------------------------------------------------------------
// Host memory standing in for device memory, for hosts that allocate their kernels' buffers (the
// examples): kernels do not run here, so the bytes are only what the host copies in.

CUresult CUDAAPI impl_cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
    SDM_FAKE_ENTER(e_cuMemAlloc);
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    void* p = std::calloc(1, bytes);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuMemFree(CUdeviceptr ptr) {
    SDM_FAKE_ENTER(e_cuMemFree);
    std::free(reinterpret_cast<void*>(ptr));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
    SDM_FAKE_ENTER(e_cuMemcpyHtoD);
    if (bytes > 0 && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > 0) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
    SDM_FAKE_ENTER(e_cuMemcpyDtoH);
    if (bytes > 0 && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > 0) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
    SDM_FAKE_ENTER(e_cuMemsetD32);
    if (count > 0 && !dst) return CUDA_ERROR_INVALID_VALUE;
    auto* p = reinterpret_cast<unsigned int*>(dst);
    for (size_t i = 0; i < count; ++i) p[i] = value;
    return CUDA_SUCCESS;
}

// ---- modules ----------------------------------------------------------------------------------

struct LoadFailure {
    CUresult code;
    std::string log;
};

uint64_t read_u64(const unsigned char* p, uint64_t at) {
    uint64_t v;
    std::memcpy(&v, p + at, sizeof v);
    return v;
}
uint32_t read_u32(const unsigned char* p, uint64_t at) {
    uint32_t v;
    std::memcpy(&v, p + at, sizeof v);
    return v;
}
uint16_t read_u16(const unsigned char* p, uint64_t at) {
    uint16_t v;
    std::memcpy(&v, p + at, sizeof v);
    return v;
}

// cuModuleLoadData gets no size: an ELF image's extent is what its headers say it covers (the
// header, the section and program header tables, every section's and segment's bytes).
std::optional<uint64_t> elf_extent(const unsigned char* p) {
    constexpr uint64_t kLimit = uint64_t{1} << 30;
    if (p[4] != 2 || p[5] != 1) return std::nullopt;  // ELF64 little-endian only
    uint64_t extent = 64;
    const auto cover = [&](uint64_t offset, uint64_t size) {
        if (offset > kLimit || size > kLimit || offset + size > kLimit) return false;
        extent = std::max(extent, offset + size);
        return true;
    };
    const uint64_t phoff = read_u64(p, 32), shoff = read_u64(p, 40);
    const uint16_t phentsize = read_u16(p, 54), phnum = read_u16(p, 56), shentsize = read_u16(p, 58), shnum = read_u16(p, 60);
    if (shnum > 0) {
        if (shentsize != 64 || !cover(shoff, uint64_t{shnum} * 64)) return std::nullopt;
        for (uint64_t i = 0; i < shnum; ++i) {
            const uint64_t sh = shoff + i * 64;
            if (read_u32(p, sh + 4) == 8) continue;  // SHT_NOBITS occupies no file bytes
            if (!cover(read_u64(p, sh + 24), read_u64(p, sh + 32))) return std::nullopt;
        }
    }
    if (phnum > 0) {
        if (phentsize != 56 || !cover(phoff, uint64_t{phnum} * 56)) return std::nullopt;
        for (uint64_t i = 0; i < phnum; ++i) {
            const uint64_t ph = phoff + i * 56;
            if (!cover(read_u64(p, ph + 8), read_u64(p, ph + 32))) return std::nullopt;
        }
    }
    return extent;
}

// A PTX module is NUL-terminated text. Stops at the first byte no text holds, so binary bytes are
// refused before reading far past them.
std::optional<size_t> text_length(const unsigned char* p) {
    for (size_t n = 0;; ++n) {
        const unsigned char c = p[n];
        if (c == 0) return n == 0 ? std::nullopt : std::optional<size_t>(n);
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f) return std::nullopt;
    }
}

std::string device_text(int ordinal, const Device& d) {
    return "device " + std::to_string(ordinal) + " (" + d.name + ", compute capability " + std::to_string(d.major) + "." +
           std::to_string(d.minor) + ")";
}

// The image log (SDM_FAKE_CUDA_IMAGE_LOG=FILE): one line per cubin handed to cuModuleLoadData(Ex),
// the XXH3-128 of the bytes the driver reads (its ELF extent) in the form `sdm ls --json` prints. A
// stress test compares them with the images of its archive: every byte sdm handed over was the
// archive's.
void log_image(const std::string& path, const unsigned char* p, uint64_t extent) {
    if (path.empty()) return;
    // The XXH3-128 (what `sdm ls --json` prints of an entry) and the BLAKE2b-256 of the bytes: two
    // images can share the first (tests/xxh3_preimage.hpp), not the second.
    const sdm::Bytes bytes{reinterpret_cast<const std::byte*>(p), static_cast<size_t>(extent)};
    const std::string line = sdm::xxh3_128(bytes).hex() + " " + sdm::crypto::digest_hex(sdm::crypto::blake2b(bytes).value()) + "\n";
    if (FILE* f = std::fopen(path.c_str(), "a")) {  // one short write in append mode: lines of several processes do not mix
        std::fwrite(line.data(), 1, line.size(), f);
        std::fclose(f);
    }
}

// The parameters of the module's kernels, as sdm derives them from the image. An image whose
// parameters do not derive still loads (the driver does not need them): its launches record none.
void note_params(CUmod_st& module, sdm::archive::Kind kind, sdm::Bytes image) {
    auto kernels = sdm::archive::image_kernel_params(kind, image);
    if (!kernels) return;
    for (auto& k : *kernels)
        if (k.offsets_exact) module.params.emplace(std::move(k.name), std::move(k.signature));
}

// Decides what the real driver would do with `image` on device `d`: the module's facts, or the
// failure. `now`: the configuration as it is at the call (the JIT switch, the image log).
std::variant<std::unique_ptr<CUmod_st>, LoadFailure> load_image(const State& s, const Config& now, int ordinal, const Device& d,
                                                                 const void* image) {
    using sdm::archive::Variant;
    const auto* p = static_cast<const unsigned char*>(image);
    auto module = std::make_unique<CUmod_st>();
    module->device = ordinal;

    if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
        const auto extent = elf_extent(p);
        if (!extent) return LoadFailure{CUDA_ERROR_INVALID_IMAGE, "not a valid cubin: ELF headers out of range"};
        log_image(now.image_log, p, *extent);
        auto info = sdm::archive::inspect_cubin(sdm::Bytes(reinterpret_cast<const std::byte*>(p), *extent));
        if (!info) return LoadFailure{CUDA_ERROR_INVALID_IMAGE, info.error().message};
        const int sm = info->sm, major = sm / 10, minor = sm % 10;
        const Variant variant = info->variant.value_or(Variant::base);
        const bool runs = variant == Variant::a ? (major == d.major && minor == d.minor) : (major == d.major && minor <= d.minor);
        if (!runs)
            return LoadFailure{CUDA_ERROR_NO_BINARY_FOR_GPU,
                               "cubin for sm_" + std::to_string(sm) + sdm::archive::variant_suffix(variant) +
                                   " cannot run on " + device_text(ordinal, d)};
        module->kernels = std::move(info->kernels);
        note_params(*module, sdm::archive::Kind::cubin, sdm::Bytes(reinterpret_cast<const std::byte*>(p), *extent));
        for (const auto& [name, size] : info->globals) module->globals[name].assign(std::min<uint64_t>(size, uint64_t{1} << 26), 0);
        module->binary_version = sm;
        module->ptx_version = info->virtual_sm != 0 ? info->virtual_sm : sm;  // what ptxas compiled from, as the driver reports
        module->image_bytes = *extent;
        return module;
    }

    const auto length = text_length(p);
    if (!length) return LoadFailure{CUDA_ERROR_INVALID_IMAGE, "neither a cubin (ELF) nor PTX text"};
    if (now.disable_jit)
        return LoadFailure{CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found (the fake's disable_jit)"};
    if (env_flag("CUDA_DISABLE_PTX_JIT"))  // the real driver's switch
        return LoadFailure{CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled (CUDA_DISABLE_PTX_JIT=1)"};
    auto info = sdm::archive::inspect_ptx(sdm::Bytes(reinterpret_cast<const std::byte*>(p), *length));
    if (!info) return LoadFailure{CUDA_ERROR_INVALID_PTX, "ptxas fatal   : " + info.error().message};
    const int max_isa = max_ptx_isa(s.config.version);
    if (info->ptx_isa > max_isa)
        return LoadFailure{CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                           "ptxas application ptx input; fatal   : Unsupported .version " + isa_text(info->ptx_isa) +
                               "; current version is '" + isa_text(max_isa) + "' (driver " +
                               std::to_string(s.config.version) + ")"};
    const int target = info->sm, dev_cc = d.cc();
    const Variant variant = info->variant.value_or(Variant::base);
    const bool fits = variant == Variant::a   ? target == dev_cc
                      : variant == Variant::f ? (target / 10 == d.major && target <= dev_cc)
                                              : target <= dev_cc;
    if (!fits)
        return LoadFailure{CUDA_ERROR_NO_BINARY_FOR_GPU,
                           "ptxas fatal   : PTX .target sm_" + std::to_string(target) + sdm::archive::variant_suffix(variant) +
                               " cannot be compiled for " + device_text(ordinal, d)};
    module->kernels = std::move(info->kernels);
    note_params(*module, sdm::archive::Kind::ptx, sdm::Bytes(reinterpret_cast<const std::byte*>(p), *length));
    module->binary_version = dev_cc;
    module->ptx_version = target;
    module->image_bytes = *length;
    return module;
}

void write_log(unsigned int count, const CUjit_option* options, void** values, const std::string& error_log) {
    char* error_buffer = nullptr;
    char* info_buffer = nullptr;
    void** error_size = nullptr;
    void** info_size = nullptr;
    for (unsigned int i = 0; i < count; ++i) {
        switch (options[i]) {
            case CU_JIT_ERROR_LOG_BUFFER: error_buffer = static_cast<char*>(values[i]); break;
            case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: error_size = &values[i]; break;
            case CU_JIT_INFO_LOG_BUFFER: info_buffer = static_cast<char*>(values[i]); break;
            case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: info_size = &values[i]; break;
            default: break;
        }
    }
    // IN: the buffer's size; OUT: the bytes written, without the NUL.
    const auto fill = [](char* buffer, void** size, const std::string& text) {
        if (!buffer || !size) return;
        const auto capacity = static_cast<size_t>(reinterpret_cast<uintptr_t>(*size));
        if (capacity == 0) return;
        const size_t n = std::min(text.size(), capacity - 1);
        std::memcpy(buffer, text.data(), n);
        buffer[n] = '\0';
        *size = reinterpret_cast<void*>(static_cast<uintptr_t>(n));
    };
    fill(error_buffer, error_size, error_log);
    fill(info_buffer, info_size, std::string());
}

CUresult load_module(State& s, CUmodule* module, const void* image, unsigned int count, const CUjit_option* options,
                     void** values) {
    if (!module || !image || (count > 0 && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    const Device* d = device(s, ctx->device);
    if (!d) return CUDA_ERROR_INVALID_CONTEXT;  // the context's device left the configuration
    auto result = load_image(s, live_config(s), ctx->device, *d, image);
    if (auto* failure = std::get_if<LoadFailure>(&result)) {
        write_log(count, options, values, failure->log);
        return failure->code;
    }
    write_log(count, options, values, std::string());
    auto m = std::move(std::get<std::unique_ptr<CUmod_st>>(result));
    m->context = ctx;
    *module = m.get();
    place(s, *m);
    s.modules.emplace(m.get(), std::move(m));
    return CUDA_SUCCESS;
}

// Config::hold_loads: the loads that wait for a permit, outside the driver's lock (State::mu), so
// that every other call goes on meanwhile. Leaked, as the state is.
struct LoadGate {
    std::mutex mu;
    std::condition_variable cv;
    bool held{false};     // hold_loads as the last load or configuration saw it
    int64_t permits{0};
    int64_t waiting{0};
};

LoadGate& load_gate() {
    static LoadGate* g = new LoadGate;
    return *g;
}

void set_loads_held(bool held) {
    LoadGate& g = load_gate();
    std::lock_guard lock(g.mu);
    if (held && !g.held) g.permits = 0;  // permits given while loads went freely are not kept for the next hold
    g.held = held;
    g.cv.notify_all();
}

// With hold_loads: waits for a permit (sdm_fake_cuda_release_loads) or a configuration without it.
void wait_for_load_permit() {
    bool held = false;
    {
        State& s = state();
        Lock lock(s.mu);
        held = live_config(s).hold_loads;
    }
    set_loads_held(held);
    if (!held) return;
    LoadGate& g = load_gate();
    std::unique_lock lock(g.mu);
    ++g.waiting;
    g.cv.wait(lock, [&] { return g.permits > 0 || !g.held; });
    if (g.held) --g.permits;
    --g.waiting;
}

CUresult CUDAAPI impl_cuModuleLoadData(CUmodule* module, const void* image) {
    wait_for_load_permit();
    SDM_FAKE_ENTER(e_cuModuleLoadData);
    return load_module(s, module, image, 0, nullptr, nullptr);
}

CUresult CUDAAPI impl_cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count, CUjit_option* options,
                                         void** values) {
    wait_for_load_permit();
    SDM_FAKE_ENTER(e_cuModuleLoadDataEx);
    return load_module(s, module, image, count, options, values);
}

CUresult CUDAAPI impl_cuModuleUnload(CUmodule module) {
    SDM_FAKE_ENTER(e_cuModuleUnload);
    if (!s.modules.contains(module)) return CUDA_ERROR_INVALID_HANDLE;
    unload(s, module);
    return CUDA_SUCCESS;
}

// ---- libraries --------------------------------------------------------------------------------

// Library `lib`'s module in context `ctx`, loaded there on first use from the image it holds.
CUresult library_module(State& s, CUlib_st& lib, CUctx_st* ctx, CUmod_st*& out) {
    if (const auto it = lib.loaded.find(ctx); it != lib.loaded.end() && s.modules.contains(it->second)) {
        out = it->second;
        return CUDA_SUCCESS;
    }
    const Device* d = device(s, ctx->device);
    if (!d) return CUDA_ERROR_INVALID_CONTEXT;
    auto result = load_image(s, live_config(s), ctx->device, *d, lib.image);
    if (auto* failure = std::get_if<LoadFailure>(&result)) return failure->code;
    auto m = std::move(std::get<std::unique_ptr<CUmod_st>>(result));
    m->context = ctx;
    if (lib.kernels.empty()) lib.kernels = m->kernels;
    out = m.get();
    lib.loaded[ctx] = m.get();
    place(s, *m);
    s.modules.emplace(m.get(), std::move(m));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jit_options, void** jit_values, unsigned int jit_count,
                                        CUlibraryOption* options, void** values, unsigned int count) {
    wait_for_load_permit();
    SDM_FAKE_ENTER(e_cuLibraryLoadData);
    if (!library || !code || (jit_count > 0 && (!jit_options || !jit_values)) || (count > 0 && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
    auto lib = std::make_unique<CUlib_st>();
    for (unsigned int i = 0; i < count; ++i) {
        if (options[i] == CU_LIBRARY_BINARY_IS_PRESERVED) lib->preserved = reinterpret_cast<uintptr_t>(values[i]) != 0;
        else if (options[i] != CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE) return CUDA_ERROR_INVALID_VALUE;
    }
    const auto* p = static_cast<const unsigned char*>(code);
    std::optional<uint64_t> size;
    if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') size = elf_extent(p);
    else if (const auto text = text_length(p)) size = *text + 1;
    if (!size) return CUDA_ERROR_INVALID_IMAGE;
    if (lib->preserved) {
        lib->image = code;
    } else {
        lib->copy.assign(p, p + *size);
        lib->image = lib->copy.data();
    }
    // Loaded into the current context now (a real driver without lazy loading does the same), or,
    // without one, checked against device 0 for its kernels.
    CUctx_st* ctx = current();
    if (ctx && valid_context(s, ctx) && ctx->refcount > 0) {
        CUmod_st* m = nullptr;
        if (const CUresult r = library_module(s, *lib, ctx, m); r != CUDA_SUCCESS) return r;
    } else {
        const Device* d = device(s, 0);
        if (!d) return CUDA_ERROR_NO_DEVICE;
        auto result = load_image(s, live_config(s), 0, *d, lib->image);
        if (auto* failure = std::get_if<LoadFailure>(&result)) return failure->code;
        lib->kernels = std::get<std::unique_ptr<CUmod_st>>(result)->kernels;
    }
    *library = lib.get();
    s.libraries.emplace(lib.get(), std::move(lib));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuLibraryUnload(CUlibrary library) {
    SDM_FAKE_ENTER(e_cuLibraryUnload);
    const auto it = s.libraries.find(library);
    if (it == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& [ctx, m] : it->second->loaded) unload(s, m);
    for (const auto& [name, k] : it->second->handles) s.kernels.erase(k.get());
    s.libraries.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
    SDM_FAKE_ENTER(e_cuLibraryGetKernel);
    if (!kernel || !name) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.libraries.find(library);
    if (it == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    CUlib_st& lib = *it->second;
    if (const auto k = lib.handles.find(std::string_view(name)); k != lib.handles.end()) {
        *kernel = k->second.get();
        return CUDA_SUCCESS;
    }
    if (std::find(lib.kernels.begin(), lib.kernels.end(), name) == lib.kernels.end()) return CUDA_ERROR_NOT_FOUND;
    auto k = std::make_unique<CUkern_st>();
    k->library = &lib;
    k->name = name;
    *kernel = k.get();
    s.kernels.insert(k.get());
    lib.handles.emplace(name, std::move(k));
    return CUDA_SUCCESS;
}

CUresult function_of(State& s, CUmod_st& m, const char* name, CUfunction* function);

// The kernel's function in the current context, its library loaded there on first use.
CUresult CUDAAPI impl_cuKernelGetFunction(CUfunction* function, CUkernel kernel) {
    SDM_FAKE_ENTER(e_cuKernelGetFunction);
    if (!function) return CUDA_ERROR_INVALID_VALUE;
    if (!s.kernels.contains(kernel)) return CUDA_ERROR_INVALID_HANDLE;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    CUmod_st* m = nullptr;
    if (const CUresult r = library_module(s, *kernel->library, ctx, m); r != CUDA_SUCCESS) return r;
    return function_of(s, *m, kernel->name.c_str(), function);
}

// Nothing runs (with hold_work, the launch is queued until finished); a launch checks that the function's module is still loaded (a launch through a
// function of an unloaded module is the bug hot-reload tests look for) and counts.
CUresult CUDAAPI impl_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned,
                                     CUstream stream, void**, void**) {
    SDM_FAKE_ENTER(e_cuLaunchKernel);
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (const auto capture = s.captures.find(stream); capture != s.captures.end()) {
        capture->second.graph->kernels.push_back(f);  // recorded, not run
        return CUDA_SUCCESS;
    }
    if (s.config.hold_work) s.queued.push_back({s.next_seq++, stream, f->module});
    return CUDA_SUCCESS;
}

// Occupancy as a simple model of an SM: 2048 threads, 32 blocks, the device's opt-in shared memory
// plus 1 KiB per block, 1 KiB reserved per resident block.
int fake_blocks_per_sm(const Device& d, unsigned block, size_t smem) {
    if (block == 0 || block > 1024) return 0;
    const long per_sm = static_cast<long>(d.smem_optin) + 1024;
    return static_cast<int>(std::min<long>({32, 2048 / static_cast<long>(block), per_sm / (static_cast<long>(smem) + 1024)}));
}

const Device* device_of(const State& s, const CUfunc_st* f) { return device(s, f->module->device); }

CUresult CUDAAPI impl_cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
    SDM_FAKE_ENTER(e_cuFuncSetAttribute);
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
        f->carveout = value;
        return CUDA_SUCCESS;
    }
    if (attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
    if (value < 0 || value > device_of(s, f)->smem_optin) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_smem = value;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction f, int block, size_t smem) {
    SDM_FAKE_ENTER(e_cuOccupancyMaxActiveBlocksPerMultiprocessor);
    if (!n || block <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    *n = static_cast<int>(smem) > f->max_dynamic_smem ? 0 : fake_blocks_per_sm(*device_of(s, f), static_cast<unsigned>(block), smem);
    if (const auto forced = live_config(s).occupancy) *n = *forced;
    return CUDA_SUCCESS;
}

// The cluster attribute of a launch configuration, or nullptr.
const CUlaunchAttribute* find_attribute(const CUlaunchConfig* c, CUlaunchAttributeID id) {
    for (unsigned i = 0; i < c->numAttrs; ++i)
        if (c->attrs[i].id == id) return &c->attrs[i];
    return nullptr;
}

CUresult CUDAAPI impl_cuOccupancyMaxActiveClusters(int* n, CUfunction f, const CUlaunchConfig* c) {
    SDM_FAKE_ENTER(e_cuOccupancyMaxActiveClusters);
    if (!n || !c) return CUDA_ERROR_INVALID_VALUE;
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    const Device& d = *device_of(s, f);
    const auto* cluster = find_attribute(c, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    const unsigned size = cluster ? cluster->value.clusterDim.x * cluster->value.clusterDim.y * cluster->value.clusterDim.z : 1;
    if (size > 1 && d.major < 9) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *n = fake_blocks_per_sm(d, c->blockDimX * c->blockDimY * c->blockDimZ, c->sharedMemBytes) * d.sm_count / static_cast<int>(size);
    return CUDA_SUCCESS;
}

// The parameter buffer a launch hands its kernel (sdm_fake_cuda_last_params): from kernelParams,
// each parameter's bytes at its offset in the C layout of the signature derived from the image
// (the driver reads as many bytes through each pointer as the image's parameter table says; the
// fake takes the sizes from the same table, parsed by sdm's archive/kernel_params), padding zero;
// or the buffer that `extra` gives (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE). None for a kernel
// whose parameters do not derive, or without either.
std::optional<std::vector<unsigned char>> parameter_buffer(const CUfunc_st& f, void** kernel_params, void** extra) {
    if (kernel_params != nullptr) {
        if (!f.params) return std::nullopt;
        uint32_t total = 0;
        const std::vector<uint32_t> offsets = sdm::archive::param_offsets(*f.params, &total);
        std::vector<unsigned char> buffer(total, 0);
        for (size_t i = 0; i < offsets.size(); ++i)
            std::memcpy(buffer.data() + offsets[i], kernel_params[i], sdm::archive::param_type_size((*f.params)[i]));
        return buffer;
    }
    const unsigned char* data = nullptr;
    size_t size = 0;
    for (void** e = extra; e != nullptr && *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) data = static_cast<const unsigned char*>(e[1]);
        else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<const size_t*>(e[1]);
    }
    if (data == nullptr) return std::nullopt;
    return std::vector<unsigned char>(data, data + size);
}

// cuLaunchKernelEx as the driver checks it: a live function, dims within limits, dynamic shared
// memory within the function's limit, clusters and PDL only on 9.0+, the grid a multiple of the
// cluster. Nothing runs.
CUresult CUDAAPI impl_cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** kernel_params, void** extra) {
    SDM_FAKE_ENTER(e_cuLaunchKernelEx);
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    const Device& d = *device_of(s, f);
    if (c->gridDimX == 0 || c->gridDimY == 0 || c->gridDimZ == 0 || c->blockDimX == 0 || c->blockDimY == 0 || c->blockDimZ == 0 ||
        c->blockDimX * c->blockDimY * c->blockDimZ > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (static_cast<int>(c->sharedMemBytes) > f->max_dynamic_smem) return CUDA_ERROR_INVALID_VALUE;
    if (const auto* cluster = find_attribute(c, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)) {
        if (d.major < 9) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        const auto& dim = cluster->value.clusterDim;
        if (dim.x == 0 || dim.y == 0 || dim.z == 0 || dim.x * dim.y * dim.z > 8 || c->gridDimX % dim.x != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
    if (find_attribute(c, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) && d.major < 9) return CUDA_ERROR_NOT_SUPPORTED;
    if (const auto* coop = find_attribute(c, CU_LAUNCH_ATTRIBUTE_COOPERATIVE); coop && coop->value.cooperative) {
        // As the driver: every block resident at once, or CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
        int per_sm = static_cast<int>(c->sharedMemBytes) > f->max_dynamic_smem ? 0 : fake_blocks_per_sm(d, c->blockDimX * c->blockDimY * c->blockDimZ, c->sharedMemBytes);
        if (const auto forced = live_config(s).occupancy) per_sm = *forced;
        if (uint64_t{c->gridDimX} * c->gridDimY * c->gridDimZ > static_cast<uint64_t>(per_sm) * static_cast<uint64_t>(d.sm_count))
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    if (const auto* priority = find_attribute(c, CU_LAUNCH_ATTRIBUTE_PRIORITY); priority && (priority->value.priority < -5 || priority->value.priority > 0))
        return CUDA_ERROR_INVALID_VALUE;
    // The configuration, as sdm_fake_cuda_last_launch reports it.
    sdm_fake_cuda_launch& l = s.last_launch;
    l = sdm_fake_cuda_launch{};
    l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
    l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
    l.smem_bytes = c->sharedMemBytes;
    l.attribute_count = std::min<uint32_t>(c->numAttrs, 32);
    for (uint32_t i = 0; i < l.attribute_count; ++i) {
        const CUlaunchAttribute& a = c->attrs[i];
        l.attribute_ids[i] = static_cast<int32_t>(a.id);
        if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            l.cluster[0] = a.value.clusterDim.x, l.cluster[1] = a.value.clusterDim.y, l.cluster[2] = a.value.clusterDim.z;
        if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) l.cooperative = a.value.cooperative;
        if (a.id == CU_LAUNCH_ATTRIBUTE_PRIORITY) l.priority = a.value.priority;
        if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) l.pdl = a.value.programmaticStreamSerializationAllowed;
    }
    l.stream = c->hStream;
    // Read through kernelParams only when asked: a test that archives a kernel under a shorter
    // signature than its image's passes fewer pointers than the image has parameters.
    if (live_config(s).record_params) s.last_params = parameter_buffer(*f, kernel_params, extra);
    else s.last_params.reset();
    if (const auto capture = s.captures.find(c->hStream); capture != s.captures.end()) {
        capture->second.graph->kernels.push_back(f);  // recorded, not run
        return CUDA_SUCCESS;
    }
    if (s.config.hold_work) s.queued.push_back({s.next_seq++, c->hStream, f->module});
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block, CUfunction f, CUoccupancyB2DSize, size_t smem, int limit) {
    SDM_FAKE_ENTER(e_cuOccupancyMaxPotentialBlockSize);
    if (!min_grid || !block) return CUDA_ERROR_INVALID_VALUE;
    if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    const Device& d = *device_of(s, f);
    // The largest block (a multiple of 32, within the limit) of the most resident threads.
    const int max_block = limit > 0 ? std::min(limit, 1024) : 1024;
    int best = 0, best_threads = 0;
    for (int b = 32; b <= max_block; b += 32) {
        const int per_sm = static_cast<int>(smem) > f->max_dynamic_smem ? 0 : fake_blocks_per_sm(d, static_cast<unsigned>(b), smem);
        if (per_sm * b >= best_threads && per_sm > 0) best = b, best_threads = per_sm * b;
    }
    *block = best;
    *min_grid = best == 0 ? 0 : best_threads / best * d.sm_count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuCtxGetStreamPriorityRange(int* least, int* greatest) {
    SDM_FAKE_ENTER(e_cuCtxGetStreamPriorityRange);
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    if (least) *least = 0;  // H200's range
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}

// ---- events -----------------------------------------------------------------------------------

bool legacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }

// Whether queued launch q is one the event waits for.
bool waits_for(const CUevent_st& e, const State::Queued& q) { return q.seq <= e.seq && (legacy(e.stream) || q.stream == e.stream); }

CUresult CUDAAPI impl_cuEventCreate(CUevent* event, unsigned int) {
    SDM_FAKE_ENTER(e_cuEventCreate);
    if (!event) return CUDA_ERROR_INVALID_VALUE;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    auto e = std::make_unique<CUevent_st>();
    *event = e.get();
    s.events.emplace(e.get(), std::move(e));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuEventRecord(CUevent event, CUstream stream) {
    SDM_FAKE_ENTER(e_cuEventRecord);
    const auto it = s.events.find(event);
    if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    it->second->recorded = true;
    it->second->stream = stream;
    it->second->seq = s.next_seq - 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuEventQuery(CUevent event) {
    SDM_FAKE_ENTER(e_cuEventQuery);
    const auto it = s.events.find(event);
    if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    const CUevent_st& e = *it->second;
    if (!e.recorded) return CUDA_SUCCESS;
    return std::any_of(s.queued.begin(), s.queued.end(), [&](const auto& q) { return waits_for(e, q); }) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuEventSynchronize(CUevent event) {
    SDM_FAKE_ENTER(e_cuEventSynchronize);
    const auto it = s.events.find(event);
    if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    const CUevent_st& e = *it->second;
    if (e.recorded) std::erase_if(s.queued, [&](const auto& q) { return waits_for(e, q); });  // waited: that work is done
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuEventDestroy(CUevent event) {
    SDM_FAKE_ENTER(e_cuEventDestroy);
    return s.events.erase(event) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI impl_cuCtxSynchronize(void) {
    SDM_FAKE_ENTER(e_cuCtxSynchronize);
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    std::erase_if(s.queued, [&](const auto& q) { return q.module->context == ctx; });
    return CUDA_SUCCESS;
}

CUresult function_of(State& s, CUmod_st& m, const char* name, CUfunction* function) {
    if (const auto f = m.functions.find(std::string_view(name)); f != m.functions.end()) {
        *function = f->second.get();
        return CUDA_SUCCESS;
    }
    if (std::find(m.kernels.begin(), m.kernels.end(), name) == m.kernels.end()) return CUDA_ERROR_NOT_FOUND;
    auto f = std::make_unique<CUfunc_st>();
    f->module = &m;
    f->name = name;
    if (const auto params = m.params.find(std::string_view(name)); params != m.params.end()) f->params = params->second;
    *function = f.get();
    s.functions.insert(f.get());
    m.functions.emplace(name, std::move(f));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
    SDM_FAKE_ENTER(e_cuModuleGetFunction);
    if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.modules.find(module);
    if (it == s.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    return function_of(s, *it->second, name, function);
}

CUresult global_of(CUmod_st& m, const char* name, CUdeviceptr* dptr, size_t* bytes) {
    const auto it = m.globals.find(std::string_view(name));
    if (it == m.globals.end()) return CUDA_ERROR_NOT_FOUND;
    if (dptr) *dptr = reinterpret_cast<CUdeviceptr>(it->second.data());
    if (bytes) *bytes = it->second.size();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
    SDM_FAKE_ENTER(e_cuModuleGetGlobal);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.modules.find(module);
    if (it == s.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    return global_of(*it->second, name, dptr, bytes);
}

// The variable of the library's module in the current context, loaded there on first use.
CUresult CUDAAPI impl_cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
    SDM_FAKE_ENTER(e_cuLibraryGetGlobal);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.libraries.find(library);
    if (it == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    CUmod_st* m = nullptr;
    if (const CUresult r = library_module(s, *it->second, ctx, m); r != CUDA_SUCCESS) return r;
    return global_of(*m, name, dptr, bytes);
}

// A device address the fake handed out (a global's storage, or cuMemAlloc's) is host memory:
// the copies are memcpy; a NULL one is refused as the driver does.
CUresult CUDAAPI impl_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream) {
    SDM_FAKE_ENTER(e_cuMemcpyHtoDAsync);
    if (bytes > 0 && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > 0) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream) {
    SDM_FAKE_ENTER(e_cuMemcpyDtoHAsync);
    if (bytes > 0 && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > 0) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

// The device's memory (DeviceMemory) of the current context, out of the 80 GiB cuDeviceTotalMem reports.
CUresult CUDAAPI impl_cuMemGetInfo(size_t* free, size_t* total) {
    SDM_FAKE_ENTER(e_cuMemGetInfo);
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); r != CUDA_SUCCESS) return r;
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    *total = size_t{80} << 30;
    *free = *total - s.memory[ctx->device].used();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction function) {
    SDM_FAKE_ENTER(e_cuFuncGetAttribute);
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    if (!s.functions.contains(function)) return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
        case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = function->module->ptx_version; break;
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = function->module->binary_version; break;
        // Fixed values, each distinct from the others, so that a test sees every attribute land
        // in its own field (sdm_kernel_attributes).
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 136; break;
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 24; break;
        case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 1; break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = function->max_dynamic_smem; break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = function->carveout; break;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *pi = 2; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *pi = 3; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = 4; break;
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = 5; break;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 6; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// ---- streams ----------------------------------------------------------------------------------

CUresult CUDAAPI impl_cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
    SDM_FAKE_ENTER(e_cuStreamIsCapturing);
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    const bool default_stream = stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
    CUctx_st* ctx = nullptr;
    if (const CUresult r = usable_current(s, ctx); default_stream && r != CUDA_SUCCESS) return r;
    *status = live_config(s).capturing || s.captures.contains(stream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

// The capture's id and graph (Config::capturing alone reports a capture without either). Asked
// at every sdm_launch, which the fake takes without a current context, so this does too.
CUresult CUDAAPI impl_cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                             const CUgraphNode** dependencies, const CUgraphEdgeData** edges, size_t* count) {
    SDM_FAKE_ENTER(e_cuStreamGetCaptureInfo);
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.captures.find(stream);
    *status = live_config(s).capturing || it != s.captures.end() ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id) *id = it != s.captures.end() ? it->second.id : 0;
    if (graph) *graph = it != s.captures.end() ? it->second.graph : nullptr;
    if (dependencies) *dependencies = nullptr;
    if (edges) *edges = nullptr;
    if (count) *count = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
    SDM_FAKE_ENTER(e_cuStreamBeginCapture);
    if (legacy(stream) || stream == CU_STREAM_PER_THREAD) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s.captures.contains(stream)) return CUDA_ERROR_ILLEGAL_STATE;
    auto g = std::make_unique<CUgraph_st>();
    s.captures[stream] = {++s.next_capture_id, g.get()};
    s.graphs.emplace(g.get(), std::move(g));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuStreamEndCapture(CUstream stream, CUgraph* graph) {
    SDM_FAKE_ENTER(e_cuStreamEndCapture);
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    const auto it = s.captures.find(stream);
    if (it == s.captures.end()) return CUDA_ERROR_ILLEGAL_STATE;
    *graph = it->second.graph;
    s.captures.erase(it);
    return CUDA_SUCCESS;
}

// A destructor to run once the call's lock is let go.
struct Destructor {
    CUhostFn fn;
    void* ptr;
};

void release_object(State& s, CUuserObject_st* object, unsigned count, std::vector<Destructor>& run) {
    object->refs -= std::min(object->refs, count);
    if (object->refs > 0) return;
    run.push_back({object->destroy, object->ptr});
    s.user_objects.erase(object);
}

// As the driver: on a thread of its own, with no lock of the driver's held (a destructor with
// CU_USER_OBJECT_NO_DESTRUCTOR_SYNC may not call CUDA; one that did would deadlock here).
void run_destructors(Lock& lock, const std::vector<Destructor>& run) {
    lock.unlock();
    if (!run.empty()) std::thread([run] {
            for (const auto& d : run) d.fn(d.ptr);
        }).join();
}

CUresult CUDAAPI impl_cuUserObjectCreate(CUuserObject* out, void* ptr, CUhostFn destroy, unsigned initial, unsigned flags) {
    SDM_FAKE_ENTER(e_cuUserObjectCreate);
    if (!out || !destroy || initial == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) return CUDA_ERROR_INVALID_VALUE;
    auto o = std::make_unique<CUuserObject_st>();
    o->ptr = ptr, o->destroy = destroy, o->refs = initial;
    *out = o.get();
    s.user_objects.emplace(o.get(), std::move(o));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuUserObjectRelease(CUuserObject object, unsigned count) {
    SDM_FAKE_ENTER(e_cuUserObjectRelease);
    if (!s.user_objects.contains(object) || count == 0) return CUDA_ERROR_INVALID_VALUE;
    std::vector<Destructor> run;
    release_object(s, object, count, run);
    run_destructors(lock, run);
    return CUDA_SUCCESS;
}

// CU_GRAPH_USER_OBJECT_MOVE hands the graph the caller's references; otherwise it takes new ones.
CUresult CUDAAPI impl_cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned count, unsigned flags) {
    SDM_FAKE_ENTER(e_cuGraphRetainUserObject);
    if (!s.graphs.contains(graph) || !s.user_objects.contains(object) || count == 0 || (flags & ~unsigned{CU_GRAPH_USER_OBJECT_MOVE}) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0) object->refs += count;
    graph->held[object] += count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuGraphDestroy(CUgraph graph) {
    SDM_FAKE_ENTER(e_cuGraphDestroy);
    const auto it = s.graphs.find(graph);
    if (it == s.graphs.end()) return CUDA_ERROR_INVALID_VALUE;
    std::vector<Destructor> run;
    for (const auto& [object, count] : it->second->held) release_object(s, object, count, run);
    std::erase_if(s.captures, [&](const auto& c) { return c.second.graph == graph; });
    s.graphs.erase(it);
    run_destructors(lock, run);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
    SDM_FAKE_ENTER(e_cuGraphInstantiateWithFlags);
    if (!exec || !s.graphs.contains(graph)) return CUDA_ERROR_INVALID_VALUE;
    auto e = std::make_unique<CUgraphExec_st>();
    e->kernels = graph->kernels;
    for (const auto& [object, count] : graph->held) {
        ++object->refs;
        e->held.push_back(object);
    }
    *exec = e.get();
    s.graph_execs.emplace(e.get(), std::move(e));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI impl_cuGraphExecDestroy(CUgraphExec exec) {
    SDM_FAKE_ENTER(e_cuGraphExecDestroy);
    const auto it = s.graph_execs.find(exec);
    if (it == s.graph_execs.end()) return CUDA_ERROR_INVALID_VALUE;
    std::vector<Destructor> run;
    for (CUuserObject_st* object : it->second->held) release_object(s, object, 1, run);
    s.graph_execs.erase(it);
    run_destructors(lock, run);
    return CUDA_SUCCESS;
}

// Runs the graph's kernels (queued with hold_work). A kernel whose module was unloaded is the bug
// graph tracking prevents: CUDA_ERROR_INVALID_HANDLE, nothing queued.
CUresult CUDAAPI impl_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    SDM_FAKE_ENTER(e_cuGraphLaunch);
    const auto it = s.graph_execs.find(exec);
    if (it == s.graph_execs.end()) return CUDA_ERROR_INVALID_VALUE;
    for (const CUfunc_st* f : it->second->kernels)
        if (!s.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (s.config.hold_work)
        for (const CUfunc_st* f : it->second->kernels) s.queued.push_back({s.next_seq++, stream, f->module});
    return CUDA_SUCCESS;
}

// ---- cuGetProcAddress -------------------------------------------------------------------------

template <typename F>
void* proc(F* f) {
    return reinterpret_cast<void*>(f);
}

struct Proc {
    Entry entry;
    void* fn;
};

// Each implementation is checked against cuda.h's prototype of the name (the macro-expanded,
// current version: cuDeviceTotalMem is cuDeviceTotalMem_v2, cuGetProcAddress cuGetProcAddress_v2).
// The three names libcuda exports resolve to the exports themselves, as dlsym finds them.
const std::array<Proc, kEntryCount> kProcs = [] {
    std::array<Proc, kEntryCount> procs{{
#define SDM_FAKE_PROC(name) {e_##name, proc(static_cast<decltype(&::name)>(&impl_##name))},
        SDM_FAKE_ENTRIES(SDM_FAKE_PROC)
#undef SDM_FAKE_PROC
    }};
    procs[e_cuInit].fn = proc(&::cuInit);
    procs[e_cuDriverGetVersion].fn = proc(&::cuDriverGetVersion);
    procs[e_cuGetProcAddress].fn = proc(&::cuGetProcAddress);  // cuGetProcAddress_v2
    return procs;
}();

CUresult CUDAAPI impl_cuGetProcAddress(const char* symbol, void** pfn, int /*cuda_version*/, cuuint64_t /*flags*/,
                                       CUdriverProcAddressQueryResult* status) {
    State& s = state();
    Lock lock(s.mu);
    if (const auto injected = enter(s, e_cuGetProcAddress)) return *injected;
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    const auto entry = find_entry(symbol);
    if (!entry || s.config.missing.contains(std::string_view(symbol))) {
        *pfn = nullptr;
        if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = kProcs[static_cast<size_t>(*entry)].fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

}  // namespace

// ---- exports ----------------------------------------------------------------------------------

extern "C" {

SDM_FAKE_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) { return impl_cuInit(flags); }

SDM_FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* version) { return impl_cuDriverGetVersion(version); }

SDM_FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                                     CUdriverProcAddressQueryResult* status) {
    return impl_cuGetProcAddress(symbol, pfn, cuda_version, flags, status);
}

// The CUDA 11.3-11.8 ABI of the unversioned name has no status parameter.
#undef cuGetProcAddress
SDM_FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags);
SDM_FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
    return impl_cuGetProcAddress(symbol, pfn, cuda_version, flags, nullptr);
}

SDM_FAKE_EXPORT int32_t sdm_fake_cuda_configure(const sdm_fake_cuda_config* config) {
    std::optional<Config> c;
    if (config) {
        std::string error;
        c = from_struct(*config, error);
        if (!c) {
            std::fprintf(stderr, "sdm fake CUDA driver: sdm_fake_cuda_configure: %s\n", error.c_str());
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    State& s = state();
    Lock lock(s.mu);
    s.configured = std::move(c);  // NULL: nothing configured, the environment again
    const bool held = live_config(s).hold_loads;
    lock.unlock();
    set_loads_held(held);
    return CUDA_SUCCESS;
}

SDM_FAKE_EXPORT int64_t sdm_fake_cuda_calls(const char* entry_point) {
    if (!entry_point) return -1;
    State& s = state();
    Lock lock(s.mu);
    const std::string_view name(entry_point);
    if (name == "@modules") return static_cast<int64_t>(s.modules.size());
    if (name == "@device0_memory") return static_cast<int64_t>(s.memory[0].used());
    if (name == "@queued") return static_cast<int64_t>(s.queued.size());
    if (name == "@events") return static_cast<int64_t>(s.events.size());
    if (name == "@libraries") return static_cast<int64_t>(s.libraries.size());
    if (name == "@unloaded_busy") return s.unloaded_busy;
    if (name == "@graphs") return static_cast<int64_t>(s.graphs.size());
    if (name == "@graph_execs") return static_cast<int64_t>(s.graph_execs.size());
    if (name == "@user_objects") return static_cast<int64_t>(s.user_objects.size());
    if (name == "@held_loads") {
        LoadGate& g = load_gate();
        std::lock_guard gate(g.mu);
        return g.waiting;
    }
    if (name == "@contexts") {
        int64_t retained = 0;
        for (const auto& c : s.contexts)
            if (c) retained += c->refcount;
        return retained;
    }
    const auto entry = find_entry(name);
    return entry ? s.calls[static_cast<size_t>(*entry)] : -1;
}

SDM_FAKE_EXPORT int32_t sdm_fake_cuda_last_launch(sdm_fake_cuda_launch* launch) {
    State& s = state();
    Lock lock(s.mu);
    if (!launch || s.last_launch.block[0] == 0) return CUDA_ERROR_NOT_FOUND;
    *launch = s.last_launch;
    return CUDA_SUCCESS;
}

SDM_FAKE_EXPORT int32_t sdm_fake_cuda_last_params(void* buffer, size_t capacity, size_t* size) {
    State& s = state();
    Lock lock(s.mu);
    if (!s.last_params || s.last_launch.block[0] == 0) return CUDA_ERROR_NOT_FOUND;
    if (size) *size = s.last_params->size();
    if (buffer) std::memcpy(buffer, s.last_params->data(), std::min(capacity, s.last_params->size()));
    return CUDA_SUCCESS;
}

SDM_FAKE_EXPORT void sdm_fake_cuda_finish_work(void) {
    State& s = state();
    Lock lock(s.mu);
    s.queued.clear();
}

SDM_FAKE_EXPORT void sdm_fake_cuda_release_loads(int64_t count) {
    LoadGate& g = load_gate();
    std::lock_guard lock(g.mu);
    if (count > 0) g.permits += count;
    g.cv.notify_all();
}

SDM_FAKE_EXPORT void sdm_fake_cuda_reset(void) {
    State& s = state();
    Lock lock(s.mu);
    // What a test left of graphs goes, their user objects' destructors run (as at the driver's end).
    std::vector<Destructor> run;
    for (const auto& [object, o] : s.user_objects) run.push_back({o->destroy, o->ptr});
    s.user_objects.clear();
    s.graph_execs.clear();
    s.graphs.clear();
    s.captures.clear();
    run_destructors(lock, run);
    lock.lock();
    s.initialized = false;
    s.calls.fill(0);
    s.modules.clear();
    s.memory.clear();
    s.functions.clear();
    s.queued.clear();
    s.events.clear();
    s.libraries.clear();
    s.kernels.clear();
    s.last_launch = sdm_fake_cuda_launch{};
    s.last_params.reset();
    s.unloaded_busy = 0;
    for (const auto& c : s.contexts)
        if (c) c->refcount = 0;
    tls_depth = 0;
}

}  // extern "C"
