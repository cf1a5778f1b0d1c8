// Child processes under a wall-clock limit (platform.hpp, run_child): what isolates a JIT
// compiler that may crash or hang on the input it is given (jit_isolation.hpp).
#include "platform.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace sdm::runtime::platform {
namespace {

// A descriptor closed when it goes out of scope.
struct Fd {
    int fd{-1};
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

Error os_failure(const std::string& what, int err) { return make_error(ErrorCode::io, what + ": " + std::strerror(err)); }

// A close-on-exec descriptor numbered 10 or more: the child's dup2 to 3, 4 and 5 then never meets
// a source that already has the target's number (dup2 onto itself would keep close-on-exec set).
Result<int> high(int fd, const char* what) {
    if (fd < 0) return os_failure(std::string("cannot create ") + what, errno);
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    const int err = errno;
    ::close(fd);
    if (moved < 0) return os_failure(std::string("cannot move ") + what, err);
    return moved;
}

Result<void> write_all(int fd, Bytes bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return os_failure("cannot write the child's request", errno);
        done += static_cast<size_t>(n);
    }
    return {};
}

// The first `limit` bytes of a memfd the child wrote; `refuse_longer`: a longer one is an error.
Result<ByteVector> read_back(int fd, uint64_t limit, bool refuse_longer, const char* what) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return os_failure(std::string("cannot read the child's ") + what, errno);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size > limit && refuse_longer)
        return make_error(ErrorCode::jit, std::string("the child's ") + what + " of " + std::to_string(size) + " bytes is over its limit of " +
                                              std::to_string(limit));
    ByteVector out(static_cast<size_t>(std::min(size, limit)));
    size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the file is the child's: shorter than fstat said is its problem, not ours
        done += static_cast<size_t>(n);
    }
    out.resize(done);
    return out;
}

}  // namespace

std::string ChildOutcome::how() const {
    if (timed_out) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f", seconds);
        return std::string("ran past its time limit of ") + text + " s and was killed";
    }
    if (signal != 0) {
        // The signals a crashing or limited compiler dies of, by name (sigabbrev_np is glibc 2.32+).
        static constexpr std::pair<int, const char*> names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                                                                {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
                                                                {SIGXCPU, "SIGXCPU"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}};
        std::string text = "was killed by signal " + std::to_string(signal);
        for (const auto& [number, name] : names)
            if (number == signal) text += std::string(" (") + name + ")";
        return text;
    }
    return "exited with status " + std::to_string(exit_code);
}

Result<ChildOutcome> run_child(const ChildRun& run, const std::function<void(int pid)>& started) {
    if (run.argv.empty()) return make_error(ErrorCode::invalid_argument, "run_child: no program");
    SDM_TRY_GET(request, high(::memfd_create("sdm-child-request", MFD_CLOEXEC), "the child's request file"));
    Fd request_fd(*request);
    SDM_TRY(write_all(request_fd.fd, run.request));
    if (::lseek(request_fd.fd, 0, SEEK_SET) != 0) return os_failure("cannot rewind the child's request", errno);
    SDM_TRY_GET(reply, high(::memfd_create("sdm-child-reply", MFD_CLOEXEC), "the child's reply file"));
    Fd reply_fd(*reply);
    SDM_TRY_GET(errors, high(::memfd_create("sdm-child-stderr", MFD_CLOEXEC), "the child's error file"));
    Fd errors_fd(*errors);
    // The child holds the write end of this pipe until it ends, however it ends: its hang-up is
    // what the wait below polls for, with a timeout (no SIGCHLD handler, which is the host's).
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return os_failure("cannot create the child's pipe", errno);
    Fd alive_read(ends[0]);
    SDM_TRY_GET(alive_write_fd, high(ends[1], "the child's pipe"));
    Fd alive_write(*alive_write_fd);

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attributes);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    ::posix_spawn_file_actions_adddup2(&actions, errors_fd.fd, 2);
    ::posix_spawn_file_actions_adddup2(&actions, request_fd.fd, 3);
    ::posix_spawn_file_actions_adddup2(&actions, reply_fd.fd, 4);
    ::posix_spawn_file_actions_adddup2(&actions, alive_write.fd, 5);
    sigset_t none, all;
    ::sigemptyset(&none);
    ::sigfillset(&all);
    ::posix_spawnattr_setsigmask(&attributes, &none);
    ::posix_spawnattr_setsigdefault(&attributes, &all);
    ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> argv;
    for (const std::string& a : run.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = -1;
    const auto begun = std::chrono::steady_clock::now();
    const int spawned = ::posix_spawn(&pid, run.argv[0].c_str(), &actions, &attributes, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attributes);
    if (spawned != 0) return os_failure("cannot start " + run.argv[0], spawned);
    ::close(std::exchange(alive_write.fd, -1));  // only the child holds it now
    if (started) started(pid);

    ChildOutcome out;
    const auto deadline = begun + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(run.seconds));
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            out.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p{alive_read.fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (n < 0 && errno != EINTR) {
            const int err = errno;
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return os_failure("cannot wait for " + run.argv[0], err);
        }
        if (n > 0) break;  // hung up: it ended (it writes nothing to the pipe)
    }
    int status = 0;
    pid_t waited;
    do {
        waited = ::waitpid(pid, &status, 0);
    } while (waited < 0 && errno == EINTR);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    if (waited == pid) {
        if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
    } else if (out.timed_out) {
        out.signal = SIGKILL;  // the host reaps its children itself (SIGCHLD ignored): how it ended is not ours to read
    }
    if (out.timed_out) out.seconds = run.seconds;
    SDM_TRY_GET(replied, read_back(reply_fd.fd, run.max_reply, true, "reply"));
    out.reply = std::move(*replied);
    SDM_TRY_GET(said, read_back(errors_fd.fd, run.max_stderr, false, "standard error"));
    out.standard_error.assign(reinterpret_cast<const char*>(said->data()), said->size());
    return out;
}

}  // namespace sdm::runtime::platform
