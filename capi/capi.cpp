// The C ABI (include/sdm/sdm.h): a thin layer that checks arguments, translates handles and
// statuses, and keeps every exception on this side of the boundary. Logic lives below it.
#include "sdm/sdm.h"

#include <chrono>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <new>
#include <vector>

#include "capi_internal.hpp"
#include "struct_sizes.hpp"
#include "common/hardware_matrix.hpp"
#include "runtime/platform/abi_enums.hpp"
#include "runtime/kernel/globals.hpp"
#include "runtime/kernel/kernel_attributes.hpp"
#include "runtime/kernel/kernel_names.hpp"
#include "runtime/select/plan_abi.hpp"
#include "runtime/registry/preload.hpp"
#include "runtime/runtime.hpp"
#include "sdm_version.h"

using sdm::Error;
using sdm::ErrorCode;
using sdm::Result;
using sdm::kLastErrorCode;

struct sdm_runtime {
    sdm::runtime::Runtime impl;
    explicit sdm_runtime(sdm::runtime::RuntimeOptions o) : impl(std::move(o)) {}
    // The strings sdm_archive_info_get hands out, kept until the runtime is destroyed as sdm.h
    // promises, though an archive may be unmounted or replaced before: one copy of each.
    std::mutex strings_mutex;
    std::set<std::string, std::less<>> strings;
    const char* kept(std::string_view text) {
        std::lock_guard lock(strings_mutex);
        auto it = strings.find(text);
        if (it == strings.end()) it = strings.emplace(text).first;
        return it->c_str();
    }
};

namespace sdm::capi {

// ErrorCode's values are the sdm_status values (common/result.hpp, its list generated from sdm.h
// into common/status_codes.inc): a code crosses unchanged.
#define SDM_STATUS_CODE(code, value, status) \
    static_assert(static_cast<int32_t>(ErrorCode::code) == (status) && (value) == (status), #code " is not " #status);
#include "common/status_codes.inc"
#undef SDM_STATUS_CODE

sdm_status status_of(ErrorCode code) noexcept { return static_cast<sdm_status>(code); }

// The other enums that cross as numbers are pinned in runtime/platform/abi_enums.hpp.

sdm::runtime::Runtime* impl(sdm_runtime* r) noexcept { return r != nullptr ? &r->impl : nullptr; }

// Hands `e` to the caller (when it asked) and to the runtime's last error; returns its status.
sdm_status fail(sdm::runtime::Runtime* runtime, sdm_error** out, Error e) noexcept {
    const sdm_status status = status_of(e.code);
    try {
        if (runtime != nullptr) runtime->record_error(e);
        if (out != nullptr) *out = new sdm_error{status, std::move(e.message), e.native, std::move(e.log)};
    } catch (...) {
        if (out != nullptr) *out = nullptr;  // no memory for the details: the status still says it
    }
    return status;
}

sdm_status fail(sdm::runtime::Runtime* runtime, sdm_error** out, ErrorCode code, std::string message) noexcept {
    try {
        return fail(runtime, out, make_error(code, std::move(message)));
    } catch (...) {
        if (out != nullptr) *out = nullptr;
        return status_of(code);
    }
}

sdm_status fail(sdm_runtime* runtime, sdm_error** out, Error e) noexcept { return fail(impl(runtime), out, std::move(e)); }
sdm_status fail(sdm_runtime* runtime, sdm_error** out, ErrorCode code, std::string message) noexcept {
    return fail(impl(runtime), out, code, std::move(message));
}

// A handle that may outlive its runtime (a kernel list) reports into the runtime's error slot,
// which it shares (runtime.hpp, LastError).
sdm_status fail(sdm::runtime::LastError* errors, sdm_error** out, Error e) noexcept {
    try {
        if (errors != nullptr) errors->record(e);
    } catch (...) {  // no memory for the copy: the caller's error still says it
    }
    return fail(static_cast<sdm::runtime::Runtime*>(nullptr), out, std::move(e));
}
sdm_status fail(sdm::runtime::LastError* errors, sdm_error** out, ErrorCode code, std::string message) noexcept {
    try {
        return fail(errors, out, make_error(code, std::move(message)));
    } catch (...) {
        if (out != nullptr) *out = nullptr;
        return status_of(code);
    }
}

// Calls that fail before there is a runtime (sdm_runtime_create).
sdm_status fail(std::nullptr_t, sdm_error** out, Error e) noexcept { return fail(static_cast<sdm::runtime::Runtime*>(nullptr), out, std::move(e)); }
sdm_status fail(std::nullptr_t, sdm_error** out, ErrorCode code, std::string message) noexcept {
    return fail(static_cast<sdm::runtime::Runtime*>(nullptr), out, code, std::move(message));
}

// A kernel's calls have no runtime argument: their errors reach its runtime's last error through it.
const sdm::runtime::KernelHandle* handle(const sdm_kernel* k) noexcept { return reinterpret_cast<const sdm::runtime::KernelHandle*>(k); }
sdm::runtime::Runtime* owner(const sdm_kernel* k) noexcept { return k != nullptr ? static_cast<sdm::runtime::Runtime*>(handle(k)->owner) : nullptr; }

sdm_status ok(sdm_error** out) noexcept {
    if (out != nullptr) *out = nullptr;
    return SDM_OK;
}

// Runs `body` (returning sdm_status), mapping any exception onto a status.
template <typename RuntimePointer, typename Body>
sdm_status guarded(RuntimePointer runtime, sdm_error** out, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return fail(runtime, out, ErrorCode::out_of_memory, "out of memory");
    } catch (const std::exception& e) {
        return fail(runtime, out, ErrorCode::internal, std::string("internal error: ") + e.what() + "; please report it");
    } catch (...) {
        return fail(runtime, out, ErrorCode::internal, "internal error: unknown exception; please report it");
    }
}

// A struct the caller sized: at least the 1.0 size `minimum`.
bool sized(const void* p, uint32_t struct_size, size_t minimum) noexcept { return p != nullptr && struct_size >= minimum; }

std::string struct_size_message(const char* type, uint32_t given, size_t minimum) {
    return std::string(type) + ".struct_size is " + std::to_string(given) + ", below the " + std::to_string(minimum) +
           " bytes of ABI 1.0: set it to sizeof(" + type + ")";
}


// The checks of a call on `owner` (its runtime or kernel, named `owner_arg`) that fills or reads a
// caller-sized struct `s` (argument `arg`, C type `type`): the failure, or nullopt when both are usable.
template <typename Owner, typename S>
std::optional<sdm_status> unusable(Owner* owner, sdm_error** error, const char* api, const char* owner_arg, const S* s, const char* arg, const char* type,
                                   size_t minimum) {
    sdm::runtime::Runtime* rt = nullptr;
    if constexpr (std::is_same_v<std::remove_const_t<Owner>, sdm_kernel>) rt = sdm::capi::owner(owner);
    else rt = impl(owner);
    if (owner == nullptr || s == nullptr) return fail(rt, error, ErrorCode::invalid_argument, std::string(api) + ": " + owner_arg + " and " + arg + " must not be NULL");
    if (!sized(s, s->struct_size, minimum)) return fail(rt, error, ErrorCode::invalid_argument, std::string(api) + ": " + struct_size_message(type, s->struct_size, minimum));
    return std::nullopt;
}

}  // namespace sdm::capi

using namespace sdm::capi;

extern "C" {

SDM_API const char* sdm_status_string(sdm_status status) {
    if (status == SDM_OK) return "SDM_OK";
    if (status < 1 || status > kLastErrorCode) return "SDM_ERROR_UNKNOWN";
    return sdm::status_name(static_cast<ErrorCode>(status));
}

SDM_API uint32_t sdm_abi_version(void) { return (uint32_t{SDM_ABI_VERSION_MAJOR} << 16) | SDM_ABI_VERSION_MINOR; }
SDM_API const char* sdm_version_string(void) { return SDM_VERSION_STRING; }

SDM_API sdm_status sdm_error_code(const sdm_error* error) { return error != nullptr ? error->code : SDM_OK; }
SDM_API const char* sdm_error_message(const sdm_error* error) { return error != nullptr ? error->message.c_str() : ""; }
SDM_API int32_t sdm_error_native(const sdm_error* error) { return error != nullptr ? error->native : 0; }
SDM_API const char* sdm_error_log(const sdm_error* error) { return error != nullptr ? error->log.c_str() : ""; }
SDM_API void sdm_error_destroy(sdm_error* error) { delete error; }

namespace {

// sdm_runtime_params.device_contexts: ordinal -> the host's context, for the non-NULL ones.
Result<std::map<int32_t, CUcontext>> device_contexts(void* const* contexts, uint32_t count) {
    constexpr uint32_t kMaxDeviceContexts = 1024;
    std::map<int32_t, CUcontext> out;
    if (count == 0) return out;
    if (contexts == nullptr)
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: device_context_count is " + std::to_string(count) + " but device_contexts is NULL");
    if (count > kMaxDeviceContexts)
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: device_context_count is " + std::to_string(count) + ", more than the " +
                                                                std::to_string(kMaxDeviceContexts) + " devices sdm accepts");
    for (uint32_t i = 0; i < count; ++i)
        if (contexts[i] != nullptr) out.emplace(static_cast<int32_t>(i), static_cast<CUcontext>(contexts[i]));
    return out;
}

}  // namespace

namespace {

// sdm_runtime_params.signature_policy and trusted_keys (ABI 1.2).
Result<sdm::runtime::SignatureOptions> signature_options(uint32_t policy, const uint8_t* keys, uint32_t count) {
    using sdm::runtime::SignaturePolicy;
    sdm::runtime::SignatureOptions out;
    switch (policy) {
    case SDM_SIGNATURES_DEFAULT: break;
    case SDM_SIGNATURES_OFF: out.policy = SignaturePolicy::off; break;
    case SDM_SIGNATURES_WARN: out.policy = SignaturePolicy::warn; break;
    case SDM_SIGNATURES_REQUIRE: out.policy = SignaturePolicy::require; break;
    default:
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: signature_policy " + std::to_string(policy) +
                                                                " is not SDM_SIGNATURES_DEFAULT, _OFF, _WARN or _REQUIRE");
    }
    if (out.policy && *out.policy != SignaturePolicy::off && !sdm::crypto::available())
        return sdm::crypto::unsupported("sdm_runtime_create: signature_policy " + std::string(sdm::runtime::policy_name(*out.policy)));
    if (count > sdm::runtime::kMaxTrustedKeys)
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: trusted_key_count is " + std::to_string(count) + ", more than the " +
                                                                std::to_string(sdm::runtime::kMaxTrustedKeys) + " allowed");
    if (count > 0 && keys == nullptr)
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: trusted_key_count is " + std::to_string(count) + " but trusted_keys is NULL");
    if (keys != nullptr) {
        std::vector<sdm::crypto::PublicKey> trusted(count);
        for (uint32_t i = 0; i < count; ++i) std::memcpy(trusted[i].data(), keys + size_t{i} * 32, 32);
        out.trusted = std::move(trusted);
    }
    return out;
}

// sdm_runtime_params.jit_isolation and the JIT limits (ABI 1.2).
Result<sdm::runtime::JitIsolationOptions> isolation_options(uint32_t policy, uint32_t time_limit_ms, uint64_t memory_limit_bytes) {
    using sdm::runtime::JitIsolation;
    sdm::runtime::JitIsolationOptions out;
    switch (policy) {
    case SDM_ISOLATION_DEFAULT: break;
    case SDM_ISOLATION_AUTO: out.policy = JitIsolation::automatic; break;
    case SDM_ISOLATION_ALWAYS: out.policy = JitIsolation::always; break;
    case SDM_ISOLATION_NEVER: out.policy = JitIsolation::never; break;
    default:
        return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: jit_isolation " + std::to_string(policy) +
                                                                " is not SDM_ISOLATION_DEFAULT, _AUTO, _ALWAYS or _NEVER");
    }
    if (time_limit_ms != 0) out.seconds = time_limit_ms / 1000.0;
    if (memory_limit_bytes != 0) {
        if (memory_limit_bytes < sdm::runtime::kLeastJitMemoryBytes)
            return sdm::make_error(ErrorCode::invalid_argument, "sdm_runtime_create: jit_memory_limit_bytes " + std::to_string(memory_limit_bytes) +
                                                                    " is below " + std::to_string(sdm::runtime::kLeastJitMemoryBytes >> 20) +
                                                                    " MiB, in which no compiler loads; 0 takes the default (" +
                                                                    std::to_string(sdm::runtime::kDefaultJitMemoryBytes >> 30) + " GiB)");
        out.memory_bytes = memory_limit_bytes;
    }
    return out;
}

}  // namespace

SDM_API sdm_status sdm_runtime_create(const sdm_runtime_params* params, sdm_runtime** runtime, sdm_error** error) {
    return guarded(nullptr, error, [&]() -> sdm_status {
        if (runtime == nullptr) return fail(nullptr, error, ErrorCode::invalid_argument, "sdm_runtime_create: runtime (the out-pointer) is NULL");
        constexpr size_t kMinimum = kRuntimeParamsSize_1_0;
        sdm::runtime::RuntimeOptions options;
        std::vector<uint32_t> unknown_extensions;
        if (params != nullptr) {
            if (!sized(params, params->struct_size, kMinimum))
                return fail(nullptr, error, ErrorCode::invalid_argument,
                            "sdm_runtime_create: " + struct_size_message("sdm_runtime_params", params->struct_size, kMinimum));
            if (params->log_level < SDM_LOG_OFF || params->log_level > SDM_LOG_DEBUG)
                return fail(nullptr, error, ErrorCode::invalid_argument,
                            "sdm_runtime_create: log_level " + std::to_string(params->log_level) + " is not SDM_LOG_OFF..SDM_LOG_DEBUG");
            if ((params->flags & ~uint32_t{SDM_RUNTIME_NO_EMBEDDED_ARCHIVE | SDM_RUNTIME_CURRENT_CONTEXT | SDM_RUNTIME_RELOAD_ANY_CONTRACT}) != 0)
                return fail(nullptr, error, ErrorCode::invalid_argument,
                            "sdm_runtime_create: unknown flags " + std::to_string(params->flags) + " (ABI " + std::to_string(SDM_ABI_VERSION_MAJOR) + "." +
                                std::to_string(SDM_ABI_VERSION_MINOR) + " knows SDM_RUNTIME_NO_EMBEDDED_ARCHIVE, SDM_RUNTIME_CURRENT_CONTEXT and SDM_RUNTIME_RELOAD_ANY_CONTRACT)");
            options.mount_embedded = (params->flags & SDM_RUNTIME_NO_EMBEDDED_ARCHIVE) == 0;
            options.reload_any_contract = (params->flags & SDM_RUNTIME_RELOAD_ANY_CONTRACT) != 0;
            if (params->log_level == SDM_LOG_OFF) options.log_level = sdm::runtime::LogLevel::off;
            else if (params->log_level != SDM_LOG_DEFAULT) options.log_level = static_cast<sdm::runtime::LogLevel>(params->log_level);
            // 1.0 defines no extension: each is skipped (and logged below). The chain is the host's
            // memory: a cycle must not run forever, so it is walked at most kMaxChain links.
            constexpr size_t kMaxChain = 64;
            for (const sdm_chain* link = params->next; link != nullptr; link = link->next) {
                if (unknown_extensions.size() == kMaxChain)
                    return fail(nullptr, error, ErrorCode::invalid_argument,
                                "sdm_runtime_create: params.next holds more than " + std::to_string(kMaxChain) +
                                    " extensions (a chain that loops back on itself?); end it with a NULL next");
                unknown_extensions.push_back(link->type);
            }
            if (params->log_fn != nullptr) {
                const sdm_log_fn fn = params->log_fn;
                void* user = params->log_user_data;
                options.log_sink = [fn, user](sdm::runtime::LogLevel level, std::string_view message) {
                    const std::string text(message);  // NUL-terminated for the host
                    fn(user, static_cast<sdm_log_level>(level), text.c_str(), text.size());
                };
            }
            if (params->cuda_driver != nullptr) options.cuda_driver = params->cuda_driver;
            if ((params->cache_flags & ~uint32_t{SDM_CACHE_DISABLED | SDM_CACHE_READ_ONLY}) != 0 ||
                (params->jit_flags & ~uint32_t{SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_DRIVER | SDM_JIT_NO_PTX_COMPILER}) != 0)
                return fail(nullptr, error, ErrorCode::invalid_argument, "sdm_runtime_create: unknown cache_flags or jit_flags bits");
            if (params->cache_dir != nullptr) options.cache.directory = params->cache_dir;
            options.cache.max_bytes = params->cache_max_bytes;
            options.cache.disabled = (params->cache_flags & SDM_CACHE_DISABLED) != 0;
            options.cache.read_only = (params->cache_flags & SDM_CACHE_READ_ONLY) != 0;
            options.jit.nvjitlink = (params->jit_flags & SDM_JIT_NO_NVJITLINK) == 0;
            options.jit.driver = (params->jit_flags & SDM_JIT_NO_DRIVER) == 0;
            options.jit.ptx_compiler = (params->jit_flags & SDM_JIT_NO_PTX_COMPILER) == 0;
            options.contexts.host = static_cast<CUcontext>(params->cuda_context);
            options.contexts.current = (params->flags & SDM_RUNTIME_CURRENT_CONTEXT) != 0;
            if (params->struct_size >= offsetof(sdm_runtime_params, reserved2)) {  // ABI 1.2
                auto given = device_contexts(params->device_contexts, params->device_context_count);
                if (!given) return fail(nullptr, error, std::move(given).error());
                options.contexts.given = std::move(*given);
                auto signatures = signature_options(params->signature_policy, params->trusted_keys, params->trusted_key_count);
                if (!signatures) return fail(nullptr, error, std::move(signatures).error());
                options.signatures = std::move(*signatures);
            }
            if (params->struct_size >= kRuntimeParamsSize_1_2) {  // the whole of ABI 1.2
                auto isolation = isolation_options(params->jit_isolation, params->jit_time_limit_ms, params->jit_memory_limit_bytes);
                if (!isolation) return fail(nullptr, error, std::move(isolation).error());
                options.isolation = std::move(*isolation);
            }
            if (params->struct_size >= kRuntimeParamsSize_1_3) {  // ABI 1.3: the rollback check's
                if (params->state_dir != nullptr) options.signatures.versions.state_dir = params->state_dir;
                options.signatures.versions.minimum = params->min_archive_version;
            }
            if (params->struct_size >= kRuntimeParamsSize_1_5) options.device_memory_budget = params->device_memory_budget;  // ABI 1.5
            const int ways = (options.contexts.host != nullptr) + options.contexts.current + !options.contexts.given.empty();
            if (ways > 1)
                return fail(nullptr, error, ErrorCode::invalid_argument,
                            "sdm_runtime_create: cuda_context, device_contexts and SDM_RUNTIME_CURRENT_CONTEXT each choose the contexts; set one of them");
            if (params->struct_size >= offsetof(sdm_runtime_params, reserved1)) {  // ABI 1.1
                if (params->kernel_abi_major > 0xffff)
                    return fail(nullptr, error, ErrorCode::invalid_argument,
                                "sdm_runtime_create: kernel_abi_major " + std::to_string(params->kernel_abi_major) + " is not a version major");
                options.kernel_abi_major = static_cast<uint16_t>(params->kernel_abi_major);
            }
        }
        *runtime = new sdm_runtime(std::move(options));
        for (const uint32_t type : unknown_extensions)
            (*runtime)->impl.log().debug("sdm_runtime_create: skipped extension type " + std::to_string(type) + ", unknown to ABI 1.0");
        return ok(error);
    });
}

SDM_API void sdm_runtime_destroy(sdm_runtime* runtime) { delete runtime; }

SDM_API sdm_status sdm_runtime_last_error(sdm_runtime* runtime, sdm_error** last) {
    return guarded(nullptr, nullptr, [&]() -> sdm_status {
        if (runtime == nullptr || last == nullptr) return SDM_ERROR_INVALID_ARGUMENT;
        const auto e = runtime->impl.last_error();
        if (!e) return SDM_ERROR_NOT_FOUND;
        *last = new sdm_error{status_of(e->code), e->message, e->native, e->log};
        return SDM_OK;
    });
}

SDM_API sdm_status sdm_archive_mount_file(sdm_runtime* runtime, const char* path, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || path == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_archive_mount_file: runtime and path must not be NULL");
        auto r = runtime->impl.mount_file(path);
        return r ? ok(error) : fail(runtime, error, std::move(r).error());
    });
}

SDM_API sdm_status sdm_archive_mount_memory(sdm_runtime* runtime, const void* data, size_t size, const char* label, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || (data == nullptr && size != 0))
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_archive_mount_memory: runtime and data must not be NULL");
        auto r = runtime->impl.mount_memory({static_cast<const std::byte*>(data), size}, label != nullptr ? label : "memory");
        return r ? ok(error) : fail(runtime, error, std::move(r).error());
    });
}

SDM_API sdm_status sdm_archive_count(sdm_runtime* runtime, uint32_t* count, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || count == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_archive_count: runtime and count must not be NULL");
        *count = static_cast<uint32_t>(runtime->impl.archives().size());
        return ok(error);
    });
}

SDM_API sdm_status sdm_archive_info_get(sdm_runtime* runtime, uint32_t index, sdm_archive_info* info, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kArchiveInfoSize_1_0;
        if (auto refused = unusable(runtime, error, "sdm_archive_info_get", "runtime", info, "info", "sdm_archive_info", kMinimum)) return *refused;
        const auto archives = runtime->impl.archives();
        if (index >= archives.size())
            return fail(runtime, error, ErrorCode::not_found,
                        "sdm_archive_info_get: archive " + std::to_string(index) + " is not mounted (" + std::to_string(archives.size()) + " are)");
        const auto& m = *archives[index];  // kept alive by the runtime until it is destroyed
        const auto& h = m.archive.header();
        sdm_archive_info out{};
        out.struct_size = info->struct_size;
        out.entry_count = static_cast<uint32_t>(m.archive.entries().size());
        out.kernel_count = m.manifest ? static_cast<uint32_t>(m.manifest->size()) : 0;
        out.kernel_abi_major = h.kernel_abi_major;
        out.kernel_abi_minor = h.kernel_abi_minor;
        out.format_major = h.format_major;
        out.format_minor = h.format_minor;
        out.embedded = m.embedded ? 1 : 0;
        out.size_bytes = h.archive_size;
        out.label = runtime->kept(m.archive.label());
        out.content_version = m.manifest ? runtime->kept(m.manifest->content_version) : "";
        std::memcpy(info, &out, kMinimum);
        return ok(error);
    });
}

SDM_API sdm_status sdm_driver_version(sdm_runtime* runtime, int32_t* version, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || version == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_driver_version: runtime and version must not be NULL");
        auto d = runtime->impl.driver();
        if (!d) return fail(runtime, error, std::move(d).error());
        *version = (*d)->version();
        return ok(error);
    });
}

SDM_API sdm_status sdm_device_count(sdm_runtime* runtime, int32_t* count, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || count == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_device_count: runtime and count must not be NULL");
        auto n = runtime->impl.devices().count();
        if (!n) return fail(runtime, error, std::move(n).error());
        *count = *n;
        return ok(error);
    });
}

SDM_API sdm_status sdm_device_info_get(sdm_runtime* runtime, int32_t ordinal, sdm_device_info* info, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kDeviceInfoSize_1_0;
        if (auto refused = unusable(runtime, error, "sdm_device_info_get", "runtime", info, "info", "sdm_device_info", kMinimum)) return *refused;
        auto p = runtime->impl.devices().properties(ordinal);
        if (!p) return fail(runtime, error, std::move(p).error());
        auto c = runtime->impl.devices().device_class(ordinal);
        sdm_device_info out{};
        out.struct_size = info->struct_size;
        out.ordinal = ordinal;
        out.capability_major = p->capability.major;
        out.capability_minor = p->capability.minor;
        out.sm_count = p->sm_count;
        out.l2_bytes = p->l2_bytes;
        out.smem_optin_bytes = p->smem_optin_bytes;
        if (c) {
            out.device_class = static_cast<sdm_device_class>(*c);
            out.smem_cap_bytes = sdm::class_smem_cap(*c);
            out.smem_per_sm_bytes = sdm::class_smem_per_sm(*c);
            out.pdl_allowed = sdm::class_allows_pdl(*c) ? 1 : 0;
            out.clusters_allowed = sdm::class_allows_clusters(*c) ? 1 : 0;
            out.untested = sdm::class_tested(*c) ? 0 : 1;
        } else if (c.error().code != ErrorCode::unsupported_device) {
            return fail(runtime, error, std::move(c).error());
        }
        std::strncpy(out.name, p->name.c_str(), sizeof(out.name) - 1);
        std::memcpy(info, &out, kMinimum);
        return ok(error);
    });
}

SDM_API sdm_status sdm_device_class_get(sdm_runtime* runtime, int32_t ordinal, sdm_device_class* device_class, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || device_class == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_device_class_get: runtime and device_class must not be NULL");
        auto c = runtime->impl.devices().device_class(ordinal);
        if (!c) return fail(runtime, error, std::move(c).error());
        *device_class = static_cast<sdm_device_class>(*c);
        return ok(error);
    });
}

SDM_API const char* sdm_device_class_name(sdm_device_class device_class) {
    for (const sdm::ClassRow& row : sdm::kClasses)  // the one table of names (abi_enums.hpp pins the values)
        if (static_cast<int32_t>(row.device_class) == device_class) return row.name;
    return "unsupported";
}

namespace {

sdm_status kernel_get(const char* api, sdm_runtime* runtime, int32_t ordinal, const char* name, const char* signature, void* stream,
                      sdm_kernel** kernel, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || name == nullptr || kernel == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, std::string(api) + ": runtime, name and kernel must not be NULL");
        const auto started = std::chrono::steady_clock::now();
        auto k = runtime->impl.modules().kernel(ordinal, name, static_cast<CUstream>(stream),
                                                signature != nullptr ? std::optional<std::string_view>(signature) : std::nullopt);
        if (!k) return fail(runtime, error, std::move(k).error());
        if (runtime->impl.log().enabled(sdm::runtime::LogLevel::debug))
            runtime->impl.log().debug(std::string(api) + " " + name + ": " +
                                      std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count()) +
                                      " us");
        // The handle is the runtime's KernelHandle itself: valid until the runtime is destroyed.
        *kernel = reinterpret_cast<sdm_kernel*>(const_cast<sdm::runtime::KernelHandle*>(*k));
        return ok(error);
    });
}

}  // namespace

SDM_API sdm_status sdm_kernel_get(sdm_runtime* runtime, int32_t ordinal, const char* name, void* stream, sdm_kernel** kernel,
                                  sdm_error** error) {
    return kernel_get("sdm_kernel_get", runtime, ordinal, name, nullptr, stream, kernel, error);
}

SDM_API sdm_status sdm_kernel_get_checked(sdm_runtime* runtime, int32_t ordinal, const char* name, const char* signature, void* stream,
                                          sdm_kernel** kernel, sdm_error** error) {
    return kernel_get("sdm_kernel_get_checked", runtime, ordinal, name, signature, stream, kernel, error);
}

SDM_API sdm_status sdm_kernel_release(sdm_runtime* runtime, const sdm_kernel* kernel, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || kernel == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_kernel_release: runtime and kernel must not be NULL");
        auto r = runtime->impl.modules().release(*handle(kernel));
        if (!r) return fail(runtime, error, std::move(r).error());
        return ok(error);
    });
}

namespace {

sdm_status reload(const char* api, bool changed_only, sdm_runtime* runtime, uint32_t* reloaded, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr) return fail(runtime, error, ErrorCode::invalid_argument, std::string(api) + ": runtime must not be NULL");
        uint32_t count = 0;
        auto r = runtime->impl.reload(changed_only, count);
        if (reloaded != nullptr) *reloaded = count;
        if (!r) return fail(runtime, error, std::move(r).error());
        return ok(error);
    });
}

}  // namespace

SDM_API sdm_status sdm_runtime_reload(sdm_runtime* runtime, uint32_t* reloaded, sdm_error** error) {
    return reload("sdm_runtime_reload", false, runtime, reloaded, error);
}

SDM_API sdm_status sdm_runtime_poll_archives(sdm_runtime* runtime, uint32_t* reloaded, sdm_error** error) {
    return reload("sdm_runtime_poll_archives", true, runtime, reloaded, error);
}

SDM_API sdm_status sdm_archive_unmount(sdm_runtime* runtime, const char* label, uint32_t* unmounted, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (unmounted != nullptr) *unmounted = 0;
        if (runtime == nullptr || label == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_archive_unmount: runtime and label must not be NULL");
        uint32_t count = 0;
        auto r = runtime->impl.unmount(label, count);
        if (unmounted != nullptr) *unmounted = count;
        if (!r) return fail(runtime, error, std::move(r).error());
        return ok(error);
    });
}

SDM_API sdm_status sdm_plan_select(const sdm_kernel* kernel, const int64_t* problem, uint32_t problem_count, sdm_plan* plan, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || plan == nullptr || (problem_count > 0 && problem == nullptr))
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_plan_select: kernel, plan (and problem, with a count) must not be NULL");
        if (!sized(plan, plan->struct_size, kPlanSize_1_1))
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_plan_select: " + struct_size_message("sdm_plan", plan->struct_size, kPlanSize_1_1));
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_plan_select");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto selected = k->launcher->select({problem, problem_count});
        if (!selected) return fail(owner(kernel), error, std::move(selected).error());
        sdm::runtime::plan_to_abi(selected->plan, selected->occupancy, *plan);
        return ok(error);
    });
}

SDM_API sdm_status sdm_launch(const sdm_kernel* kernel, const sdm_plan* plan, void* stream, void* const* args, uint32_t arg_count,
                              sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || plan == nullptr) return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_launch: kernel and plan must not be NULL");
        if (!sized(plan, plan->struct_size, kPlanSize_1_1))
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_launch: " + struct_size_message("sdm_plan", plan->struct_size, kPlanSize_1_1));
        const sdm::runtime::Plan p = sdm::runtime::plan_from_abi(*plan);
        auto extra = sdm::runtime::launch_attributes(*plan);
        if (!extra) return fail(owner(kernel), error, std::move(extra).error());
        auto live = owner(kernel)->modules().use(*handle(kernel), "sdm_launch");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto launched = handle(kernel)->launcher->launch(p, static_cast<CUstream>(stream), args, arg_count, *extra);
        if (!launched) return fail(owner(kernel), error, std::move(launched).error());
        return ok(error);
    });
}

SDM_API sdm_status sdm_plugin_load(sdm_runtime* runtime, const char* path, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || path == nullptr) return fail(runtime, error, ErrorCode::invalid_argument, "sdm_plugin_load: runtime and path must not be NULL");
        auto loaded = runtime->impl.plugins().load(path);
        if (!loaded) return fail(runtime, error, std::move(loaded).error());
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_function(const sdm_kernel* kernel, void** function, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || function == nullptr)
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_kernel_function: kernel and function must not be NULL");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_kernel_function");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        if (k->slot != nullptr) k->slot->streams().note_raw();  // launched where sdm cannot see: its retirement waits for the context
        *function = k->function;
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_info_get(const sdm_kernel* kernel, sdm_kernel_info* info, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kKernelInfoSize_1_0;
        if (auto refused = unusable(kernel, error, "sdm_kernel_info_get", "kernel", info, "info", "sdm_kernel_info", kMinimum)) return *refused;
        const auto& k = *handle(kernel);
        sdm_kernel_info out{};
        out.struct_size = info->struct_size;
        out.ordinal = k.ordinal;
        out.image_kind = static_cast<uint32_t>(k.image_kind);
        out.image_sm = k.image_sm;
        out.loaded_sm = k.loaded_sm;
        out.source = static_cast<uint32_t>(k.source);
        out.name = k.name.c_str();
        out.module = k.module.c_str();
        out.archive = k.archive.c_str();
        out.signature = k.signature.c_str();
        std::memcpy(info, &out, kMinimum);
        return ok(error);
    });
}

SDM_API sdm_status sdm_preload(sdm_runtime* runtime, int32_t ordinal, const char* const* names, uint32_t count, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || (count != 0 && names == nullptr))
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_preload: runtime must not be NULL, nor names when count > 0");
        std::vector<std::string> list;
        for (uint32_t i = 0; i < count; ++i) {
            if (names[i] == nullptr) return fail(runtime, error, ErrorCode::invalid_argument, "sdm_preload: names[" + std::to_string(i) + "] is NULL");
            list.emplace_back(names[i]);
        }
        auto r = sdm::runtime::preload(runtime->impl.modules(), runtime->impl.archive_set(), runtime->impl.load_context(), ordinal, list);
        return r ? ok(error) : fail(runtime, error, std::move(r).error());
    });
}

// A warm-up as the host holds it: the runtime's (shared with its threads) and the runtime's error
// slot, so that it answers after sdm_runtime_destroy too (runtime/registry/warmup.hpp).
struct sdm_warmup {
    std::shared_ptr<sdm::runtime::Warmup> impl;
    std::shared_ptr<sdm::runtime::LastError> errors;
};

namespace {

sdm_status status_of(const Result<void>& outcome) noexcept { return outcome ? SDM_OK : sdm::capi::status_of(outcome.error().code); }

// The checks every call on a warm-up makes: the failure, or nullopt when it may be used.
std::optional<sdm_status> unusable_warmup(const sdm_warmup* warmup, sdm_error** error, const char* api) {
    sdm::runtime::LastError* rt = warmup != nullptr ? warmup->errors.get() : nullptr;
    if (warmup == nullptr) return fail(rt, error, ErrorCode::invalid_argument, std::string(api) + ": warmup must not be NULL");
    if (warmup->impl->forked())
        return fail(rt, error, ErrorCode::invalid_argument,
                    std::string(api) + ": the warm-up belongs to the process this one was forked from; its threads are not here");
    return std::nullopt;
}

}  // namespace

SDM_API sdm_status sdm_preload_async(sdm_runtime* runtime, int32_t ordinal, const char* const* names, uint32_t count, int32_t priority,
                                     sdm_warmup_done_fn done, void* user_data, sdm_warmup** warmup, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || warmup == nullptr || (count != 0 && names == nullptr))
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_preload_async: runtime and warmup must not be NULL, nor names when count > 0");
        std::vector<std::string> list;
        for (uint32_t i = 0; i < count; ++i) {
            if (names[i] == nullptr) return fail(runtime, error, ErrorCode::invalid_argument, "sdm_preload_async: names[" + std::to_string(i) + "] is NULL");
            list.emplace_back(names[i]);
        }
        auto handle = std::make_unique<sdm_warmup>(sdm_warmup{nullptr, runtime->impl.last_error_slot()});
        sdm::runtime::Warmup::Done on_done;
        if (done != nullptr)
            on_done = [done, user_data, h = handle.get()](const Result<void>& outcome) { done(user_data, status_of(outcome), h); };
        auto created = runtime->impl.warmups().create(ordinal, std::move(list), priority, std::move(on_done));
        if (!created) return fail(runtime, error, std::move(created).error());
        handle->impl = std::move(*created);  // before a thread can see it (and call back with the handle)
        if (auto started = runtime->impl.warmups().start(handle->impl); !started) return fail(runtime, error, std::move(started).error());
        *warmup = handle.release();
        return ok(error);
    });
}

SDM_API sdm_status sdm_warmup_progress(const sdm_warmup* warmup, uint32_t* modules_done, uint32_t* modules_total, sdm_error** error) {
    sdm::runtime::LastError* rt = warmup != nullptr ? warmup->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        if (auto refused = unusable_warmup(warmup, error, "sdm_warmup_progress")) return *refused;
        if (modules_done == nullptr && modules_total == nullptr)
            return fail(rt, error, ErrorCode::invalid_argument, "sdm_warmup_progress: modules_done and modules_total must not both be NULL");
        const auto progress = warmup->impl->progress();
        if (modules_done != nullptr) *modules_done = progress.done;
        if (modules_total != nullptr) *modules_total = progress.total;
        return ok(error);
    });
}

SDM_API sdm_status sdm_warmup_wait(sdm_warmup* warmup, uint32_t timeout_ms, sdm_error** error) {
    sdm::runtime::LastError* rt = warmup != nullptr ? warmup->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        if (auto refused = unusable_warmup(warmup, error, "sdm_warmup_wait")) return *refused;
        auto outcome = warmup->impl->wait(std::chrono::milliseconds(timeout_ms));
        if (!outcome)
            return fail(rt, error, ErrorCode::timeout,
                        "sdm_warmup_wait: the warm-up had not finished after " + std::to_string(timeout_ms) +
                            " ms; it goes on (sdm_warmup_progress says how far it got)");
        return *outcome ? ok(error) : fail(rt, error, std::move(*outcome).error());
    });
}

SDM_API sdm_status sdm_warmup_cancel(sdm_warmup* warmup, sdm_error** error) {
    sdm::runtime::LastError* rt = warmup != nullptr ? warmup->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        if (auto refused = unusable_warmup(warmup, error, "sdm_warmup_cancel")) return *refused;
        warmup->impl->cancel();
        return ok(error);
    });
}

SDM_API void sdm_warmup_destroy(sdm_warmup* warmup) {
    if (warmup == nullptr) return;
    try {
        if (warmup->impl->forked()) return;  // the parent's: its lock may be held by a thread not here (a few bytes left)
        warmup->impl->cancel();
        // From its own callback: freed once the callback returns (waiting here would never end).
        if (warmup->impl->release_after_callback([warmup] { delete warmup; })) return;
        warmup->impl->wait_retired();
    } catch (...) {
        return;  // a thread may still use it: left allocated rather than freed under it
    }
    delete warmup;
}

SDM_API sdm_status sdm_cache_stats_get(sdm_runtime* runtime, sdm_cache_stats* stats, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kCacheStatsSize_1_0;
        if (auto refused = unusable(runtime, error, "sdm_cache_stats_get", "runtime", stats, "stats", "sdm_cache_stats", kMinimum)) return *refused;
        sdm_cache_stats out{};
        out.struct_size = stats->struct_size;
        if (auto* cache = runtime->impl.cache()) {
            const auto s = cache->stats();
            out.hits = s.hits;
            out.misses = s.misses;
            out.builds = s.builds;
            out.evictions = s.evictions;
            out.bad_entries = s.bad_entries;
            out.bytes_written = s.bytes_written;
            out.build_milliseconds = s.build_milliseconds;
        }
        std::memcpy(stats, &out, kMinimum);
        return ok(error);
    });
}

SDM_API sdm_status sdm_plan_for_elements(const sdm_kernel* kernel, uint64_t elements, uint32_t smem_bytes, sdm_plan* plan, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || plan == nullptr)
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_plan_for_elements: kernel and plan must not be NULL");
        if (!sized(plan, plan->struct_size, kPlanSize_1_1))
            return fail(owner(kernel), error, ErrorCode::invalid_argument,
                        "sdm_plan_for_elements: " + struct_size_message("sdm_plan", plan->struct_size, kPlanSize_1_1));
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_plan_for_elements");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto selected = k->launcher->for_elements(elements, smem_bytes);
        if (!selected) return fail(owner(kernel), error, std::move(selected).error());
        sdm::runtime::plan_to_abi(selected->plan, selected->occupancy, *plan);
        return ok(error);
    });
}

SDM_API sdm_status sdm_global_get(const sdm_kernel* kernel, const char* name, uint64_t* device_ptr, uint64_t* bytes, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || name == nullptr || (device_ptr == nullptr && bytes == nullptr))
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_global_get: kernel, name and device_ptr or bytes must not be NULL");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_global_get");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto g = sdm::runtime::module_global(owner(kernel)->load_context(), *k, name);
        if (!g) return fail(owner(kernel), error, std::move(g).error());
        if (device_ptr != nullptr) *device_ptr = static_cast<uint64_t>(g->address);
        if (bytes != nullptr) *bytes = g->bytes;
        return ok(error);
    });
}

namespace {

sdm_status global_copy(const char* api, const sdm_kernel* kernel, const char* name, uint64_t offset, void* data, uint64_t bytes, void* stream, bool to_device,
                       sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || name == nullptr)
            return fail(owner(kernel), error, ErrorCode::invalid_argument, std::string(api) + ": kernel and name must not be NULL");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, api);  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto copied = sdm::runtime::copy_global(owner(kernel)->load_context(), *k, name, offset, data, bytes, static_cast<CUstream>(stream), to_device);
        if (!copied) return fail(owner(kernel), error, std::move(copied).error());
        return ok(error);
    });
}

}  // namespace

SDM_API sdm_status sdm_global_write(const sdm_kernel* kernel, const char* name, uint64_t offset, const void* data, uint64_t bytes, void* stream,
                                    sdm_error** error) {
    return global_copy("sdm_global_write", kernel, name, offset, const_cast<void*>(data), bytes, stream, true, error);
}

SDM_API sdm_status sdm_global_read(const sdm_kernel* kernel, const char* name, uint64_t offset, void* data, uint64_t bytes, void* stream,
                                   sdm_error** error) {
    return global_copy("sdm_global_read", kernel, name, offset, data, bytes, stream, false, error);
}

// A snapshot: it needs nothing of the runtime but its error slot, which it shares, so it stays
// usable after sdm_runtime_destroy.
struct sdm_kernel_list {
    std::shared_ptr<sdm::runtime::LastError> errors;
    std::vector<sdm::runtime::KernelListing> entries;
};

SDM_API sdm_status sdm_kernel_list_create(sdm_runtime* runtime, uint32_t archive_index, sdm_kernel_list** list, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || list == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_kernel_list_create: runtime and list must not be NULL");
        auto entries = sdm::runtime::list_kernels(runtime->impl.archive_set(), runtime->impl.jit(), archive_index == SDM_LIST_SERVED ? std::nullopt : std::optional<uint32_t>(archive_index));
        if (!entries) return fail(runtime, error, std::move(entries).error());
        *list = new sdm_kernel_list{runtime->impl.last_error_slot(), std::move(*entries)};
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_list_count(const sdm_kernel_list* list, uint32_t* count, sdm_error** error) {
    sdm::runtime::LastError* rt = list != nullptr ? list->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        if (list == nullptr || count == nullptr) return fail(rt, error, ErrorCode::invalid_argument, "sdm_kernel_list_count: list and count must not be NULL");
        *count = static_cast<uint32_t>(list->entries.size());
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_list_get(const sdm_kernel_list* list, uint32_t index, sdm_kernel_entry* entry, sdm_error** error) {
    sdm::runtime::LastError* rt = list != nullptr ? list->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kKernelEntrySize_1_3;
        if (list == nullptr || entry == nullptr) return fail(rt, error, ErrorCode::invalid_argument, "sdm_kernel_list_get: list and entry must not be NULL");
        if (!sized(entry, entry->struct_size, kMinimum))
            return fail(rt, error, ErrorCode::invalid_argument, "sdm_kernel_list_get: " + struct_size_message("sdm_kernel_entry", entry->struct_size, kMinimum));
        if (index >= list->entries.size())
            return fail(rt, error, ErrorCode::invalid_argument,
                        "sdm_kernel_list_get: index " + std::to_string(index) + " past the list's " + std::to_string(list->entries.size()) + " entries");
        const auto& e = list->entries[index];
        sdm_kernel_entry out{};
        out.struct_size = entry->struct_size;
        out.archive_index = e.archive_index;
        out.name = e.name.c_str();
        out.demangled = e.demangled.c_str();
        out.module = e.module.c_str();
        out.signature = e.signature.c_str();
        out.targets = e.targets.c_str();
        out.shadowed = e.shadowed ? 1 : 0;
        std::memcpy(entry, &out, kMinimum);
        return ok(error);
    });
}

SDM_API void sdm_kernel_list_destroy(sdm_kernel_list* list) { delete list; }

SDM_API sdm_status sdm_footprint_get(sdm_runtime* runtime, sdm_footprint* footprint, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kFootprintSize_1_5;
        if (auto refused = unusable(runtime, error, "sdm_footprint_get", "runtime", footprint, "footprint", "sdm_footprint", kMinimum)) return *refused;
        const sdm::runtime::Footprint f = runtime->impl.footprint();
        sdm_footprint out{};
        out.struct_size = footprint->struct_size;
        out.module_count = static_cast<uint32_t>(f.modules.size());
        out.device_bytes = f.device_bytes;
        out.host_bytes = f.host_bytes;
        out.readahead_bytes = f.readahead_bytes;
        out.reference_bytes = f.reference_bytes;
        out.archive_memory_bytes = f.archive_memory_bytes;
        out.archive_mapped_bytes = f.archive_mapped_bytes;
        out.cache_bytes = f.cache_bytes;
        out.unknown_device_modules = f.unknown_device_modules;
        std::memcpy(footprint, &out, kMinimum);
        return ok(error);
    });
}

// A snapshot, as sdm_kernel_list is: usable after sdm_runtime_destroy.
struct sdm_module_list {
    std::shared_ptr<sdm::runtime::LastError> errors;
    std::vector<sdm::runtime::ModuleFootprint> entries;
};

SDM_API sdm_status sdm_module_list_create(sdm_runtime* runtime, sdm_module_list** list, sdm_error** error) {
    return guarded(runtime, error, [&]() -> sdm_status {
        if (runtime == nullptr || list == nullptr)
            return fail(runtime, error, ErrorCode::invalid_argument, "sdm_module_list_create: runtime and list must not be NULL");
        *list = new sdm_module_list{runtime->impl.last_error_slot(), runtime->impl.modules().footprint()};
        return ok(error);
    });
}

SDM_API sdm_status sdm_module_list_count(const sdm_module_list* list, uint32_t* count, sdm_error** error) {
    sdm::runtime::LastError* rt = list != nullptr ? list->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        if (list == nullptr || count == nullptr) return fail(rt, error, ErrorCode::invalid_argument, "sdm_module_list_count: list and count must not be NULL");
        *count = static_cast<uint32_t>(list->entries.size());
        return ok(error);
    });
}

SDM_API sdm_status sdm_module_list_get(const sdm_module_list* list, uint32_t index, sdm_module_entry* entry, sdm_error** error) {
    sdm::runtime::LastError* rt = list != nullptr ? list->errors.get() : nullptr;
    return guarded(rt, error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kModuleEntrySize_1_5;
        if (list == nullptr || entry == nullptr) return fail(rt, error, ErrorCode::invalid_argument, "sdm_module_list_get: list and entry must not be NULL");
        if (!sized(entry, entry->struct_size, kMinimum))
            return fail(rt, error, ErrorCode::invalid_argument, "sdm_module_list_get: " + struct_size_message("sdm_module_entry", entry->struct_size, kMinimum));
        if (index >= list->entries.size())
            return fail(rt, error, ErrorCode::invalid_argument,
                        "sdm_module_list_get: index " + std::to_string(index) + " past the list's " + std::to_string(list->entries.size()) + " entries");
        const auto& e = list->entries[index];
        sdm_module_entry out{};
        out.struct_size = entry->struct_size;
        out.ordinal = e.ordinal;
        out.module = e.module.c_str();
        out.archive = e.archive.c_str();
        out.device_bytes = e.device_bytes;
        out.host_bytes = e.host_bytes;
        out.references = e.references;
        out.kernels = e.kernels;
        out.state = e.draining ? SDM_MODULE_DRAINING : e.evicted ? SDM_MODULE_EVICTED : e.retired ? SDM_MODULE_RETIRED : SDM_MODULE_SERVING;
        std::memcpy(entry, &out, kMinimum);
        return ok(error);
    });
}

SDM_API void sdm_module_list_destroy(sdm_module_list* list) { delete list; }

SDM_API sdm_status sdm_kernel_attributes_get(const sdm_kernel* kernel, sdm_kernel_attributes* attributes, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        constexpr size_t kMinimum = kKernelAttributesSize_1_4;
        if (kernel == nullptr || attributes == nullptr)
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_kernel_attributes_get: kernel and attributes must not be NULL");
        if (!sized(attributes, attributes->struct_size, kMinimum))
            return fail(owner(kernel), error, ErrorCode::invalid_argument,
                        "sdm_kernel_attributes_get: sdm_kernel_attributes.struct_size is " + std::to_string(attributes->struct_size) + ", below the " +
                            std::to_string(kMinimum) + " bytes of ABI 1.4: set it to sizeof(sdm_kernel_attributes)");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_kernel_attributes_get");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto read = sdm::runtime::read_attributes(owner(kernel)->load_context(), *k);
        if (!read) return fail(owner(kernel), error, std::move(read).error());
        const sdm::runtime::KernelAttributes& a = *read;
        sdm_kernel_attributes out{};
        out.struct_size = attributes->struct_size;
        out.flags = a.cluster_read ? uint32_t{SDM_KERNEL_ATTRIBUTES_CLUSTER} : 0u;
        out.max_threads_per_block = a.max_threads_per_block;
        out.shared_size_bytes = a.shared_size_bytes;
        out.const_size_bytes = a.const_size_bytes;
        out.local_size_bytes = a.local_size_bytes;
        out.num_regs = a.num_regs;
        out.ptx_version = a.ptx_version;
        out.binary_version = a.binary_version;
        out.cache_mode_ca = a.cache_mode_ca;
        out.max_dynamic_shared_size_bytes = a.max_dynamic_shared_size_bytes;
        out.preferred_shared_memory_carveout = a.preferred_shared_memory_carveout;
        out.cluster_size_must_be_set = a.cluster_size_must_be_set;
        out.required_cluster_width = a.required_cluster_width;
        out.required_cluster_height = a.required_cluster_height;
        out.required_cluster_depth = a.required_cluster_depth;
        out.non_portable_cluster_size_allowed = a.non_portable_cluster_size_allowed;
        out.cluster_scheduling_policy_preference = a.cluster_scheduling_policy_preference;
        std::memcpy(attributes, &out, kMinimum);
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_set(const sdm_kernel* kernel, sdm_kernel_setting setting, int32_t value, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr) return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_kernel_set: kernel must not be NULL");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_kernel_set");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto set = owner(kernel)->kernel_settings().set(*k, static_cast<sdm::runtime::KernelSetting>(setting), value);
        if (!set) return fail(owner(kernel), error, std::move(set).error());
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_max_active_blocks(const sdm_kernel* kernel, uint32_t block_threads, uint32_t smem_bytes, int32_t* blocks_per_sm,
                                                sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || blocks_per_sm == nullptr)
            return fail(owner(kernel), error, ErrorCode::invalid_argument, "sdm_kernel_max_active_blocks: kernel and blocks_per_sm must not be NULL");
        if (block_threads == 0 || block_threads > sdm::runtime::kMaxBlockThreads)
            return fail(owner(kernel), error, ErrorCode::invalid_argument,
                        "sdm_kernel_max_active_blocks: a block of " + std::to_string(block_threads) + " threads (1 .. 1024)");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_kernel_max_active_blocks");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto blocks = k->launcher->blocks_per_sm(block_threads, smem_bytes);
        if (!blocks) return fail(owner(kernel), error, std::move(blocks).error());
        *blocks_per_sm = *blocks;
        return ok(error);
    });
}

SDM_API sdm_status sdm_kernel_max_potential_block_size(const sdm_kernel* kernel, uint32_t smem_bytes, uint32_t block_threads_limit,
                                                       int32_t* block_threads, int32_t* min_grid_blocks, sdm_error** error) {
    return guarded(owner(kernel), error, [&]() -> sdm_status {
        if (kernel == nullptr || (block_threads == nullptr && min_grid_blocks == nullptr))
            return fail(owner(kernel), error, ErrorCode::invalid_argument,
                        "sdm_kernel_max_potential_block_size: kernel, and block_threads or min_grid_blocks, must not be NULL");
        const auto* k = handle(kernel);
        auto live = owner(kernel)->modules().use(*k, "sdm_kernel_max_potential_block_size");  // kept while the call runs (a budget evicts no module in use)
        if (!live) return fail(owner(kernel), error, std::move(live).error());
        auto suggested = k->launcher->potential_block_size(smem_bytes, block_threads_limit);
        if (!suggested) return fail(owner(kernel), error, std::move(suggested).error());
        if (block_threads != nullptr) *block_threads = suggested->first;
        if (min_grid_blocks != nullptr) *min_grid_blocks = suggested->second;
        return ok(error);
    });
}

SDM_API sdm_status sdm_get_api(uint32_t major, uint32_t* minor, const sdm_api** api) {
    static const sdm_api table = {
#include "api_table.inc"
    };
    if (minor == nullptr || api == nullptr) return SDM_ERROR_INVALID_ARGUMENT;
    if (major != SDM_ABI_VERSION_MAJOR) return SDM_ERROR_UNSUPPORTED;
    *minor = SDM_ABI_VERSION_MINOR;
    *api = &table;
    return SDM_OK;
}

}  // extern "C"
