// Every environment variable sdm reads as a setting, in one table (settings.cpp, kSettings): its
// name, type, default, bounds, what a bad value does and a line of doc. Every read in libsdm and
// the tool goes through the accessors below, each type parsed by its one grammar:
//   flag     unset, empty or "0": off; any other value: on
//   size     decimal bytes, or with a K, M or G suffix (binary, either case), within [least, most]
//   count    a decimal whole number within [least, most]
//   seconds  a decimal number (a fraction or an exponent allowed; no sign, no hex, no inf or nan)
//            within [least, most], least itself excluded where least_excluded
//   path     as given; an absolute_path must start with '/'
//   paths    ':'-separated (';' on Windows: platform::kPathListSeparator), empty entries dropped
//   choice   one of the words of `choices`
// An unset or empty variable is always its default. A bad value does what the setting's OnBad says,
// with one message: "NAME='VALUE' is not GRAMMAR; FALLBACK". docs/HOSTS.md's Environment table is
// checked against this table by tests/tool/env_documented.py (every name in both; no other source
// reads an SDM_ or CUDA_ variable). The standard variables sdm follows (HOME, XDG_CACHE_HOME,
// XDG_STATE_HOME, LD_LIBRARY_PATH) are the system's, read with platform::env where they are used.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace sdm::runtime {

// The JIT limits, which the table's bounds (SDM_JIT_TIME_LIMIT, SDM_JIT_MEMORY_LIMIT), the JIT
// (runtime/jit/jit_isolation.hpp) and the C ABI's checks (capi/capi.cpp) all use.
inline constexpr double kDefaultJitSeconds = 120;
inline constexpr double kMostJitSeconds = 86400;                       // a day: past it a link is stuck
inline constexpr uint64_t kDefaultJitMemoryBytes = uint64_t{8} << 30;
inline constexpr uint64_t kLeastJitMemoryBytes = uint64_t{64} << 20;  // below it no compiler even loads

}  // namespace sdm::runtime

namespace sdm::runtime::settings {

enum class Type : uint8_t { flag, size, count, seconds, path, absolute_path, paths, choice };

enum class OnBad : uint8_t {
    none,       // every value is good (flag, path, paths)
    warn,       // logged as a warning; the default applies
    strictest,  // logged as a warning; the strictest choice applies: a typo must not weaken a check
    refuse,     // the read fails (a Result's error), naming the variable and the value
};

// In the table's order (settings.cpp checks it at compile time).
enum class Id : uint8_t {
    cuda_driver, nvjitlink, log, cache_dir, cache_disable, cache_max_bytes, archive_path, plugin_path, require_signed, state_dir,
    trusted_keys, jit_isolation, jit_time_limit, jit_memory_limit, jit_helper, load_path, progress_interval, readahead, warmup_threads, nvtx_launch, device_memory_budget,
    cuda_force_ptx_jit, cuda_disable_ptx_jit, cuda_cache_disable, cuda_home, cuda_path,
};

struct Setting {
    Id id;
    const char* name;
    Type type;
    OnBad on_bad;
    const char* default_text;      // the default, as a message states it
    double least = 0, most = 0;    // size, count, seconds: the bounds
    bool least_excluded = false;   // seconds: least itself is not a value
    const char* unit = "";         // count: what it counts ("modules")
    const char* choices = "";      // choice: the words, space-separated
    const char* strictest = "";    // OnBad::strictest: the choice a bad value reads as
    const char* fallback = "";     // what a bad value leads to, for its message ("" : "using the default, DEFAULT")
    const char* doc = "";          // one line
};

std::span<const Setting> all() noexcept;
const Setting& setting(Id id) noexcept;

// What a value of `s` must be, in words ("a number of seconds in (0, 86400]", "auto, always or never").
std::string grammar(const Setting& s);
// The message of a bad value: "NAME='VALUE' is not GRAMMAR; FALLBACK" (VALUE printable, cut).
std::string bad_value_message(const Setting& s, std::string_view value);

// What a read found: the value (nullopt: unset or empty, or bad under OnBad::warn), or the error
// (OnBad::refuse); and the warning a bad value gives under warn or strictest ("" for none).
template <class T>
struct Read {
    Result<std::optional<T>> value;
    std::string warning;
};
Read<uint64_t> read_size(Id id);
Read<uint64_t> read_count(Id id);
Read<double> read_seconds(Id id);
Read<std::string> read_choice(Id id);  // strictest: the strictest choice

// The readers. nullopt: unset or empty, so the caller's default applies. A bad value does what the
// setting's OnBad says: warn logs on `log` (a runtime::Logger, or anything with warn(message)) and
// gives nullopt; strictest logs and gives the strictest choice; refuse gives the error
// (ErrorCode::invalid_argument). (Templates, so that this file, which log.cpp reads for SDM_LOG,
// need not include log.hpp.)
template <class T, class Log>
Result<std::optional<T>> logged(Read<T> read, const Log& log) {
    if (!read.warning.empty()) log.warn(read.warning);
    return std::move(read.value);
}
template <class Log>
Result<std::optional<uint64_t>> size(Id id, const Log& log) { return logged(read_size(id), log); }
template <class Log>
Result<std::optional<uint64_t>> count(Id id, const Log& log) { return logged(read_count(id), log); }
template <class Log>
Result<std::optional<double>> seconds(Id id, const Log& log) { return logged(read_seconds(id), log); }
template <class Log>
Result<std::optional<std::string>> choice(Id id, const Log& log) { return logged(read_choice(id), log); }
bool flag(Id id);
Result<std::optional<std::string>> path(Id id);
std::vector<std::string> paths(Id id);

// The value a reader gave, else `otherwise` (unset, or a bad value under warn).
template <class T, class U>
T value_or(const Result<std::optional<T>>& read, U otherwise) {
    return read && read->has_value() ? **read : static_cast<T>(otherwise);
}

// The grammars alone, for the tests: the value, or nullopt when `text` is not one.
std::optional<uint64_t> parse_size(std::string_view text);
std::optional<uint64_t> parse_count(std::string_view text);
std::optional<double> parse_seconds(std::string_view text);

}  // namespace sdm::runtime::settings
