#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include "progress.hpp"
#include "runtime/platform/log.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::tools {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Below this a phase's rate is noise (the clock's and the threads' start, not the work).
constexpr double kShortestTimed = 0.5;

// Off a terminal, a line this often: often enough that a log shows a long import moving, rarely
// enough that a 4,800-kernel library's log stays short.
std::chrono::steady_clock::duration line_interval() {
    // At most an hour (the table's bound): a larger one (or inf) would overflow the clock's duration.
    const runtime::Logger warnings({}, runtime::LogLevel::warn);  // on stderr, "sdm: warning: ..."
    const double interval = runtime::settings::value_or(runtime::settings::seconds(runtime::settings::Id::progress_interval, warnings), 5);
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(interval));
}

}  // namespace

std::string rate_text(size_t done, double took) {
    if (done == 0 || took < kShortestTimed) return {};
    const double rate = static_cast<double>(done) / took;
    if (rate >= 1e6) return fmt::format("{:.1f}M/s", rate / 1e6);
    if (rate >= 1e4) return fmt::format("{:.0f}k/s", rate / 1e3);
    if (rate >= 1e3) return fmt::format("{:.1f}k/s", rate / 1e3);
    if (rate >= 10) return fmt::format("{:.0f}/s", rate);
    if (rate >= 1) return fmt::format("{:.1f}/s", rate);
    return fmt::format("{:.1f} s each", took / static_cast<double>(done));
}

std::string duration_text(double s) {
    const auto whole = static_cast<long long>(s + 0.5);
    if (whole < 60) return fmt::format("{} s", whole);
    if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
    return fmt::format("{} h {} min", whole / 3600, whole % 3600 / 60);
}

Progress::Progress(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), terminal_(::isatty(STDERR_FILENO) != 0), interval_(line_interval()) {}

void Progress::end_phase() {
    if (phase_.empty()) return;
    const double took = seconds(std::chrono::steady_clock::now() - phase_start_);
    if (terminal_) std::fprintf(stderr, "\r\033[K");
    // Every phase leaves one line behind (on a terminal too: the record of what took the time).
    const std::string rate = rate_text(last_done_, took);
    std::fprintf(stderr, "sdm %s: %s %zu/%zu in %s%s\n", label_.c_str(), phase_.c_str(), last_done_, last_total_,
                 took < 60 ? fmt::format("{:.1f} s", took).c_str() : duration_text(took).c_str(), rate.empty() ? "" : (", " + rate).c_str());
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
        last_draw_ = now;
        last_done_ = 0;
    }
    if (done < last_done_) return;  // a worker's older count arriving after a newer one
    last_done_ = done;
    last_total_ = total;
    if (done >= total && !terminal_) return;  // the phase's end line says it
    if (terminal_ ? drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100) : now - last_draw_ < interval_) return;
    last_draw_ = now;
    drawn_ = true;
    const double took = seconds(now - phase_start_);
    const std::string rate = rate_text(done, took);
    std::string tail = rate.empty() ? "" : ", " + rate;
    if (!rate.empty() && done < total) tail += ", ~" + duration_text(static_cast<double>(total - done) * took / static_cast<double>(done)) + " left";
    if (!terminal_) {
        std::fprintf(stderr, "sdm %s: %s %zu/%zu%s\n", label_.c_str(), phase_.c_str(), done, total, tail.c_str());
        return;
    }
    constexpr size_t kWidth = 30;
    const size_t filled = done * kWidth / total;
    std::fprintf(stderr, "\r\033[Ksdm %s: %s [%.*s%s%*s] %zu/%zu%s", label_.c_str(), phase_.c_str(), static_cast<int>(filled),
                 "==============================", filled < kWidth ? ">" : "", static_cast<int>(filled < kWidth ? kWidth - filled - 1 : 0), "", done,
                 total, tail.c_str());
    std::fflush(stderr);
}

void Progress::finish() {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    end_phase();
}

}  // namespace sdm::tools
