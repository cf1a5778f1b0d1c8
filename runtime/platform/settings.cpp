#include "settings.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>

#include "common/text.hpp"
#include "platform.hpp"

namespace sdm::runtime::settings {
namespace {

constexpr double kMostBytes = static_cast<double>(uint64_t{1} << 62);

// Every variable, grouped as docs/HOSTS.md lists them; docs/HOSTS.md's Environment table holds each
// name (tests/tool/env_documented.py reads the `.name`s of this table).
constexpr Setting kSettings[] = {
    {.id = Id::cuda_driver, .name = "SDM_CUDA_DRIVER", .type = Type::path, .on_bad = OnBad::none, .default_text = "libcuda.so.1 (Windows: nvcuda.dll)",
     .doc = "libcuda to load; params.cuda_driver wins"},
    {.id = Id::nvjitlink, .name = "SDM_NVJITLINK", .type = Type::path, .on_bad = OnBad::none,
     .default_text = "its sonames, then $CUDA_HOME/lib64, /usr/local/cuda/lib64 (Windows: nvJitLink_130_0.dll, ..., then %CUDA_PATH%, %CUDA_HOME%)", .doc = "libnvJitLink to use"},
    {.id = Id::log, .name = "SDM_LOG", .type = Type::choice, .on_bad = OnBad::warn, .default_text = "warn",
     .choices = "off none error warn warning info debug", .doc = "the log level without a host setting"},
    {.id = Id::cache_dir, .name = "SDM_CACHE_DIR", .type = Type::path, .on_bad = OnBad::none,
     .default_text = "$XDG_CACHE_HOME/sdm, else ~/.cache/sdm (Windows: %LOCALAPPDATA%\\sdm\\cache)", .doc = "the kernel cache's directory"},
    {.id = Id::cache_disable, .name = "SDM_CACHE_DISABLE", .type = Type::flag, .on_bad = OnBad::none, .default_text = "off",
     .doc = "read and write no cache"},
    {.id = Id::cache_max_bytes, .name = "SDM_CACHE_MAX_BYTES", .type = Type::size, .on_bad = OnBad::refuse, .default_text = "1 GiB",
     .least = 1, .most = kMostBytes, .fallback = "the cache is not opened", .doc = "the cache's byte cap"},
    {.id = Id::archive_path, .name = "SDM_ARCHIVE_PATH", .type = Type::paths, .on_bad = OnBad::none, .default_text = "none",
     .doc = "archive files mounted at runtime creation"},
    {.id = Id::plugin_path, .name = "SDM_PLUGIN_PATH", .type = Type::paths, .on_bad = OnBad::none, .default_text = "none",
     .doc = "plan-provider plugins loaded at runtime creation"},
    {.id = Id::require_signed, .name = "SDM_REQUIRE_SIGNED", .type = Type::choice, .on_bad = OnBad::strictest, .default_text = "0",
     .choices = "1 warn 0", .strictest = "1", .fallback = "read as 1 (require)",
     .doc = "mount only archives signed by a trusted key (warn: mount, and log why)"},
    {.id = Id::state_dir, .name = "SDM_STATE_DIR", .type = Type::path, .on_bad = OnBad::none,
     .default_text = "$XDG_STATE_HOME/sdm, else ~/.local/state/sdm (Windows: %LOCALAPPDATA%\\sdm\\state)", .doc = "where the rollback marks are kept"},
    {.id = Id::trusted_keys, .name = "SDM_TRUSTED_KEYS", .type = Type::paths, .on_bad = OnBad::none, .default_text = "none",
     .doc = "public key files trusted for signed archives"},
    {.id = Id::jit_isolation, .name = "SDM_JIT_ISOLATION", .type = Type::choice, .on_bad = OnBad::strictest, .default_text = "auto",
     .choices = "auto always never", .strictest = "always", .fallback = "every JIT runs isolated (always)",
     .doc = "where links run, without a host setting"},
    {.id = Id::jit_time_limit, .name = "SDM_JIT_TIME_LIMIT", .type = Type::seconds, .on_bad = OnBad::warn, .default_text = "120 s",
     .least = 0, .most = kMostJitSeconds, .least_excluded = true, .doc = "every link's wall-clock limit"},
    {.id = Id::jit_memory_limit, .name = "SDM_JIT_MEMORY_LIMIT", .type = Type::size, .on_bad = OnBad::warn, .default_text = "8 GiB",
     .least = static_cast<double>(kLeastJitMemoryBytes), .most = kMostBytes, .doc = "an isolated link's address space"},
    {.id = Id::jit_helper, .name = "SDM_JIT_HELPER", .type = Type::absolute_path, .on_bad = OnBad::refuse,
     .default_text = "sdm-jit-helper beside libsdm, else in its sdm/ folder",
     .fallback = "point it at sdm-jit-helper by its absolute path or unset it", .doc = "the JIT helper to start"},
    {.id = Id::load_path, .name = "SDM_LOAD_PATH", .type = Type::choice, .on_bad = OnBad::warn, .default_text = "chosen per runtime",
     .choices = "module library", .fallback = "it is ignored", .doc = "how images go to the driver"},
    {.id = Id::progress_interval, .name = "SDM_PROGRESS_INTERVAL", .type = Type::seconds, .on_bad = OnBad::warn, .default_text = "5 s",
     .least = 0, .most = 3600, .doc = "seconds between the tool's progress lines off a terminal"},
    {.id = Id::readahead, .name = "SDM_READAHEAD", .type = Type::count, .on_bad = OnBad::warn, .default_text = "half the cores, from 2 to 8",
     .least = 0, .most = 16, .unit = "modules",
     .fallback = "decoding the default number ahead for this machine, half the cores from 2 to 8 (0 turns it off)",
     .doc = "how many modules ahead a load decodes on worker threads"},
    {.id = Id::warmup_threads, .name = "SDM_WARMUP_THREADS", .type = Type::count, .on_bad = OnBad::warn, .default_text = "the cores, at most 8",
     .least = 1, .most = 64, .unit = "threads", .fallback = "using the default, the cores up to 8",
     .doc = "how many threads a runtime's background warm-ups (sdm_preload_async) load on"},
    {.id = Id::nvtx_launch, .name = "SDM_NVTX_LAUNCH", .type = Type::flag, .on_bad = OnBad::none, .default_text = "off",
     .doc = "an NVTX range around every launch, for a profiler (read at runtime creation)"},
    {.id = Id::device_memory_budget, .name = "SDM_DEVICE_MEMORY_BUDGET", .type = Type::size, .on_bad = OnBad::warn, .default_text = "none",
     .least = 1, .most = kMostBytes, .fallback = "no budget: nothing is evicted",
     .doc = "the device memory a runtime's loaded modules may take per device, as cuMemGetInfo shows it; idle ones past it are evicted"},
    {.id = Id::cuda_force_ptx_jit, .name = "CUDA_FORCE_PTX_JIT", .type = Type::flag, .on_bad = OnBad::none, .default_text = "off",
     .doc = "the driver's switch: take the PTX path even when a cubin fits"},
    {.id = Id::cuda_disable_ptx_jit, .name = "CUDA_DISABLE_PTX_JIT", .type = Type::flag, .on_bad = OnBad::none, .default_text = "off",
     .doc = "the driver's switch: keep PTX from the driver's JIT"},
    {.id = Id::cuda_cache_disable, .name = "CUDA_CACHE_DISABLE", .type = Type::flag, .on_bad = OnBad::none, .default_text = "off",
     .doc = "the driver's switch: no driver JIT cache, and no sdm kernel cache"},
    {.id = Id::cuda_home, .name = "CUDA_HOME", .type = Type::path, .on_bad = OnBad::none, .default_text = "/usr/local/cuda",
     .doc = "the toolkit searched for libnvJitLink (and the tool's NVRTC)"},
    {.id = Id::cuda_path, .name = "CUDA_PATH", .type = Type::path, .on_bad = OnBad::none, .default_text = "none (the toolkit's Windows installer sets it)",
     .doc = "a Windows toolkit, searched for nvJitLink's DLL before CUDA_HOME"},
};

constexpr bool in_order() {
    for (size_t i = 0; i < std::size(kSettings); ++i)
        if (static_cast<size_t>(kSettings[i].id) != i) return false;
    return true;
}
static_assert(in_order(), "kSettings is in Id's order, one row per Id");
static_assert(static_cast<size_t>(Id::cuda_path) + 1 == std::size(kSettings), "one row per Id");

// A number in a grammar's words: 65536 -> "64M" for sizes, 86400 -> "86400".
std::string number_text(double v, Type type) {
    if (type == Type::size && v >= 1024) {
        const auto n = static_cast<uint64_t>(v);
        for (const auto& [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}})
            if (n % (uint64_t{1} << shift) == 0) return std::to_string(n >> shift) + suffix;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

std::vector<std::string_view> words(std::string_view list) {
    std::vector<std::string_view> out;
    for (size_t at = 0; at < list.size();) {
        const size_t end = std::min(list.find(' ', at), list.size());
        if (end > at) out.push_back(list.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

// The value of a set variable, else nullopt (unset or empty: the default).
std::optional<std::string> raw(const Setting& s) { return platform::env(s.name); }

// A bad value, by the setting's policy: warn gives nullopt and the warning; refuse gives the error.
template <class T>
Read<T> bad(const Setting& s, std::string_view value) {
    if (s.on_bad == OnBad::refuse) return {make_error(ErrorCode::invalid_argument, bad_value_message(s, value)), ""};
    return {std::optional<T>(), bad_value_message(s, value)};
}

template <class T>
Read<T> number(Id id, std::optional<T> (*parse)(std::string_view)) {
    const Setting& s = setting(id);
    const auto text = raw(s);
    if (!text) return {std::optional<T>(), ""};
    const auto v = parse(*text);
    const bool low = v && (s.least_excluded ? static_cast<double>(*v) <= s.least : static_cast<double>(*v) < s.least);
    if (!v || low || static_cast<double>(*v) > s.most) return bad<T>(s, *text);
    return {v, ""};
}

}  // namespace

std::span<const Setting> all() noexcept { return kSettings; }

const Setting& setting(Id id) noexcept { return kSettings[static_cast<size_t>(id)]; }

std::string grammar(const Setting& s) {
    const std::string least = number_text(s.least, s.type), most = number_text(s.most, s.type);
    switch (s.type) {
    case Type::flag: return "0 (off) or another value (on)";
    case Type::size: return "a size of at least " + least + " (bytes, or with K, M or G)";
    case Type::count: return std::string("a number of ") + s.unit + " from " + least + " to " + most;
    case Type::seconds:
        return s.least_excluded ? "a number of seconds in (" + least + ", " + most + "]" : "a number of seconds from " + least + " to " + most;
    case Type::path: return "a path";
    case Type::absolute_path: return "an absolute path";
    case Type::paths: return std::string("'") + platform::kPathListSeparator + "'-separated paths";
    case Type::choice: {
        const auto list = words(s.choices);
        std::string out;
        for (size_t i = 0; i < list.size(); ++i) out += (i == 0 ? "" : i + 1 == list.size() ? " or " : ", ") + std::string(list[i]);
        return out;
    }
    }
    return "?";
}

std::string bad_value_message(const Setting& s, std::string_view value) {
    const std::string fallback = *s.fallback != '\0' ? s.fallback : std::string("using the default, ") + s.default_text;
    return std::string(s.name) + "='" + shown_name(value) + "' is not " + grammar(s) + "; " + fallback;
}

std::optional<uint64_t> parse_size(std::string_view text) {
    uint64_t unit = 1;
    if (!text.empty()) {
        switch (text.back()) {
        case 'K': case 'k': unit = uint64_t{1} << 10; break;
        case 'M': case 'm': unit = uint64_t{1} << 20; break;
        case 'G': case 'g': unit = uint64_t{1} << 30; break;
        default: break;
        }
        if (unit != 1) text.remove_suffix(1);
    }
    const auto n = parse_count(text);
    if (!n || *n > std::numeric_limits<uint64_t>::max() / unit) return std::nullopt;
    return *n * unit;
}

std::optional<uint64_t> parse_count(std::string_view text) {
    uint64_t v = 0;
    if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;  // no sign, no space
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

std::optional<double> parse_seconds(std::string_view text) {
    // Decimal only: strtod would also take hex ("0x10"), "inf" and "nan".
    if (text.empty() || text.size() > 32 || text.front() == '-' || text.front() == '+' || text.find_first_not_of("0123456789.eE+-") != std::string_view::npos)
        return std::nullopt;
    const std::string copy(text);  // strtod needs a terminated string
    char* end = nullptr;
    const double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

bool flag(Id id) {
    const auto text = raw(setting(id));
    return text && *text != "0";
}

Read<uint64_t> read_size(Id id) { return number<uint64_t>(id, parse_size); }

Read<uint64_t> read_count(Id id) { return number<uint64_t>(id, parse_count); }

Read<double> read_seconds(Id id) { return number<double>(id, parse_seconds); }

Result<std::optional<std::string>> path(Id id) {
    const Setting& s = setting(id);
    auto text = raw(s);
    if (text && s.type == Type::absolute_path && !text->starts_with('/'))  // a relative one would move with the host's chdir
        return make_error(ErrorCode::invalid_argument, bad_value_message(s, *text));
    return text;
}

std::vector<std::string> paths(Id id) { return platform::env_list(setting(id).name); }

Read<std::string> read_choice(Id id) {
    const Setting& s = setting(id);
    auto text = raw(s);
    if (!text) return {std::optional<std::string>(), ""};
    for (const std::string_view word : words(s.choices))
        if (*text == word) return {std::move(text), ""};
    if (s.on_bad != OnBad::strictest) return bad<std::string>(s, *text);
    return {std::optional<std::string>(s.strictest), bad_value_message(s, *text)};
}

}  // namespace sdm::runtime::settings
