#include <cstdio>

#include <unistd.h>

#include "progress.hpp"

namespace sdm::tools {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled), terminal_(::isatty(STDERR_FILENO) != 0) {}

void Progress::end_phase() {
    if (phase_.empty()) return;
    const double took = seconds(std::chrono::steady_clock::now() - phase_start_);
    if (terminal_) std::fprintf(stderr, "\r\033[K");
    // Every phase leaves one line behind (on a terminal too: the record of what took the time).
    std::fprintf(stderr, "sdm %s: %s %zu/%zu in %.1f s%s\n", label_.c_str(), phase_.c_str(), last_done_, last_total_, took,
                 took > 0 && last_done_ > 0 ? (", " + std::to_string(static_cast<long long>(static_cast<double>(last_done_) / took + 0.5)) + "/s").c_str() : "");
    phase_.clear();
    drawn_ = false;
}

void Progress::update(const char* phase, size_t done, size_t total) {
    if (!enabled_ || total == 0) return;
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (phase_ != phase) {
        end_phase();
        phase_ = phase;
        phase_start_ = now;
        last_done_ = 0;
    }
    if (done < last_done_) return;  // a worker's older count arriving after a newer one
    last_done_ = done;
    last_total_ = total;
    if (!terminal_ || (drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100))) return;
    last_draw_ = now;
    drawn_ = true;
    constexpr size_t kWidth = 30;
    const size_t filled = done * kWidth / total;
    const double took = seconds(now - phase_start_);
    const double rate = took > 0 ? static_cast<double>(done) / took : 0;
    std::string eta;
    if (rate > 0 && done < total) eta = ", ~" + std::to_string(static_cast<long long>(static_cast<double>(total - done) / rate + 0.5)) + " s left";
    std::fprintf(stderr, "\r\033[Ksdm %s: %s [%.*s%s%*s] %zu/%zu, %.1f/s%s", label_.c_str(), phase_.c_str(), static_cast<int>(filled),
                 "==============================", filled < kWidth ? ">" : "", static_cast<int>(filled < kWidth ? kWidth - filled - 1 : 0), "", done,
                 total, rate, eta.c_str());
    std::fflush(stderr);
}

void Progress::finish() {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    end_phase();
}

}  // namespace sdm::tools
