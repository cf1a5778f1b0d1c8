// The runtime's log: a host callback, or (without one) warnings and errors on stderr. The level
// comes from the host, else $SDM_LOG (error, warn, info, debug), else warn. Thread-safe; the
// callback runs on the logging thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sdm::runtime {

enum class LogLevel : int { off = 0, error = 1, warn = 2, info = 3, debug = 4 };

class Logger {
public:
    using Sink = std::function<void(LogLevel, std::string_view)>;
    // `level` unset: $SDM_LOG decides, else warn.
    Logger(Sink sink, std::optional<LogLevel> level);

    bool enabled(LogLevel level) const noexcept { return level != LogLevel::off && level <= level_; }
    void log(LogLevel level, std::string_view message) const;
    void error(std::string_view m) const { log(LogLevel::error, m); }
    void warn(std::string_view m) const { log(LogLevel::warn, m); }
    void info(std::string_view m) const { log(LogLevel::info, m); }
    void debug(std::string_view m) const { log(LogLevel::debug, m); }
    LogLevel level() const noexcept { return level_; }

    // "error" -> error; nullopt for text that names no level.
    static std::optional<LogLevel> parse_level(std::string_view text);

private:
    Sink sink_;
    LogLevel level_;
};

}  // namespace sdm::runtime
