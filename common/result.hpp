// Result<T>: a value or an Error{code, message}. The layers below the C ABI never throw for
// expected failures (bad bytes, missing files); they return these, and the C ABI hands the code
// out as the sdm_status it is. Messages name the thing (archive, entry, offset) and, where there
// is one, the fix.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace sdm {

// The one error vocabulary of every layer. Each value is the sdm_status of the same name in
// include/sdm/sdm.h (SDM_ERROR_ + the name in capitals): the C ABI hands a code out unchanged, and
// capi/ checks every pair at compile time.
enum class ErrorCode : int32_t {
    invalid_argument = 1,     // a caller passed something unusable (a bad name, a bad option)
    out_of_memory = 2,
    no_driver = 3,            // libcuda could not be loaded
    driver_too_old = 4,       // the driver lacks a CUDA version or an entry point sdm needs
    driver = 5,               // a driver call failed (Error::native holds the CUresult)
    no_device = 6,            // no such device ordinal
    unsupported_device = 7,   // outside the hardware matrix of an archive that declares it
    archive_corrupt = 8,      // bytes failed a check: checksum, range, limit, structure
    archive_unsupported = 9,  // well-formed but needs a newer reader (format major, feature bit, codec)
    io = 10,                  // the operating system refused (open, read, mmap, write, rename)
    not_found = 11,           // no such entry, kernel, file
    unsupported = 12,         // this build lacks the feature (a Meson feature was off)
    no_image = 13,            // no image of a module fits the device
    image_refused = 14,       // a loaded image failed the image policy
    jit = 15,                 // a JIT backend failed (Error::log holds its log)
    mismatch = 16,            // declared metadata disagrees with the bytes (arch, kind, ABI, signature)
    graph_capture = 17,       // the work would JIT while a stream captures a graph
    internal = 18,            // a broken invariant inside sdm: report it
    untrusted = 19,           // the signature policy refused an archive (unsigned, unknown key, bad signature)
    ambiguous = 20,           // a kernel name matches several kernels (ABI 1.3)
};
inline constexpr int32_t kLastErrorCode = 20;

// The sdm_status name of a code ("SDM_ERROR_NO_DRIVER"), as sdm_status_string gives it.
const char* status_name(ErrorCode code) noexcept;

struct Error {
    ErrorCode code{ErrorCode::internal};
    std::string message;
    int32_t native{0};  // the CUresult / nvJitLink result behind it, 0 when none
    std::string log;    // a backend's log (JIT error log), empty when none
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(implicit)
    Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(implicit)

    bool ok() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &std::get<0>(state_); }
    const T* operator->() const { return &std::get<0>(state_); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const& { return std::get<1>(state_); }
    Error&& error() && { return std::get<1>(std::move(state_)); }

private:
    std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT(implicit)

    bool ok() const noexcept { return !failed_; }
    explicit operator bool() const noexcept { return ok(); }
    const Error& error() const& { return error_; }
    Error&& error() && { return std::move(error_); }

private:
    Error error_{};
    bool failed_{false};
};

inline Error make_error(ErrorCode code, std::string message) {
    return Error{code, std::move(message), 0, {}};
}

}  // namespace sdm

// Propagate an error from an expression returning Result<...>.
#define SDM_TRY(expr)                                      \
    do {                                                   \
        auto sdm_try_result_ = (expr);                     \
        if (!sdm_try_result_.ok())                         \
            return std::move(sdm_try_result_).error();     \
    } while (0)

// Declares `name` = expr (a Result<T>) and returns its error from the enclosing function when it
// failed; `name` then holds a value (use *name, name->).
#define SDM_TRY_GET(name, expr) \
    auto name = (expr);         \
    if (!name) return std::move(name).error()
