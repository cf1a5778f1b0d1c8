// The half of platform.hpp that is the same on every operating system: the moves and destructors
// of its handles, a lock file's mark and the wait for a lock, a path list's entries (env_list), the
// checks before a file is read whole, and how a child ended in words. The OS files (platform.cpp,
// platform_windows.cpp, ...) write the rest.
#include "platform.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <thread>
#include <utility>

#include "common/text.hpp"

namespace sdm::runtime::platform {

Library::Library(Library&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Library& Library::operator=(Library&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) unload_library(handle_);
        handle_ = std::exchange(other.handle_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

Library::~Library() {
    if (handle_ != nullptr) unload_library(handle_);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock::~FileLock() {
    if (fd_ >= 0) close_descriptor(fd_);
}

Directory::Directory(Directory&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

Directory& Directory::operator=(Directory&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) close_descriptor(fd_);
        fd_ = std::exchange(other.fd_, -1);
        path_ = std::move(other.path_);
    }
    return *this;
}

Directory::~Directory() {
    if (fd_ >= 0) close_descriptor(fd_);
}

std::string lock_mark_text(const LockMark& mark, int self, int64_t now) {
    std::string text = "pid " + std::to_string(self);
    if (mark.seconds > 0) text += " until " + std::to_string(now + static_cast<int64_t>(std::ceil(mark.seconds)));
    if (!mark.what.empty()) text += ": " + mark.what.substr(0, 160);
    return text + "\n";
}

LockHolder parse_lock_mark(std::string_view text, int self, int64_t now) {
    text = text.substr(0, 255);
    if (text.size() <= 4 || !text.starts_with("pid ")) return {"another process or thread", std::nullopt};
    constexpr long kPidMax = 4194304;  // Linux's largest pid_max (2^22); Windows' ids stay below it in practice
    long pid = 0;
    size_t i = 4;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && pid <= kPidMax; ++i) pid = pid * 10 + (text[i] - '0');
    if (pid <= 0 || pid > kPidMax) return {"another process or thread", std::nullopt};
    LockHolder h;
    h.who = pid == self ? "another thread of this process" : "process " + std::to_string(pid);
    const std::string_view rest = text.substr(i);
    if (rest.starts_with(" until ")) {
        int64_t until = 0;
        size_t j = 7;
        for (; j < rest.size() && j < 7 + 12 && rest[j] >= '0' && rest[j] <= '9'; ++j) until = until * 10 + (rest[j] - '0');
        if (j > 7) h.until = until;
        if (rest.substr(j).starts_with(": ")) {
            std::string_view what = rest.substr(j + 2);
            what = what.substr(0, what.find('\n'));
            h.who += " (" + printable(what) + (h.until ? ", its limit ends in " + std::to_string(*h.until - now) + " s" : std::string()) + ")";
        }
    }
    return h;
}

Result<void> wait_for_lock(const std::string& path, double warn_after_seconds, double give_up_seconds,
                           const std::function<void(const std::string& holder)>& waiting, const std::function<Result<bool>()>& try_once,
                           const std::function<LockHolder()>& holder) {
    const auto started = std::chrono::steady_clock::now();
    auto next_look = started;
    bool warned = false;
    for (;;) {
        SDM_TRY_GET(taken, try_once());
        if (*taken) return {};
        const auto now = std::chrono::steady_clock::now();
        const double waited = std::chrono::duration<double>(now - started).count();
        if (!warned && waited > warn_after_seconds) {
            warned = true;
            if (waiting) waiting(holder().who);
        }
        // A holder that said when its build ends (its limit) and is still there well after it is
        // stuck: stop waiting for it then, not after give_up_seconds. Looked at once a second.
        bool overdue = false;
        if (now >= next_look) {
            next_look = now + std::chrono::seconds(1);
            const LockHolder h = holder();
            overdue = h.until && static_cast<int64_t>(std::time(nullptr)) > *h.until + kLockGraceSeconds;
        }
        if (waited > give_up_seconds || overdue)
            return make_error(ErrorCode::io, "gave up after " + std::to_string(static_cast<long>(waited)) + " s waiting for the lock " + path + ", which " +
                                                 holder().who + " holds" + (overdue ? ", past the end of its build's limit" : ""));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

std::vector<std::string> env_list(const char* name) {
    std::vector<std::string> out;
    const auto list = env(name);
    if (!list) return out;
    size_t at = 0;
    while (at <= list->size()) {
        size_t end = list->find(kPathListSeparator, at);
        if (end == std::string::npos) end = list->size();
        if (end > at) out.push_back(list->substr(at, end - at));
        at = end + 1;
    }
    return out;
}

Result<void> check_whole_read(const std::string& path, const FileStatus& status, uint64_t max_size, size_t prefix_size) {
    if (!status.regular) return make_error(ErrorCode::invalid_argument, path + " is " + status.type() + ", not a regular file");
    if (status.size > max_size)
        return make_error(ErrorCode::invalid_argument, path + " is " + std::to_string(status.size) + " bytes, more than the " +
                                                           std::to_string(max_size) + " it may hold");
    if (status.size < prefix_size)
        return make_error(ErrorCode::io, path + " is " + std::to_string(status.size) + " bytes, shorter than its " + std::to_string(prefix_size) +
                                             "-byte header");
    return {};
}

std::string ChildOutcome::how() const {
    if (timed_out) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f", seconds);
        return std::string("ran past its time limit of ") + text + " s and was killed";
    }
    if (signal != 0) return ended_by(signal);
    if (status_unknown) return "ended, and how is unknown (the host's own wait took its exit status)";
    return "exited with status " + std::to_string(exit_code);
}

unsigned cores() noexcept {
    static const unsigned n = std::thread::hardware_concurrency();
    return n;
}

}  // namespace sdm::runtime::platform
