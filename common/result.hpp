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
// include/sdm/sdm.h (SDM_ERROR_ + the name in capitals), and the list is generated from it
// (common/status_codes.inc, by capi/gen_abi.py), so that common/ need not include sdm.h: the C
// ABI hands a code out unchanged, and capi/ checks every pair at compile time.
enum class ErrorCode : int32_t {
#define SDM_STATUS_CODE(code, value, status) code = value,
#include "status_codes.inc"
#undef SDM_STATUS_CODE
};
// The highest code (the codes are 1 .. kLastErrorCode).
inline constexpr int32_t kLastErrorCode = 0
#define SDM_STATUS_CODE(code, value, status) +1
#include "status_codes.inc"
#undef SDM_STATUS_CODE
    ;

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
