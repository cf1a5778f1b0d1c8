// The progress lines of the long commands (pack, import, jit).
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace sdm::tools {

// Progress on stderr, by phase ("sdm pack: compress [=====>    ] 12/40, 3.1/s, ~9 s left"): on a
// terminal one line redrawn at most ten times a second; elsewhere (a CI log) one line as each phase
// ends, with its count, time and rate. update() may be called from several threads at once.
class Progress {
public:
    Progress(std::string label, bool enabled);
    void update(const char* phase, size_t done, size_t total);
    void finish();

private:
    std::string label_;
    bool enabled_, terminal_;
    std::mutex mutex_;
    std::string phase_;
    std::chrono::steady_clock::time_point phase_start_{}, last_draw_{};
    size_t last_done_{0}, last_total_{0};
    bool drawn_{false};
    void end_phase();  // holds mutex_
};

}  // namespace sdm::tools
