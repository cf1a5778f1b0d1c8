// Result<T>: a value or an Error{code, message}. The library below the C ABI never throws for
// expected failures (bad bytes, missing files); it returns these, and the C ABI layer maps the
// code onto an sdm_status. Messages name the thing (archive, entry, offset) and, where there is
// one, the fix.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace sdm {

// Error codes below the C ABI. The C ABI maps each onto its sdm_status; keep the two in step.
enum class ErrorCode : int32_t {
    invalid_argument = 1,  // a caller passed something unusable (a bad name, a bad option)
    corrupt = 2,           // bytes failed a check: checksum, range, limit, structure
    unsupported = 3,       // well-formed but needs a newer reader (format major, feature bit, codec)
    io = 4,                // the operating system refused (open, read, mmap, write, rename)
    not_found = 5,         // no such entry, kernel, file
    out_of_memory = 6,
    mismatch = 7,          // declared metadata disagrees with the bytes (arch, kind, ABI, signature)
    internal = 8,          // a broken invariant inside sdm: report it
    // The runtime's own failures.
    no_driver = 9,            // libcuda could not be loaded
    driver_too_old = 10,      // the driver lacks a CUDA version or an entry point sdm needs
    driver = 11,              // a driver call failed (Error::native holds the CUresult)
    no_device = 12,           // no such device ordinal
    unsupported_device = 13,  // outside the hardware matrix
    not_built = 14,           // this build lacks the feature (a Meson feature was off)
    no_image = 15,            // no image of a module fits the device
    jit = 16,                 // a JIT backend failed (Error::log holds its log)
    graph_capture = 17,       // the work would JIT while a stream captures a graph
    image_refused = 18,       // a loaded image failed the image policy
};

const char* error_code_name(ErrorCode code) noexcept;

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
