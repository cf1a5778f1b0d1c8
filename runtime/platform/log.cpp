#include "log.hpp"

#include <cstdio>
#include <mutex>

#include "settings.hpp"

namespace sdm::runtime {

std::optional<LogLevel> Logger::parse_level(std::string_view text) {
    if (text == "off" || text == "none") return LogLevel::off;
    if (text == "error") return LogLevel::error;
    if (text == "warn" || text == "warning") return LogLevel::warn;
    if (text == "info") return LogLevel::info;
    if (text == "debug") return LogLevel::debug;
    return std::nullopt;
}

Logger::Logger(Sink sink, std::optional<LogLevel> level) : sink_(std::move(sink)), level_(level.value_or(LogLevel::warn)) {
    if (level) return;
    const Logger warnings(sink_, LogLevel::warn);  // (a bad SDM_LOG is told as a warning, at the default level)
    if (const auto text = settings::value_or(settings::choice(settings::Id::log, warnings), ""); !text.empty()) level_ = parse_level(text).value_or(level_);
}

void Logger::log(LogLevel level, std::string_view message) const {
    if (!enabled(level)) return;
    if (sink_) {
        sink_(level, message);
        return;
    }
    static std::mutex stderr_mutex;  // whole lines, even from several threads
    static constexpr const char* kNames[] = {"", "error", "warning", "info", "debug"};
    std::lock_guard lock(stderr_mutex);
    std::fprintf(stderr, "sdm: %s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(message.size()), message.data());
}

}  // namespace sdm::runtime
