// Child processes under a wall-clock limit (platform.hpp, run_child): what isolates a JIT
// compiler that may crash or hang on the input it is given (jit_isolation.hpp).
//
// The host's process is the host's (docs/RELIABILITY.md, "The host's process"): it may ignore
// SIGCHLD (the kernel then reaps its children at once), reap every child from a handler, or fork
// from another thread at any moment. None of that may change what sdm concludes of a child. So the
// child's end is learned from its pidfd (clone() with CLONE_PIDFD), never from a descriptor a fork
// elsewhere could be holding open; signals go to it through the pidfd, so a recycled pid is never
// killed; and how it ended comes from waitid on that pidfd or, when the host's own reaping took
// the status first, from the status record the child wrote at descriptor 5 as it ended
// (child_status_record: its exit status, or the fatal signal its handler caught).
#include "platform.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace sdm::runtime::platform {
namespace {

#ifndef P_PIDFD
constexpr int P_PIDFD = 3;
#endif

// The status record at descriptor 5: magic, then how it ended (1: exited, 2: a signal), then the
// status or the signal's number; three u32 in host order (both ends are this sdm).
constexpr uint32_t kStatusMagic = 0x534d4453u;  // "SDMS"
constexpr int kStatusFd = 5;
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU, SIGTRAP, SIGSYS};
struct sigaction previous_actions[65];

void write_status(uint32_t how, uint32_t value) {
    const uint32_t record[3] = {kStatusMagic, how, value};
    (void)!::pwrite(kStatusFd, record, sizeof record, 0);
}

// A fatal signal: recorded, then the action it had before (the default, or a sanitizer's report)
// runs as if this handler had never been there.
void record_fatal_signal(int sig) {
    write_status(2, static_cast<uint32_t>(sig));
    ::sigaction(sig, &previous_actions[sig], nullptr);
    ::raise(sig);
}

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

// A close-on-exec descriptor numbered 10 or more: the child's dup2 to 0-5 then never meets a
// source that already has the target's number (dup2 onto itself would keep close-on-exec set).
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

// What the clone()d child needs, prepared by the parent: it runs in the parent's memory
// (CLONE_VM, the parent thread suspended until it execs: CLONE_VFORK, as posix_spawn does), so it
// allocates nothing, takes no lock and calls only the kernel.
struct SpawnPlan {
    int program{-1};             // the program, opened (and checked) by the parent: execveat runs what was checked
    int sources[6]{};            // what becomes descriptors 0-5
    char** argv{nullptr};
    char** envp{nullptr};
    int exec_errno{0};           // written by the child when execveat fails
};

// The child's side, between clone() and exec. Raw system calls only (no interposed wrapper, no
// sanitizer's bookkeeping: this runs on a stack of its own in the parent's memory).
__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) int spawned_child(void* argument) {
    auto* plan = static_cast<SpawnPlan*>(argument);
    // Every signal's default disposition (a handler of the host's must never run here), then the
    // descriptors, then an empty mask: the mask the parent blocked everything under is inherited.
    struct kernel_sigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)();
        unsigned long mask;
    } default_action{SIG_DFL, 0, nullptr, 0};
    for (long sig = 1; sig < 65; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::syscall(SYS_rt_sigaction, sig, &default_action, nullptr, sizeof(unsigned long));
    for (int target = 0; target < 6; ++target)
        if (::syscall(SYS_dup3, plan->sources[target], target, 0) < 0) {
            plan->exec_errno = errno;
            ::syscall(SYS_exit_group, 127);
        }
    const unsigned long none = 0;
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
    // The checked program at descriptor 6, open across the exec: an interpreter of a script (a
    // wrapper named by SDM_JIT_HELPER) reads it through /dev/fd/6. The helper closes it.
    if (::syscall(SYS_dup3, plan->program, 6, 0) < 0) {
        plan->exec_errno = errno;
        ::syscall(SYS_exit_group, 127);
    }
    ::syscall(SYS_execveat, 6, "", plan->argv, plan->envp, AT_EMPTY_PATH);
    plan->exec_errno = errno;
    ::syscall(SYS_exit_group, 127);
    return 127;
}

// The C library's own clone(), never one interposed before it: ThreadSanitizer's interceptor takes
// every clone for a fork and runs its after-fork bookkeeping in the child, which with CLONE_VM is
// the parent's memory (its state then broke: races reported on locked data). The child here runs
// no instrumented code and only system calls, as in posix_spawn.
using CloneFunction = int (*)(int (*)(void*), void*, int, void*, ...);
CloneFunction c_library_clone() {
    static const CloneFunction found = [] {
        if (void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD))
            if (void* symbol = ::dlsym(libc, "clone")) return reinterpret_cast<CloneFunction>(symbol);
        return static_cast<CloneFunction>(&::clone);
    }();
    return found;
}

// Starts the child of `plan` and returns its pidfd (and pid). The parent blocks every signal
// around the clone, so no handler of the host's runs on the child's side before it resets them.
Result<std::pair<int, pid_t>> spawn(SpawnPlan& plan, const std::string& program) {
    constexpr size_t kStack = size_t{256} << 10;
    void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return os_failure("cannot start " + program + " (its stack)", errno);
    sigset_t all, before;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &before);
    int pidfd = -1;
    const pid_t pid = c_library_clone()(spawned_child, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &plan, &pidfd);
    const int err = errno;
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    ::munmap(stack, kStack);
    if (pid < 0)
        return os_failure("cannot start " + program + " (clone with a pidfd needs Linux 5.2 or later; a seccomp filter may also refuse it)", err);
    if (plan.exec_errno != 0) {
        // It ended before exec: reap it here (its pidfd says so at once).
        siginfo_t info{};
        ::syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED | __WALL, nullptr);
        ::close(pidfd);
        return os_failure("cannot start " + program, plan.exec_errno);
    }
    return std::pair<int, pid_t>{pidfd, pid};
}

// Whether the pidfd says the child has ended, waiting at most `milliseconds`.
bool ended_within(int pidfd, long long milliseconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
        pollfd p{pidfd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, std::min<long long>(left, 1000))));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
        if (left <= 0) return false;
    }
}

// Collects how the child ended. Only a host that reaps with __WALL can take it first: then how it
// ended is unknown (the reply alone says what it did).
void collect(int pidfd, ChildOutcome& out) {
    siginfo_t info{};
    long r;
    do {
        r = ::syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED | __WALL | WNOHANG, nullptr);
    } while (r < 0 && errno == EINTR);
    if (r != 0 || info.si_pid == 0) {
        out.status_unknown = true;
        return;
    }
    if (info.si_code == CLD_EXITED) out.exit_code = info.si_status;
    else out.signal = info.si_status;
}

// How the child said it ended, for a child whose exit status the host took.
void read_status_record(int fd, ChildOutcome& out) {
    uint32_t record[3] = {0, 0, 0};
    if (::pread(fd, record, sizeof record, 0) != static_cast<ssize_t>(sizeof record) || record[0] != kStatusMagic) return;
    if (record[1] == 1 && record[2] < 256) out.exit_code = static_cast<int>(record[2]);
    else if (record[1] == 2 && record[2] > 0 && record[2] < 65) out.signal = static_cast<int>(record[2]);
    else return;
    out.status_unknown = false;
}

// A child killed past its limit that still has not ended (in the kernel, uninterruptible) is
// reaped by a thread of its own when it does: never a zombie, never a wait without end here.
void reap_later(int pidfd) {
    try {
        std::thread([pidfd] {
            siginfo_t info{};
            while (::syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED | __WALL, nullptr) < 0 && errno == EINTR) {
            }
            ::close(pidfd);
        }).detach();
    } catch (...) {
        ::close(pidfd);  // no thread: the zombie stays until this process ends
    }
}

// Opens `path` for execveat, refusing what a planted program would be: not a regular file, owned
// by neither root nor this user, writable by its group or others, not executable.
Result<int> open_program(const std::string& path) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return os_failure("cannot open " + path, errno);
    Fd owned(fd);
    SDM_TRY(check_program(fd, path));
    SDM_TRY_GET(moved, high(::dup(fd), "the program's descriptor"));
    return *moved;
}

}  // namespace

Result<void> check_program(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return os_failure("cannot read " + path, errno);
    std::string wrong;
    if (!S_ISREG(st.st_mode)) wrong = "is not a regular file";
    else if (st.st_uid != 0 && st.st_uid != ::geteuid()) wrong = "belongs to user " + std::to_string(st.st_uid) + ", neither root nor this user";
    else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) wrong = "is writable by its group or by others";
    else if ((st.st_mode & S_IXUSR) == 0) wrong = "is not executable";
    if (!wrong.empty())
        return make_error(ErrorCode::jit, path + " " + wrong + ": sdm does not run a program another user could have planted or changed; reinstall it (mode 0755, "
                                                 "owned by root or you)");
    return {};
}

void child_status_record_start() {
    // On a stack of its own: a stack overflow is a fatal signal too.
    static char alternate[64 * 1024];
    stack_t stack{};
    stack.ss_sp = alternate;
    stack.ss_size = sizeof alternate;
    ::sigaltstack(&stack, nullptr);
    for (const int sig : kFatalSignals) {
        struct sigaction action {};
        action.sa_handler = record_fatal_signal;
        action.sa_flags = SA_ONSTACK;
        ::sigemptyset(&action.sa_mask);
        ::sigaction(sig, &action, &previous_actions[sig]);
    }
}

int child_status_record_exit(int code) {
    write_status(1, static_cast<uint32_t>(code) & 0xff);
    return code;
}

void child_detach() {
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 6u, ~0u, 0u) != 0)
#endif
        for (int fd = 6; fd < 4096; ++fd) ::close(fd);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
}

bool child_orphaned() noexcept { return ::getppid() == 1; }

void child_limit(uint64_t memory, double seconds) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SDM_SANITIZED 1  // clang's way of saying it
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !defined(SDM_SANITIZED)
    const rlimit space{memory, memory};
    ::setrlimit(RLIMIT_AS, &space);
#else
    (void)memory;
#endif
    const auto cpu = static_cast<rlim_t>(std::ceil(seconds)) + 1;
    const rlimit cpu_time{cpu, cpu};
    ::setrlimit(RLIMIT_CPU, &cpu_time);
}

std::optional<ByteVector> child_request() {
    struct stat st {};
    if (::fstat(3, &st) != 0 || st.st_size <= 0) return std::nullopt;
    ByteVector bytes(static_cast<size_t>(st.st_size));
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::pread(3, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
        if (n <= 0) return std::nullopt;
        done += static_cast<size_t>(n);
    }
    return bytes;
}

bool child_reply(Bytes reply) {
    for (size_t done = 0; done < reply.size();) {
        const ssize_t n = ::write(4, reply.data() + done, reply.size() - done);
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

Result<bool> program_present(const std::string& path) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return false;
        return os_failure("cannot open " + path, errno);
    }
    Fd owned(fd);
    SDM_TRY(check_program(fd, path));
    return true;
}

std::string ended_by(int signal) {
    // The signals a crashing or limited compiler dies of, by name (sigabbrev_np is glibc 2.32+).
    static constexpr std::pair<int, const char*> names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                                                            {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
                                                            {SIGXCPU, "SIGXCPU"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}};
    std::string text = "was killed by signal " + std::to_string(signal);
    for (const auto& [number, name] : names)
        if (number == signal) text += std::string(" (") + name + ")";
    return text;
}

Result<ChildOutcome> run_child(const ChildRun& run, const std::function<void(int pid)>& started) {
    if (run.argv.empty()) return make_error(ErrorCode::invalid_argument, "run_child: no program");
    SDM_TRY_GET(program, open_program(run.argv[0]));
    Fd program_fd(*program);
    SDM_TRY_GET(request, high(::memfd_create("sdm-child-request", MFD_CLOEXEC), "the child's request file"));
    Fd request_fd(*request);
    SDM_TRY(write_all(request_fd.fd, run.request));
    if (::lseek(request_fd.fd, 0, SEEK_SET) != 0) return os_failure("cannot rewind the child's request", errno);
    SDM_TRY_GET(reply, high(::memfd_create("sdm-child-reply", MFD_CLOEXEC), "the child's reply file"));
    Fd reply_fd(*reply);
    SDM_TRY_GET(errors, high(::memfd_create("sdm-child-stderr", MFD_CLOEXEC), "the child's error file"));
    Fd errors_fd(*errors);
    SDM_TRY_GET(status, high(::memfd_create("sdm-child-status", MFD_CLOEXEC), "the child's status file"));
    Fd status_fd(*status);
    SDM_TRY_GET(null_in, high(::open("/dev/null", O_RDONLY | O_CLOEXEC), "/dev/null"));
    Fd null_in_fd(*null_in);
    SDM_TRY_GET(null_out, high(::open("/dev/null", O_WRONLY | O_CLOEXEC), "/dev/null"));
    Fd null_out_fd(*null_out);

    std::vector<char*> argv;
    for (const std::string& a : run.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    SpawnPlan plan;
    plan.program = program_fd.fd;
    const int sources[6] = {null_in_fd.fd, null_out_fd.fd, errors_fd.fd, request_fd.fd, reply_fd.fd, status_fd.fd};
    std::copy(std::begin(sources), std::end(sources), plan.sources);
    plan.argv = argv.data();
    plan.envp = environ;
    const auto begun = std::chrono::steady_clock::now();
    SDM_TRY_GET(child, spawn(plan, run.argv[0]));
    const auto [pidfd, pid] = *child;
    if (started) started(pid);

    ChildOutcome out;
    const auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(run.seconds)).count();
    if (!ended_within(pidfd, std::max<long long>(1, limit))) {
        out.timed_out = true;
        ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
    }
    // Killed, it ends at once, unless it sleeps in the kernel: then it is reaped when it wakes.
    if (ended_within(pidfd, 10'000)) {
        collect(pidfd, out);
        ::close(pidfd);
    } else {
        out.status_unknown = true;
        reap_later(pidfd);
    }
    if (out.status_unknown && !out.timed_out) read_status_record(status_fd.fd, out);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    if (out.timed_out) {
        out.seconds = run.seconds;
        if (out.signal == 0) out.signal = SIGKILL;
    }
    SDM_TRY_GET(replied, read_back(reply_fd.fd, run.max_reply, true, "reply"));
    out.reply = std::move(*replied);
    SDM_TRY_GET(said, read_back(errors_fd.fd, run.max_stderr, false, "standard error"));
    out.standard_error.assign(reinterpret_cast<const char*>(said->data()), said->size());
    return out;
}

}  // namespace sdm::runtime::platform
