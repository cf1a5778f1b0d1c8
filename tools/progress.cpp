#include <cstdio>

#include <unistd.h>

#include "commands.hpp"

namespace sdm::tools {

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled && ::isatty(STDERR_FILENO)) {}

void Progress::update(size_t done, size_t total) {
    if (!enabled_ || total == 0) return;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(done * kWidth / total);
    if (filled == last_) return;
    last_ = filled;
    std::fprintf(stderr, "\r%s [%.*s%s%*s] %zu/%zu", label_.c_str(), filled, "========================================",
                 filled < kWidth ? ">" : "", filled < kWidth ? kWidth - filled - 1 : 0, "", done, total);
    std::fflush(stderr);
}

void Progress::finish() {
    if (enabled_ && last_ >= 0) std::fprintf(stderr, "\r\033[K");
    last_ = -1;
}

}  // namespace sdm::tools
