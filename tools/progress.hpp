// The progress lines of the long commands (pack, import, jit).
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace sdm::tools {

// Progress on stderr, by phase ("sdm pack: compress [=====>    ] 12/40, 3.1/s, ~9 s left"): on a
// terminal one line redrawn at most ten times a second; elsewhere (a CI log) a line every
// $SDM_PROGRESS_INTERVAL seconds (default 5; 0: at every update) while a phase advances, with its
// count, rate and time left, and one line as each phase ends, with its count, time and rate. The
// lines are written as units finish: a single unit that takes minutes prints nothing meanwhile.
// update() may be called from several threads at once.
class Progress {
public:
    Progress(std::string label, bool enabled);
    void update(const char* phase, size_t done, size_t total);
    void finish();

private:
    std::string label_;
    bool enabled_, terminal_;
    std::chrono::steady_clock::duration interval_;  // between lines off a terminal
    std::mutex mutex_;
    std::string phase_;
    std::chrono::steady_clock::time_point phase_start_{}, last_draw_{};
    size_t last_done_{0}, last_total_{0};
    bool drawn_{false};
    void end_phase();  // holds mutex_
};

// A rate as people read it: "3.4/s", "27/s", "1.2k/s", "45k/s", "3.1M/s"; under one a second, the
// time each takes ("12.5 s each"). Empty for no unit done or a phase under half a second (too short
// for a rate that means anything).
std::string rate_text(size_t done, double seconds);

// A duration: "42 s", "3 min 20 s", "2 h 5 min".
std::string duration_text(double seconds);

}  // namespace sdm::tools
