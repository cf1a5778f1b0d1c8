// sdm.hpp: a header-only C++ wrapper (C++17 and later) over the stable C ABI in sdm.h.
//
// It calls only the functions sdm.h declares, so it adds nothing to libsdm's ABI: a host built
// with it runs on any libsdm with the same ABI major and a minor >= the one in its sdm.h, which
// sdm::check_abi() verifies at run time.
//
// Errors: every call returns sdm::Status or sdm::Result<T> (a value or an sdm::Error). Nothing
// here throws, and the header compiles and works with -fno-exceptions. A host built with
// exceptions that wants them defines SDM_HPP_EXCEPTIONS before including this header and gets
// sdm::Exception, sdm::value_or_throw() and sdm::throw_if_error(); without exceptions enabled that
// macro has no effect.
//
// Memory: the C calls report out-of-memory as SDM_ERROR_OUT_OF_MEMORY. The wrapper copies strings
// into std::string and std::vector like any C++ code; with -fno-exceptions an allocation failure
// there ends the process the way it does everywhere in the standard library.
//
// Threads: as in sdm.h, every function may be called from any thread, and one Runtime may be used
// from several threads at once, except where its comment says otherwise. Error and Result are
// values: copies of one Error may be read from several threads at once.
#ifndef SDM_SDM_HPP
#define SDM_SDM_HPP

#include "sdm.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif
#if defined(SDM_HPP_EXCEPTIONS) && defined(__cpp_exceptions)
#include <stdexcept>
#endif

namespace sdm {

// ---- errors -------------------------------------------------------------------------------------

// A failure: the status, the message (naming the archive, device or kernel, and the fix), the
// native CUresult / nvJitLink code and a backend's log. It owns the sdm_error the C call returned.
//
// Copies share that sdm_error (shared ownership, one allocation per error) rather than Error being
// move-only, because an Error is a value a host passes around and stores (Result<T> stays copyable
// when T is), and because sdm::Exception carries one: exception objects must copy without
// throwing, which a shared_ptr does and a deep copy of the strings does not. The sdm_error is never
// changed after the C call made it, so sharing it between threads is safe.
//
// A default-constructed Error means "no error": code() is SDM_OK, message() and log() are "".
class Error {
public:
    Error() noexcept = default;

    // An error made on this side of the ABI (check_abi makes these). `code` should be a failure
    // status, not SDM_OK.
    Error(sdm_status code, std::string message) : state_(std::make_shared<State>(code, nullptr, std::move(message))) {}

    // Takes ownership of `error`, which a C call returned with the failure `status`, and releases
    // it when the last copy of the Error goes. `error` may be NULL (the caller passed no pointer,
    // or sdm had no memory for the details); message() is then the status's name. For hosts that
    // call sdm.h functions themselves through Runtime::get().
    static Error adopt(sdm_status status, sdm_error* error) {
        std::unique_ptr<sdm_error, ErrorDeleter> owned(error);  // released if the allocation below fails
        Error adopted;
        adopted.state_ = std::make_shared<State>(status, owned.get(), error != nullptr ? std::string() : std::string(sdm_status_string(status)));
        owned.release();  // the State owns it now
        return adopted;
    }

    // The status (SDM_ERROR_*); SDM_OK for "no error".
    sdm_status code() const noexcept { return state_ ? state_->code : SDM_OK; }
    // The status's name ("SDM_ERROR_IO"); static.
    const char* code_name() const noexcept { return sdm_status_string(code()); }
    // The message; owned by this Error (and its copies), valid while one of them lives. Never NULL.
    const char* message() const noexcept {
        if (!state_) return "";
        return state_->error != nullptr ? sdm_error_message(state_->error) : state_->message.c_str();
    }
    // The CUresult behind SDM_ERROR_DRIVER, the nvJitLink result behind SDM_ERROR_JIT; 0 when none.
    int32_t native() const noexcept { return state_ && state_->error != nullptr ? sdm_error_native(state_->error) : 0; }
    // A backend's log (the JIT error log), or ""; owned like message().
    const char* log() const noexcept { return state_ && state_->error != nullptr ? sdm_error_log(state_->error) : ""; }
    // The C error object, for passing to sdm.h functions; NULL for "no error" and for errors made
    // on this side. Owned by this Error (and its copies).
    const sdm_error* c_error() const noexcept { return state_ ? state_->error : nullptr; }
    // "SDM_ERROR_IO: <message>", for logs and exception texts.
    std::string describe() const { return std::string(code_name()) + ": " + message(); }

private:
    struct ErrorDeleter {
        void operator()(sdm_error* error) const noexcept { sdm_error_destroy(error); }
    };
    struct State {
        State(sdm_status status, sdm_error* owned, std::string text) noexcept : code(status), error(owned), message(std::move(text)) {}
        State(const State&) = delete;
        State& operator=(const State&) = delete;
        ~State() { sdm_error_destroy(error); }

        sdm_status code;
        sdm_error* error;     // owned; NULL for errors made on this side
        std::string message;  // used when error is NULL
    };
    std::shared_ptr<const State> state_;
};

// ---- Result and Status --------------------------------------------------------------------------

// A value or an Error. Test it (ok(), operator bool) before reading the value: value(), operator*
// and operator-> require ok(), as std::optional's operator* does. Copyable when T is.
template <typename T>
class [[nodiscard]] Result {
    static_assert(!std::is_same<T, Error>::value, "Result<Error> cannot tell its two sides apart; use std::optional<Error>");
    static_assert(!std::is_reference<T>::value, "Result holds values");

public:
    Result(T value) noexcept(std::is_nothrow_move_constructible<T>::value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
    // `error` should be a failure (code() != SDM_OK).
    Result(Error error) noexcept : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    // SDM_OK when ok(), else the error's status.
    sdm_status code() const noexcept { return error_.code(); }
    // The error; a default Error (SDM_OK, "") when ok().
    const Error& error() const noexcept { return error_; }

    // Requires ok().
    T& value() & noexcept { return *value_; }
    const T& value() const& noexcept { return *value_; }
    T&& value() && noexcept { return std::move(*value_); }
    T& operator*() & noexcept { return *value_; }
    const T& operator*() const& noexcept { return *value_; }
    T&& operator*() && noexcept { return std::move(*value_); }
    T* operator->() noexcept { return &*value_; }
    const T* operator->() const noexcept { return &*value_; }

    // The value, or `fallback` when !ok().
    template <typename U>
    T value_or(U&& fallback) const& {
        return value_ ? *value_ : static_cast<T>(std::forward<U>(fallback));
    }
    template <typename U>
    T value_or(U&& fallback) && {
        return value_ ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback));
    }

private:
    std::optional<T> value_;
    Error error_;
};

// Success, or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() noexcept = default;  // success
    // `error` should be a failure (code() != SDM_OK).
    Result(Error error) noexcept : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const noexcept { return error_.code() == SDM_OK; }
    explicit operator bool() const noexcept { return ok(); }
    sdm_status code() const noexcept { return error_.code(); }
    const Error& error() const noexcept { return error_; }

private:
    Error error_;
};

using Status = Result<void>;

namespace detail {

// The Status of a C call that returned `status` and, on failure, `error`. Make the call first:
// passing it as this function's argument beside `error` would read `error` before the call sets it
// (argument evaluation order is unspecified).
inline Status status_of(sdm_status status, sdm_error* error) {
    if (status != SDM_OK) return Error::adopt(status, error);
    return Status();
}

// Calls `call(T* out, sdm_error** error)` and returns *out or the error.
template <typename T, typename Call>
Result<T> get(Call&& call) {
    T value{};
    sdm_error* error = nullptr;
    const sdm_status status = std::forward<Call>(call)(&value, &error);
    if (status != SDM_OK) return Error::adopt(status, error);
    return value;
}

}  // namespace detail

// A view of `size()` contiguous T, for the hot calls (plans, launches, preloads): what they take
// without a copy or an allocation. It converts from a std::vector, a std::array, a C array, a
// braced list (valid for the call it is passed to) and, in C++20, a std::span; like std::span, it
// owns nothing. (std::span itself is C++20; this header serves C++17 too.)
template <typename T>
class Span {
public:
    constexpr Span() noexcept = default;
    constexpr Span(T* data, size_t size) noexcept : data_(data), size_(size) {}
    template <typename U, typename = std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value>>
    Span(std::vector<U>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT(google-explicit-constructor)
    template <typename U, typename = std::enable_if_t<std::is_convertible<const U (*)[], T (*)[]>::value>>
    Span(const std::vector<U>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT(google-explicit-constructor)
    template <typename U, size_t N, typename = std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value>>
    constexpr Span(std::array<U, N>& a) noexcept : data_(a.data()), size_(N) {}  // NOLINT(google-explicit-constructor)
    template <typename U, size_t N, typename = std::enable_if_t<std::is_convertible<const U (*)[], T (*)[]>::value>>
    constexpr Span(const std::array<U, N>& a) noexcept : data_(a.data()), size_(N) {}  // NOLINT(google-explicit-constructor)
    template <size_t N>
    constexpr Span(T (&a)[N]) noexcept : data_(a), size_(N) {}  // NOLINT(google-explicit-constructor)
// GCC warns that the view does not extend the list's lifetime; it need not: a braced list passed
// to a call lives until the call returns, and these views are parameters of calls only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
    constexpr Span(std::initializer_list<std::remove_const_t<T>> list) noexcept  // NOLINT(google-explicit-constructor)
        : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#if defined(__cpp_lib_span)
    template <typename U, size_t E, typename = std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value>>
    constexpr Span(std::span<U, E> s) noexcept : data_(s.data()), size_(s.size()) {}  // NOLINT(google-explicit-constructor)
#endif
    constexpr T* data() const noexcept { return data_; }
    constexpr size_t size() const noexcept { return size_; }

private:
    T* data_ = nullptr;
    size_t size_ = 0;
};

// ---- versions -----------------------------------------------------------------------------------

// The name of a status ("SDM_ERROR_NO_DRIVER", "SDM_ERROR_UNKNOWN" for values the library does not
// know); static.
inline const char* status_string(sdm_status status) noexcept { return sdm_status_string(status); }

// (major << 16) | minor of the ABI in the sdm.h this program was compiled with.
constexpr uint32_t header_abi_version() noexcept { return (uint32_t{SDM_ABI_VERSION_MAJOR} << 16) | uint32_t{SDM_ABI_VERSION_MINOR}; }
// (major << 16) | minor of the ABI the loaded libsdm implements.
inline uint32_t library_abi_version() noexcept { return sdm_abi_version(); }
// The loaded libsdm's release, "MAJOR.MINOR.PATCH"; static.
inline const char* library_version() noexcept { return sdm_version_string(); }

// Whether a libsdm implementing ABI `library_abi` ((major << 16) | minor) can serve this program:
// the same major as SDM_ABI_VERSION_MAJOR and a minor >= SDM_ABI_VERSION_MINOR. Otherwise
// SDM_ERROR_MISMATCH with a message giving both versions and the fix.
inline Status check_abi(uint32_t library_abi) {
    const uint32_t major = library_abi >> 16;
    if (major == SDM_ABI_VERSION_MAJOR && library_abi >= header_abi_version()) return Status();  // same major, minor >= ours
    const std::string library = "libsdm " + std::string(sdm_version_string()) + " implements C ABI " + std::to_string(major) + "." +
                                std::to_string(library_abi & 0xffffu);
    const std::string header = std::to_string(SDM_ABI_VERSION_MAJOR) + "." + std::to_string(SDM_ABI_VERSION_MINOR);
    if (major != SDM_ABI_VERSION_MAJOR)
        return Error(SDM_ERROR_MISMATCH, library + ", but this program was built against ABI " + header +
                                             " (sdm.h); different majors are incompatible: use a libsdm with ABI major " +
                                             std::to_string(SDM_ABI_VERSION_MAJOR) + ", or rebuild the program against this libsdm's sdm.h");
    return Error(SDM_ERROR_MISMATCH, library + ", older than the ABI " + header +
                                         " this program was built against (sdm.h), so functions it calls may be missing: use a libsdm with ABI " +
                                         header + " or newer");
}

// check_abi() of the loaded libsdm. Call it once at start-up, before other sdm calls.
inline Status check_abi() { return check_abi(sdm_abi_version()); }

// ---- archives and devices -----------------------------------------------------------------------

// One mounted archive (sdm_archive_info), with its strings copied.
struct ArchiveInfo {
    std::string label;            // the path, or the label given to mount_memory
    std::string content_version;  // from the manifest; "" without one
    uint64_t size_bytes = 0;
    uint32_t entry_count = 0;
    uint32_t kernel_count = 0;
    uint16_t kernel_abi_major = 0;
    uint16_t kernel_abi_minor = 0;
    uint16_t format_major = 0;
    uint16_t format_minor = 0;
    bool embedded = false;        // the archive embedded in libsdm
};

// One CUDA device (sdm_device_info), with its name copied.
struct DeviceInfo {
    std::string name;  // the driver's name for the device
    int32_t ordinal = 0;
    int32_t capability_major = 0;
    int32_t capability_minor = 0;
    sdm_device_class device_class = SDM_DEVICE_CLASS_UNSUPPORTED;  // unsupported outside the hardware matrix
    int32_t sm_count = 0;
    uint64_t l2_bytes = 0;
    int32_t smem_optin_bytes = 0;   // the device's own opt-in shared memory per block
    int32_t smem_cap_bytes = 0;     // what the class's plans assume (0 when unsupported)
    int32_t smem_per_sm_bytes = 0;  // smem_cap_bytes + 1,024 reserved per block (0 when unsupported)
    bool pdl_allowed = false;       // programmatic dependent launch
    bool clusters_allowed = false;  // thread-block clusters
    bool untested = false;          // a class this release has not tested (rtx); false from a 1.0 libsdm
};

// "modern", "a100", "rtx", "unsupported"; static.
inline const char* device_class_name(sdm_device_class device_class) noexcept { return sdm_device_class_name(device_class); }

// ---- kernels, plans and launches (ABI 1.1) ------------------------------------------------------

// What a fetched kernel is (sdm_kernel_info), with its strings copied.
struct KernelInfo {
    std::string name;
    std::string module;
    std::string archive;    // the serving archive's label
    std::string signature;  // "ptr,f32,i32"
    int32_t ordinal = 0;
    uint32_t image_kind = 0;  // SDM_IMAGE_KIND_*
    uint32_t image_sm = 0;
    uint32_t loaded_sm = 0;
    uint32_t source = 0;      // SDM_IMAGE_SOURCE_*
};

// Launch dimensions (ABI 1.3): x, y and z, each 1 by default.
struct Dim3 {
    uint32_t x = 1, y = 1, z = 1;
};

// A launch shape in three dimensions for sdm_launch (ABI 1.3): `flags` SDM_PLAN_PDL,
// SDM_PLAN_COOPERATIVE; a cluster of 1x1x1 (none). Change any field before launching.
inline sdm_plan make_plan(Dim3 grid, Dim3 block, uint32_t smem_bytes = 0, uint32_t flags = 0, int32_t priority = 0) noexcept {
    sdm_plan p{};
    p.struct_size = sizeof p;
    p.flags = flags;
    p.grid = grid.x, p.grid_y = grid.y, p.grid_z = grid.z;
    p.block = block.x, p.block_y = block.y, p.block_z = block.z;
    p.smem_bytes = smem_bytes;
    p.cluster[0] = p.cluster[1] = p.cluster[2] = 1;
    p.priority = priority;
    p.rule = -1;
    return p;
}

// A module global (ABI 1.3): its device address and size in bytes.
struct Global {
    uint64_t address = 0;
    uint64_t bytes = 0;
};

// One kernel of a listing (ABI 1.3, Runtime::kernels), with its strings copied.
struct KernelEntry {
    std::string name;       // as the archive lists it (a C++ kernel's mangled symbol)
    std::string demangled;  // as c++filt prints it; empty for an extern "C" kernel
    std::string module;
    std::string signature;
    std::string targets;    // "sm_90,compute_90"
    uint32_t archive_index = 0;
    bool shadowed = false;  // a newer archive lists the name (listing one archive)
};

// What the driver's occupancy calculator suggests (ABI 1.4, Kernel::max_potential_block_size).
struct BlockSizeSuggestion {
    int32_t block_threads = 0;    // the block size of the highest occupancy
    int32_t min_grid_blocks = 0;  // the fewest blocks that reach it on the whole device
};

// A kernel a Runtime fetched (Runtime::kernel): it owns the reference sdm_kernel_get took and
// drops it (sdm_kernel_release) when destroyed or reset, so a kernel fetched before a reload keeps
// its module alive exactly as long as the Kernel lives. Move-only. It must be destroyed (or reset)
// before the Runtime that fetched it. A default-constructed or moved-from Kernel is empty: its
// calls fail with SDM_ERROR_INVALID_ARGUMENT.
class Kernel {
public:
    Kernel() noexcept = default;
    Kernel(const Kernel&) = delete;
    Kernel& operator=(const Kernel&) = delete;
    Kernel(Kernel&& other) noexcept : runtime_(std::exchange(other.runtime_, nullptr)), handle_(std::exchange(other.handle_, nullptr)) {}
    Kernel& operator=(Kernel&& other) noexcept {
        if (this != &other) {
            reset();
            runtime_ = std::exchange(other.runtime_, nullptr);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    ~Kernel() { reset(); }

    explicit operator bool() const noexcept { return handle_ != nullptr; }
    // The C handle, for sdm.h functions; owned by this Kernel (do not release it).
    sdm_kernel* handle() const noexcept { return handle_; }
    // Drops the reference now (sdm_kernel_release); the Kernel is empty afterwards.
    void reset() noexcept {
        if (handle_ != nullptr) sdm_kernel_release(runtime_, handle_, nullptr);
        runtime_ = nullptr;
        handle_ = nullptr;
    }

    // The CUfunction, for hosts that launch it themselves.
    Result<void*> function() const {
        return detail::get<void*>([this](void** f, sdm_error** error) { return sdm_kernel_function(handle_, f, error); });
    }
    Result<KernelInfo> info() const {
        sdm_kernel_info c{};
        c.struct_size = sizeof c;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_kernel_info_get(handle_, &c, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        KernelInfo out;
        out.name = c.name != nullptr ? c.name : "";
        out.module = c.module != nullptr ? c.module : "";
        out.archive = c.archive != nullptr ? c.archive : "";
        out.signature = c.signature != nullptr ? c.signature : "";
        out.ordinal = c.ordinal;
        out.image_kind = c.image_kind;
        out.image_sm = c.image_sm;
        out.loaded_sm = c.loaded_sm;
        out.source = c.source;
        return out;
    }
    // The launch plan for the kernel's problem parameters, in manifest order (sdm_plan_select).
    // No allocation: pass a braced list, an array or a vector.
    Result<sdm_plan> plan(Span<const int64_t> problem) const {
        sdm_plan out{};
        out.struct_size = sizeof out;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_plan_select(handle_, problem.data(), static_cast<uint32_t>(problem.size()), &out, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // Launches with `plan` on `stream` (a CUstream, or nullptr); `args` as for cuLaunchKernel, as
    // many as the kernel's signature has (sdm_launch). No allocation.
    Status launch(const sdm_plan& plan, void* stream, Span<void* const> args) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_launch(handle_, &plan, stream, args.data(), static_cast<uint32_t>(args.size()), &error);
        return detail::status_of(status, error);
    }
    // Launches a grid of `grid` blocks of `block` threads (ABI 1.3; make_plan for the other fields).
    Status launch(Dim3 grid, Dim3 block, void* stream, Span<void* const> args, uint32_t smem_bytes = 0) const {
        return launch(make_plan(grid, block, smem_bytes), stream, args);
    }
    // A plan of one thread per element for a kernel without plan rules (sdm_plan_for_elements, ABI 1.3).
    Result<sdm_plan> plan_for_elements(uint64_t elements, uint32_t smem_bytes = 0) const {
        sdm_plan out{};
        out.struct_size = sizeof out;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_plan_for_elements(handle_, elements, smem_bytes, &out, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // The driver's attributes of the kernel's function (sdm_kernel_attributes_get, ABI 1.4): the
    // cuFuncGetAttribute set in one struct; unlike function(), the CUfunction is not handed out.
    Result<sdm_kernel_attributes> attributes() const {
        sdm_kernel_attributes out{};
        out.struct_size = sizeof out;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_kernel_attributes_get(handle_, &out, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // Sets SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES or _PREFERRED_CARVEOUT on the kernel's
    // function and records it for its name on its device: the kernel fetched again after a reload
    // gets it too (sdm_kernel_set, ABI 1.4).
    Status set(sdm_kernel_setting setting, int32_t value) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_kernel_set(handle_, setting, value, &error);  // before `error` is read: argument order is unspecified
        return detail::status_of(status, error);
    }
    // Blocks of `block_threads` threads with `smem_bytes` of dynamic shared memory resident per
    // multiprocessor (sdm_kernel_max_active_blocks, ABI 1.4).
    Result<int32_t> max_active_blocks(uint32_t block_threads, uint32_t smem_bytes = 0) const {
        return detail::get<int32_t>(
            [&](int32_t* blocks, sdm_error** error) { return sdm_kernel_max_active_blocks(handle_, block_threads, smem_bytes, blocks, error); });
    }
    // The block size of the highest occupancy (sdm_kernel_max_potential_block_size, ABI 1.4);
    // `block_threads_limit` 0: the kernel's own limit.
    Result<BlockSizeSuggestion> max_potential_block_size(uint32_t smem_bytes = 0, uint32_t block_threads_limit = 0) const {
        BlockSizeSuggestion out;
        sdm_error* error = nullptr;
        const sdm_status status =
            sdm_kernel_max_potential_block_size(handle_, smem_bytes, block_threads_limit, &out.block_threads, &out.min_grid_blocks, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // The module global `name` (a __device__ or __constant__ variable's symbol) as loaded for this
    // kernel (sdm_global_get, ABI 1.3).
    Result<Global> global(const char* name) const {
        Global g;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_global_get(handle_, name, &g.address, &g.bytes, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return g;
    }
    // Copies `bytes` of `data` to the global at `offset`, queued on `stream` (sdm_global_write).
    Status global_write(const char* name, const void* data, uint64_t bytes, uint64_t offset = 0, void* stream = nullptr) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_global_write(handle_, name, offset, data, bytes, stream, &error);  // before `error` is read: argument order is unspecified
        return detail::status_of(status, error);
    }
    // Copies `bytes` of the global from `offset` to `data`, queued on `stream` (sdm_global_read):
    // synchronize the stream before reading `data`.
    Status global_read(const char* name, void* data, uint64_t bytes, uint64_t offset = 0, void* stream = nullptr) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_global_read(handle_, name, offset, data, bytes, stream, &error);  // before `error` is read: argument order is unspecified
        return detail::status_of(status, error);
    }

private:
    friend class Runtime;
    Kernel(sdm_runtime* runtime, sdm_kernel* handle) noexcept : runtime_(runtime), handle_(handle) {}
    sdm_runtime* runtime_ = nullptr;
    sdm_kernel* handle_ = nullptr;
};

// ---- signed archives (ABI 1.2) ------------------------------------------------------------------

// An Ed25519 public key whose signatures a runtime trusts (docs/SIGNING.md): the 32 bytes of a
// .pub file that `sdm keygen` wrote.
using PublicKey = std::array<uint8_t, 32>;

// The key in the text of a .pub file: one line, "sdm-ed25519-public " and 64 hex digits, as sdm
// keygen writes it (line ends after it are dropped, as libsdm drops them from the files
// $SDM_TRUSTED_KEYS names). Anything else is SDM_ERROR_INVALID_ARGUMENT. Reading the file is the
// host's: it knows where its keys live and how it reports a missing one.
inline Result<PublicKey> parse_public_key(std::string_view text) {
    constexpr std::string_view public_prefix = "sdm-ed25519-public ";
    constexpr std::string_view secret_prefix = "sdm-ed25519-secret ";
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    // A message of its own: the secret key's file was put where public keys go, and the fix differs.
    if (text.substr(0, secret_prefix.size()) == secret_prefix)
        return Error(SDM_ERROR_INVALID_ARGUMENT, "the key is a secret key; trust its public half (the .pub file sdm keygen wrote beside it)");
    const auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    PublicKey key{};
    bool valid = text.size() == public_prefix.size() + 2 * key.size() && text.substr(0, public_prefix.size()) == public_prefix;
    for (size_t i = 0; valid && i < key.size(); ++i) {
        const int high = digit(text[public_prefix.size() + 2 * i]);
        const int low = digit(text[public_prefix.size() + 2 * i + 1]);
        valid = high >= 0 && low >= 0;
        if (valid) key[i] = static_cast<uint8_t>((high << 4) | low);
    }
    if (!valid)
        return Error(SDM_ERROR_INVALID_ARGUMENT,
                     "the text is not an sdm public key (one line: 'sdm-ed25519-public' and 64 hex digits, as sdm keygen writes)");
    return key;
}

// ---- the runtime --------------------------------------------------------------------------------

// Receives sdm's log lines. `message` is valid during the call only. It runs on the thread that
// made the call that logs, possibly on several threads at once, so it must be thread-safe. It must
// not destroy the Runtime that calls it. An exception it throws is swallowed: it must not unwind
// through libsdm.
using LogFunction = std::function<void(sdm_log_level level, std::string_view message)>;

// sdm_runtime_params, in C++ types. The defaults are sdm's.
// Every member of sdm_runtime_params but `next` (the extension chain: no extension is defined).
struct RuntimeOptions {
    uint32_t flags = 0;                     // SDM_RUNTIME_*: NO_EMBEDDED_ARCHIVE, CURRENT_CONTEXT (1.2)
    sdm_log_level log_level = SDM_LOG_DEFAULT;  // $SDM_LOG, else warn; SDM_LOG_OFF for silence
    LogFunction log;                        // empty: warnings and errors go to stderr
    std::string cuda_driver;                // libcuda path; empty: $SDM_CUDA_DRIVER, else libcuda.so.1
    void* cuda_context = nullptr;           // a CUcontext the host owns, for the device it belongs to; NULL: primary contexts
    std::string cache_dir;                  // empty: $SDM_CACHE_DIR, else $XDG_CACHE_HOME/sdm, else ~/.cache/sdm
    uint64_t cache_max_bytes = 0;           // 0: $SDM_CACHE_MAX_BYTES, else 1 GiB
    uint32_t cache_flags = 0;               // SDM_CACHE_*: DISABLED, READ_ONLY
    uint32_t jit_flags = 0;                 // SDM_JIT_*: the backends the host forbids
    // ABI 1.1: the kernel ABI major the host was built for; an archive declaring another is
    // refused (SDM_ERROR_MISMATCH). 0: any.
    uint32_t kernel_abi_major = 0;
    // ABI 1.2: device_contexts[i], a CUcontext the host owns for device i, or nullptr for its
    // primary context (devices past the end too). Copied. Excludes cuda_context and CURRENT_CONTEXT.
    std::vector<void*> device_contexts;
    // ABI 1.2 (docs/SIGNING.md; a libsdm older than 1.2 would ignore these two, and check_abi()
    // refuses one): which archives may mount, SDM_SIGNATURES_*. DEFAULT: $SDM_REQUIRE_SIGNED
    // decides; any other value is the host's, which the environment cannot weaken.
    uint32_t signature_policy = SDM_SIGNATURES_DEFAULT;
    // The keys whose signatures are trusted (at most 256; parse_public_key reads a .pub file's
    // text). std::nullopt: those of $SDM_TRUSTED_KEYS. A list, even an empty one, replaces them,
    // so that the environment cannot add trust the host did not give.
    std::optional<std::vector<PublicKey>> trusted_keys;
    // ABI 1.2 (docs/LOADING.md, "A compiler that crashes"): where PTX and LTO-IR links run,
    // SDM_ISOLATION_* (DEFAULT: $SDM_JIT_ISOLATION, else AUTO: in sdm-jit-helper for what sdm
    // cannot fully check); every link's time limit in ms (0: $SDM_JIT_TIME_LIMIT, else 120 s);
    // an isolated link's address space in bytes (0: $SDM_JIT_MEMORY_LIMIT, else 8 GiB).
    uint32_t jit_isolation = SDM_ISOLATION_DEFAULT;
    uint32_t jit_time_limit_ms = 0;
    uint64_t jit_memory_limit_bytes = 0;
    // ABI 1.5: bytes of device memory the loaded modules may take per device; past it the least
    // recently used idle ones are evicted and reload at their next use (0: $SDM_DEVICE_MEMORY_BUDGET, else none).
    uint64_t device_memory_budget = 0;
};

// How far a warm-up got (sdm_warmup_progress): modules finished and modules to load (0 until
// listed).
struct WarmupProgress {
    uint32_t done = 0;
    uint32_t total = 0;
};

// A background warm-up (sdm_preload_async, ABI 1.5; Runtime::preload_async makes one), owning its
// sdm_warmup and the done function. Destroying it cancels what has not started and waits for the
// loads under way and for the done function to return (sdm_warmup_destroy); the done function
// must therefore not destroy its own Warmup. Move-only; it may outlive its Runtime (whose
// destruction cancels it). Its members may be called from any thread.
class Warmup {
public:
    // Called once, on one of sdm's threads, with the outcome (what wait() returns once finished).
    // Exceptions it throws are dropped: they cannot cross libsdm's frames.
    using DoneFunction = std::function<void(sdm_status)>;

    Warmup() noexcept = default;  // empty: its calls fail with SDM_ERROR_INVALID_ARGUMENT
    Warmup(const Warmup&) = delete;
    Warmup& operator=(const Warmup&) = delete;
    Warmup(Warmup&& other) noexcept : done_(std::move(other.done_)), handle_(std::exchange(other.handle_, nullptr)) {}
    Warmup& operator=(Warmup&& other) noexcept {
        if (this != &other) {
            sdm_warmup_destroy(handle_);  // before its done function goes
            handle_ = std::exchange(other.handle_, nullptr);
            done_ = std::move(other.done_);
        }
        return *this;
    }
    ~Warmup() { sdm_warmup_destroy(handle_); }

    // Modules finished and modules to load.
    Result<WarmupProgress> progress() const {
        WarmupProgress p;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_warmup_progress(handle_, &p.done, &p.total, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return p;
    }
    // Waits at most `timeout_ms` (0: only looks): its outcome once finished (SDM_OK, its first
    // failure, SDM_ERROR_CANCELLED), SDM_ERROR_TIMEOUT before.
    Status wait(uint32_t timeout_ms) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_warmup_wait(handle_, timeout_ms, &error);
        return detail::status_of(status, error);
    }
    // Skips the modules not started; those loading finish. Returns at once.
    Status cancel() const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_warmup_cancel(handle_, &error);
        return detail::status_of(status, error);
    }
    sdm_warmup* handle() const noexcept { return handle_; }

private:
    friend class Runtime;
    Warmup(std::unique_ptr<DoneFunction> done, sdm_warmup* handle) noexcept : done_(std::move(done)), handle_(handle) {}

    // sdm_warmup_done_fn: forwards to the DoneFunction in `user_data`.
    static void forward_done(void* user_data, sdm_status status, const sdm_warmup*) noexcept {
#if defined(__cpp_exceptions)
        try {
            (*static_cast<const DoneFunction*>(user_data))(status);
        } catch (...) {
            // Unwinding through libsdm's frames is undefined.
        }
#else
        (*static_cast<const DoneFunction*>(user_data))(status);
#endif
    }

    std::unique_ptr<DoneFunction> done_;  // declared first: outlives handle_'s use of it
    sdm_warmup* handle_ = nullptr;
};

// Owns an sdm_runtime (and the log function it calls). Move-only; a moved-from or
// default-constructed Runtime is empty: its calls fail with SDM_ERROR_INVALID_ARGUMENT, and
// destroying it does nothing. Destroying, moving and assigning a Runtime are not thread-safe with
// other calls on it; every other member is.
class Runtime {
public:
    using Options = RuntimeOptions;

    Runtime() noexcept = default;  // empty
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;
    Runtime(Runtime&& other) noexcept : log_(std::move(other.log_)), handle_(std::exchange(other.handle_, nullptr)) {}
    Runtime& operator=(Runtime&& other) noexcept {
        if (this != &other) {
            sdm_runtime_destroy(handle_);  // before its log function goes
            handle_ = std::exchange(other.handle_, nullptr);
            log_ = std::move(other.log_);
        }
        return *this;
    }
    ~Runtime() { sdm_runtime_destroy(handle_); }

    // Creates a runtime (sdm_runtime_create). Cheap: the driver loads on first need, and a machine
    // without one still mounts and lists archives. The log function is copied and kept alive until
    // the runtime is destroyed.
    static Result<Runtime> create(const Options& options = Options()) {
        std::unique_ptr<LogFunction> log;
        sdm_runtime_params params{};
        params.struct_size = sizeof(params);
        params.flags = options.flags;
        params.log_level = options.log_level;
        params.cuda_driver = options.cuda_driver.empty() ? nullptr : options.cuda_driver.c_str();
        params.cuda_context = options.cuda_context;
        params.cache_dir = options.cache_dir.empty() ? nullptr : options.cache_dir.c_str();
        params.cache_max_bytes = options.cache_max_bytes;
        params.cache_flags = options.cache_flags;
        params.jit_flags = options.jit_flags;
        params.kernel_abi_major = options.kernel_abi_major;
        params.device_contexts = options.device_contexts.empty() ? nullptr : options.device_contexts.data();
        // Clamped, not truncated: a count past sdm's limit is refused with the limit named.
        params.device_context_count = static_cast<uint32_t>(std::min<size_t>(options.device_contexts.size(), UINT32_MAX));
        params.signature_policy = options.signature_policy;
        params.jit_isolation = options.jit_isolation;
        params.jit_time_limit_ms = options.jit_time_limit_ms;
        params.jit_memory_limit_bytes = options.jit_memory_limit_bytes;
        params.device_memory_budget = options.device_memory_budget;
        std::vector<uint8_t> keys;  // back to back, as sdm_runtime_params takes them; the call copies them
        if (options.trusted_keys) {
            for (const PublicKey& key : *options.trusted_keys) keys.insert(keys.end(), key.begin(), key.end());
            // Never NULL, even for no keys: NULL would mean $SDM_TRUSTED_KEYS.
            static const uint8_t no_keys = 0;
            params.trusted_keys = keys.empty() ? &no_keys : keys.data();
            // Clamped, not truncated: a count past sdm's limit is refused with the limit named.
            params.trusted_key_count = static_cast<uint32_t>(std::min<size_t>(options.trusted_keys->size(), UINT32_MAX));
        }
        if (options.log) {
            log = std::make_unique<LogFunction>(options.log);
            params.log_fn = &Runtime::forward_log;
            params.log_user_data = log.get();  // stable across moves of the Runtime: it is on the heap
        }
        sdm_runtime* handle = nullptr;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_runtime_create(&params, &handle, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return Runtime(handle, std::move(log));
    }

    // Whether this Runtime holds a runtime.
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    // The C handle, for sdm.h functions this wrapper does not cover; owned by this Runtime, valid
    // until it is destroyed or moved from. Do not destroy it.
    sdm_runtime* get() const noexcept { return handle_; }

    // A copy of the last error any call on this runtime reported, from any thread; std::nullopt
    // when there is none yet (or the Runtime is empty, or sdm had no memory for the copy). Every
    // call here returns its own Error, so this is for diagnostics.
    std::optional<Error> last_error() const {
        sdm_error* last = nullptr;
        if (sdm_runtime_last_error(handle_, &last) != SDM_OK || last == nullptr) return std::nullopt;
        return Error::adopt(sdm_error_code(last), last);
    }

    // Mounts an archive file, mapped read-only (sdm_archive_mount_file). Later mounts take
    // precedence over earlier ones.
    Status mount_file(const std::string& path) {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_archive_mount_file(handle_, path.c_str(), &error);
        return detail::status_of(status, error);
    }
    // Mounts an archive from memory (sdm_archive_mount_memory); the bytes are copied. `label`
    // names it in messages and in archives(); empty: sdm's default label.
    Status mount_memory(const void* data, size_t size, const std::string& label = std::string()) {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_archive_mount_memory(handle_, data, size, label.empty() ? nullptr : label.c_str(), &error);
        return detail::status_of(status, error);
    }

    // The number of mounted archives.
    Result<uint32_t> archive_count() const {
        return detail::get<uint32_t>([this](uint32_t* count, sdm_error** error) { return sdm_archive_count(handle_, count, error); });
    }
    // Mounted archive `index`, in mount order; SDM_ERROR_NOT_FOUND past the end.
    Result<ArchiveInfo> archive_info(uint32_t index) const {
        sdm_archive_info c{};
        c.struct_size = sizeof(c);
        sdm_error* error = nullptr;
        const sdm_status status = sdm_archive_info_get(handle_, index, &c, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        ArchiveInfo info;
        info.label = c.label != nullptr ? c.label : "";
        info.content_version = c.content_version != nullptr ? c.content_version : "";
        info.size_bytes = c.size_bytes;
        info.entry_count = c.entry_count;
        info.kernel_count = c.kernel_count;
        info.kernel_abi_major = c.kernel_abi_major;
        info.kernel_abi_minor = c.kernel_abi_minor;
        info.format_major = c.format_major;
        info.format_minor = c.format_minor;
        info.embedded = c.embedded != 0;
        return info;
    }
    // Every mounted archive, in mount order. Archives are never unmounted, so one mounted by
    // another thread meanwhile is either listed or not, never half.
    Result<std::vector<ArchiveInfo>> archives() const {
        const auto count = archive_count();
        if (!count) return count.error();
        std::vector<ArchiveInfo> list;
        list.reserve(*count);
        for (uint32_t index = 0; index < *count; ++index) {
            auto info = archive_info(index);
            if (!info) return info.error();
            list.push_back(std::move(*info));
        }
        return list;
    }

    // The kernels of mounted archive `archive` (mount order), or every kernel the runtime serves
    // (SDM_LIST_SERVED), sorted by name (sdm_kernel_list_create, ABI 1.3).
    Result<std::vector<KernelEntry>> kernels(uint32_t archive = SDM_LIST_SERVED) const {
        sdm_kernel_list* list = nullptr;
        sdm_error* error = nullptr;
        sdm_status status = sdm_kernel_list_create(handle_, archive, &list, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        struct Destroy {
            sdm_kernel_list* list;
            ~Destroy() { sdm_kernel_list_destroy(list); }
        } destroy{list};
        uint32_t count = 0;
        status = sdm_kernel_list_count(list, &count, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        std::vector<KernelEntry> out;
        out.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
            sdm_kernel_entry c{};
            c.struct_size = sizeof c;
            status = sdm_kernel_list_get(list, i, &c, &error);
            if (status != SDM_OK) return Error::adopt(status, error);
            KernelEntry e;
            e.name = c.name, e.demangled = c.demangled, e.module = c.module, e.signature = c.signature, e.targets = c.targets;
            e.archive_index = c.archive_index;
            e.shadowed = c.shadowed != 0;
            out.push_back(std::move(e));
        }
        return out;
    }

    // The CUDA driver's version (12080 for 12.8); loads the driver if needed:
    // SDM_ERROR_NO_DRIVER names the library it tried.
    Result<int32_t> driver_version() const {
        return detail::get<int32_t>([this](int32_t* version, sdm_error** error) { return sdm_driver_version(handle_, version, error); });
    }
    // Visible CUDA devices; 0 is a success.
    Result<int32_t> device_count() const {
        return detail::get<int32_t>([this](int32_t* count, sdm_error** error) { return sdm_device_count(handle_, count, error); });
    }
    // Device `ordinal`, supported or not.
    Result<DeviceInfo> device_info(int32_t ordinal) const {
        sdm_device_info c{};
        c.struct_size = sizeof(c);
        sdm_error* error = nullptr;
        const sdm_status status = sdm_device_info_get(handle_, ordinal, &c, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        DeviceInfo info;
        // Bounded: a name filling the whole array would have no NUL.
        info.name.assign(c.name, static_cast<size_t>(std::find(c.name, c.name + sizeof(c.name), '\0') - c.name));
        info.ordinal = c.ordinal;
        info.capability_major = c.capability_major;
        info.capability_minor = c.capability_minor;
        info.device_class = c.device_class;
        info.sm_count = c.sm_count;
        info.l2_bytes = c.l2_bytes;
        info.smem_optin_bytes = c.smem_optin_bytes;
        info.smem_cap_bytes = c.smem_cap_bytes;
        info.smem_per_sm_bytes = c.smem_per_sm_bytes;
        info.pdl_allowed = c.pdl_allowed != 0;
        info.clusters_allowed = c.clusters_allowed != 0;
        info.untested = c.untested != 0;
        return info;
    }
    // Device `ordinal`'s class (device_class_name() names it), or SDM_ERROR_UNSUPPORTED_DEVICE with
    // a message naming the supported GPUs and the device's name, capability and shared memory.
    Result<sdm_device_class> device_class(int32_t ordinal) const {
        return detail::get<sdm_device_class>(
            [this, ordinal](sdm_device_class* device_class, sdm_error** error) { return sdm_device_class_get(handle_, ordinal, device_class, error); });
    }

    // The kernel `name` on device `ordinal`, loading its module on first use (sdm_kernel_get).
    // `stream` (a CUstream, or nullptr) is checked for graph capture before any JIT. The Kernel
    // owns the reference this takes.
    Result<Kernel> kernel(int32_t ordinal, const std::string& name, void* stream = nullptr) const {
        sdm_kernel* k = nullptr;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_kernel_get(handle_, ordinal, name.c_str(), stream, &k, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return Kernel(handle_, k);
    }
    // kernel(), checking the kernel's declared `signature` ("ptr,f32,i32"): another is
    // SDM_ERROR_MISMATCH with both in the message (sdm_kernel_get_checked; the C argument order).
    Result<Kernel> kernel_checked(int32_t ordinal, const std::string& name, const std::string& signature, void* stream = nullptr) const {
        sdm_kernel* k = nullptr;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_kernel_get_checked(handle_, ordinal, name.c_str(), signature.c_str(), stream, &k, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return Kernel(handle_, k);
    }
    // Loads the modules of `names` (empty: of every kernel of every mounted archive) on device
    // `ordinal` now, JIT links in parallel (sdm_preload). The first failure; the rest still load.
    Status preload(int32_t ordinal, Span<const char* const> names = {}) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_preload(handle_, ordinal, names.data(), static_cast<uint32_t>(names.size()), &error);
        return detail::status_of(status, error);
    }
    // Starts warming up what preload() would load, in the background (sdm_preload_async, ABI 1.5):
    // returns at once. Across pending warm-ups, higher `priority` first. `done`, when given, is
    // called once when it finishes. A name that selects nothing is the warm-up's outcome.
    Result<Warmup> preload_async(int32_t ordinal, Span<const char* const> names = {}, int32_t priority = 0, Warmup::DoneFunction done = {}) const {
        std::unique_ptr<Warmup::DoneFunction> function;
        if (done) function = std::make_unique<Warmup::DoneFunction>(std::move(done));
        sdm_warmup* w = nullptr;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_preload_async(handle_, ordinal, names.data(), static_cast<uint32_t>(names.size()), priority,
                                                    function ? &Warmup::forward_done : nullptr, function.get(), &w, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return Warmup(std::move(function), w);
    }
    // This runtime's cache counters since its creation (sdm_cache_stats_get).
    Result<sdm_cache_stats> cache_stats() const {
        sdm_cache_stats out{};
        out.struct_size = sizeof out;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_cache_stats_get(handle_, &out, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // Hot reload: every mounted archive file now (sdm_runtime_reload), or only those changed on
    // disk (sdm_runtime_poll_archives, cheap enough for once a frame). The count replaced.
    Result<uint32_t> reload() const {
        return detail::get<uint32_t>([this](uint32_t* n, sdm_error** error) { return sdm_runtime_reload(handle_, n, error); });
    }
    Result<uint32_t> poll_archives() const {
        return detail::get<uint32_t>([this](uint32_t* n, sdm_error** error) { return sdm_runtime_poll_archives(handle_, n, error); });
    }
    // What the runtime holds now (sdm_footprint_get, ABI 1.5).
    Result<sdm_footprint> footprint() const {
        sdm_footprint out{};
        out.struct_size = sizeof out;
        sdm_error* error = nullptr;
        const sdm_status status = sdm_footprint_get(handle_, &out, &error);
        if (status != SDM_OK) return Error::adopt(status, error);
        return out;
    }
    // Unmounts the archive mounted as `label` and the overlays on it (sdm_archive_unmount, ABI
    // 1.5): the count that went. Kernels fetched from it keep working until released.
    Result<uint32_t> unmount(const std::string& label) const {
        return detail::get<uint32_t>([&](uint32_t* n, sdm_error** error) { return sdm_archive_unmount(handle_, label.c_str(), n, error); });
    }
    // Loads a plan-provider plugin (sdm_plugin_load; sdm_plugin.h).
    Status load_plugin(const std::string& path) const {
        sdm_error* error = nullptr;
        const sdm_status status = sdm_plugin_load(handle_, path.c_str(), &error);
        return detail::status_of(status, error);
    }

private:
    Runtime(sdm_runtime* handle, std::unique_ptr<LogFunction> log) noexcept : log_(std::move(log)), handle_(handle) {}

    // sdm_log_fn: forwards to the LogFunction in `user_data`.
    static void forward_log(void* user_data, sdm_log_level level, const char* message, size_t length) noexcept {
        const std::string_view text = message != nullptr ? std::string_view(message, length) : std::string_view();
#if defined(__cpp_exceptions)
        try {
            (*static_cast<const LogFunction*>(user_data))(level, text);
        } catch (...) {
            // Unwinding through libsdm's C frames is undefined; a log line is not worth failing the call.
        }
#else
        (*static_cast<const LogFunction*>(user_data))(level, text);
#endif
    }

    std::unique_ptr<LogFunction> log_;  // declared first: outlives handle_'s use of it
    sdm_runtime* handle_ = nullptr;
};

// ---- exceptions, for hosts that want them -------------------------------------------------------
//
// Free functions rather than members of Result, so that Result is the same class in every
// translation unit of a program whether or not it defines SDM_HPP_EXCEPTIONS.
#if defined(SDM_HPP_EXCEPTIONS) && defined(__cpp_exceptions)

// Thrown by value_or_throw and throw_if_error. what() is "SDM_ERROR_IO: <message>"; error() keeps
// the native code and log. Copying it never throws.
class Exception : public std::runtime_error {
public:
    explicit Exception(Error error) : std::runtime_error(error.describe()), error_(std::move(error)) {}
    sdm_status code() const noexcept { return error_.code(); }
    const Error& error() const noexcept { return error_; }

private:
    Error error_;
};

// The value, or throws sdm::Exception with the error.
template <typename T>
T value_or_throw(Result<T> result) {
    if (!result) throw Exception(result.error());
    return std::move(result).value();
}

// Throws sdm::Exception when `status` is a failure.
inline void throw_if_error(const Status& status) {
    if (!status) throw Exception(status.error());
}

#endif

}  // namespace sdm

#endif  // SDM_SDM_HPP
