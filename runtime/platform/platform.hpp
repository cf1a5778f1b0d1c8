// The runtime's platform layer: loading shared libraries, reading the environment, file locks,
// directories reached through a descriptor (the cache), and child processes run under limits (the
// isolated JIT). A Windows port (nvcuda.dll, LoadLibrary, GetProcAddress, LockFileEx,
// handle-relative opens, CreateProcess with a job object) replaces platform.cpp and
// platform_child.cpp and nothing else here.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::runtime::platform {

class Library {
public:
    // Loads `path` (a file name searched the platform's way, or a path) with local symbol scope.
    // `keep_loaded`: never unloaded once loaded (a later open is then a cheap reference). A path
    // (a name with a '/') must be a regular file (a FIFO or a device would block the loader or
    // feed it endless bytes).
    static Result<Library> open(const std::string& path, bool keep_loaded = false);
    Library() = default;
    Library(Library&& other) noexcept;
    Library& operator=(Library&& other) noexcept;
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    ~Library();

    void* symbol(const char* name) const noexcept;  // nullptr when absent
    const std::string& path() const noexcept { return path_; }
    // The file of the loaded library that holds `address` (a symbol's); nullopt when unknown.
    static std::optional<std::string> file_of(const void* address);
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    void* handle_{nullptr};
    std::string path_;
};

// The OS's release of a descriptor (Directory, FileLock: a lock goes with it) and of a loaded
// library, for the moves and destructors that portable.cpp writes once for every OS.
void close_descriptor(int fd) noexcept;
void unload_library(void* handle) noexcept;

// The variable's value; nullopt when unset or empty.
std::optional<std::string> env(const char* name);
// What separates a path list's entries: ':' on POSIX, ';' on Windows (as PATH: a drive letter's
// ':' is part of a path there).
#ifdef _WIN32
inline constexpr char kPathListSeparator = ';';
inline constexpr const char* kDefaultToolkitHome = nullptr;  // (none: the installer sets %CUDA_PATH%)
#else
inline constexpr char kPathListSeparator = ':';
inline constexpr const char* kDefaultToolkitHome = "/usr/local/cuda";
#endif
// The non-empty entries of the kPathListSeparator-separated list in environment variable `name`,
// in order (SDM_ARCHIVE_PATH, SDM_PLUGIN_PATH, SDM_TRUSTED_KEYS).
std::vector<std::string> env_list(const char* name);

// An exclusive lock on a lock file (flock: the kernel drops it when the holder dies, so a killed
// process never leaves a stale lock). Each acquire opens the file anew, so threads of one process
// exclude each other too.
class FileLock {
public:
    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&&) = delete;
    ~FileLock();

private:
    friend class Directory;
    explicit FileLock(int fd) : fd_(fd) {}
    int fd_{-1};
};

// What a lock's holder says of its work: what (printed to waiters) and for how long at most (0:
// no limit of its own).
struct LockMark {
    std::string what;
    double seconds{0};
};
// How long past the end of its mark's limit a holder is waited for (its build's own cleanup).
inline constexpr int64_t kLockGraceSeconds = 10;
// What a holder writes into its lock file ("pid N until T: what\n"; portable.cpp), and what a
// waiter reads back from the file's first bytes, trusting nothing: a bounded parse, the pid's range
// checked, the text escaped. `who` names the holder for a message; `until` is when its build must be
// over (seconds since the epoch; nullopt without one). `self` is this process's id, `now` the time.
std::string lock_mark_text(const LockMark& mark, int self, int64_t now);
struct LockHolder {
    std::string who;
    std::optional<int64_t> until;
};
LockHolder parse_lock_mark(std::string_view text, int self, int64_t now);
// Directory::lock's wait, on every OS: calls `try_once` (true: taken) every 2 ms; after
// `warn_after_seconds` tells `waiting` once who holds it; gives up (ErrorCode::io, naming the
// holder) after `give_up_seconds`, or once the holder is kLockGraceSeconds past its mark's limit.
Result<void> wait_for_lock(const std::string& path, double warn_after_seconds, double give_up_seconds,
                           const std::function<void(const std::string& holder)>& waiting, const std::function<Result<bool>()>& try_once,
                           const std::function<LockHolder()>& holder);

// What fstat says of a file or directory, for the checks of who may have written it.
struct FileStatus {
    bool regular{false};
    bool directory{false};
    uint32_t owner{0};   // uid
    uint32_t mode{0};    // permission bits (07777)
    uint64_t size{0};
    uint64_t inode{0};
    uint64_t device{0};
    int64_t mtime_ns{0};
    std::string type() const;  // "a regular file", "a directory", "a FIFO (named pipe)", "a symbolic link", ...
};

uint32_t effective_user() noexcept;
// Directory::read_file's checks of what fstat said before a byte is read: a regular file, at most
// `max_size` bytes, at least `prefix_size` (each refusal names `path` and what it is).
Result<void> check_whole_read(const std::string& path, const FileStatus& status, uint64_t max_size, size_t prefix_size);
// This process's id (a forked child sees its own: what the warm-up and readahead threads check).
int process_id() noexcept;
// The cores this process may use (std::thread::hardware_concurrency, which reads sysfs at each
// call), read once; 0 when unknown.
unsigned cores() noexcept;
// The status of the file `path` names, links followed (the identity of a mounted archive's file);
// nullopt when it cannot be reached.
std::optional<FileStatus> path_status(const std::string& path);
// `path` made absolute with every link resolved, with its status, when that is a regular file;
// nullopt otherwise (absent, a directory, a device).
std::optional<std::pair<std::string, FileStatus>> resolved_regular_file(const std::string& path);

// A directory held open: every access below goes through its descriptor, relative to it, and
// never follows a symbolic link (O_NOFOLLOW), so renaming or replacing the path after it was
// opened and checked changes nothing for its holder. Names are single path components.
class Directory {
public:
    // `path` itself; its last component must not be a symbolic link. ErrorCode::not_found when
    // it does not exist (or, with `create`, after creating it with `mode` when its parent exists).
    static Result<Directory> open(const std::string& path, bool create, unsigned mode);
    Directory(Directory&& other) noexcept;
    Directory& operator=(Directory&& other) noexcept;
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;
    ~Directory();

    const std::string& path() const noexcept { return path_; }
    Result<FileStatus> status() const;
    // The child directory `name`, created with `mode` when missing and `create` is set.
    Result<Directory> child(const std::string& name, bool create, unsigned mode) const;
    // Reads the regular file `name` whole into private memory: its first prefix.size() bytes into
    // `prefix`, the rest into the returned vector (whose pages are populated in one call, not
    // faulted in one by one). `accept` sees the file's status first and may refuse it before a
    // byte is read; so is a file larger than `max_size` or shorter than the prefix. A link, a
    // FIFO, a device or a directory is refused (ErrorCode::invalid_argument, naming it) without
    // reading; an absent file is ErrorCode::not_found. The bytes are the file's first `size`
    // bytes as fstat gave it: a file truncated while it is read is an ErrorCode::io error.
    // `consume`, when given, sees the rest in the order read, each piece right after it arrived
    // (while it is still in the CPU's cache: one pass over the bytes for a checksum, not two).
    Result<std::pair<FileStatus, ByteVector>> read_file(const std::string& name, uint64_t max_size,
                                                                 const std::function<Result<void>(const FileStatus&)>& accept,
                                                                 std::span<std::byte> prefix = {},
                                                                 const std::function<void(Bytes)>& consume = {}) const;
    // Writes `parts` one after another to the new file `temporary` (mode 0600, never following a
    // link, failing if it exists), syncs it, renames it to `name` and syncs the directory. On
    // failure the temporary is removed and the error names the fix (a full disk: free space).
    Result<void> write_file_atomic(const std::string& name, const std::string& temporary, std::initializer_list<Bytes> parts) const;
    // Removes `name` (a file, never following a link); with `inode`, only if it is still that file.
    bool remove(const std::string& name, std::optional<uint64_t> inode = std::nullopt) const;
    // Sets `name`'s modification time to now (without following a link).
    void touch(const std::string& name) const;
    // The status of `name` without following a link; nullopt when absent.
    std::optional<FileStatus> status_of(const std::string& name) const;
    // The names in the directory (without "." and ".."), with their status, links not followed.
    Result<std::vector<std::pair<std::string, FileStatus>>> list() const;
    // An exclusive lock on the regular file `name` (created 0600 when missing), into which the
    // holder writes "pid N", and with `mark` when its work must end and what it is ("pid N until
    // T: linking ..."). Waits; after `warn_after_seconds` calls `waiting` once with who holds it
    // ("process 4242 (linking ..., its limit ends in 80 s)", "another thread of this process");
    // stops waiting (ErrorCode::io, naming the holder) after `give_up_seconds`, or sooner when the
    // holder is kLockGraceSeconds past the end its mark gave. The kernel drops it when the holder dies.
    Result<FileLock> lock(const std::string& name, double warn_after_seconds, double give_up_seconds,
                          const std::function<void(const std::string& holder)>& waiting, const LockMark& mark = {}) const;
    // The lock without waiting or creating: nullopt when someone holds it or the file is absent.
    std::optional<FileLock> try_lock(const std::string& name) const;

private:
    Directory(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    int fd_{-1};
    std::string path_;
};

// A child process run to completion under a wall-clock limit (run_child).
struct ChildRun {
    std::vector<std::string> argv;  // argv[0] is the program's path
    Bytes request;                  // what the child reads from descriptor 3
    double seconds{0};              // killed (SIGKILL) when it runs longer
    uint64_t memory{0};             // its memory limit where the parent sets it (Windows: the job object; POSIX: the child, child_limit)
    uint64_t max_reply{0};          // a reply longer than this is refused
    uint64_t max_stderr{64 * 1024}; // what is kept of its standard error (the rest is dropped)
};
struct ChildOutcome {
    bool timed_out{false};
    int exit_code{-1};              // when it exited
    int signal{0};                  // when a signal ended it (SIGKILL after timed_out)
    bool status_unknown{false};     // it ended, but a host reaping with __WALL took its status first
    double seconds{0};
    ByteVector reply;               // what it wrote to descriptor 4
    std::string standard_error;     // its first max_stderr bytes of standard error
    std::string how() const;        // "exited with status 3", "was killed by signal 11 (SIGSEGV)", ...
};
// How `signal` ended a child, in words: "was killed by signal 11 (SIGSEGV)"; on Windows, where it
// holds the exception code, "crashed with exception 0xC0000005 (access violation)".
std::string ended_by(int signal);
// Starts argv[0] with the request readable at descriptor 3 and an empty file at descriptor 4 for
// its reply, its standard input and output on /dev/null and its standard error captured; no other
// descriptor of this process reaches it (sdm opens everything close-on-exec, and the child closes
// the rest), the default disposition of every signal and an empty signal mask. argv[0] must pass
// check_program; what runs is the file that was checked (opened once, executed by descriptor).
// Waits for it to end, at most `seconds`, then kills it. The host's SIGCHLD disposition, its own
// reaping and its forks in other threads change none of this (platform_child.cpp says how).
// `started` (may be empty) is told its pid. An error only when it cannot be started; how it ended
// is the outcome's.
Result<ChildOutcome> run_child(const ChildRun& run, const std::function<void(int pid)>& started = {});

// ErrorCode::jit, naming `path` and what is wrong, unless the open file `fd` is a program sdm may
// run: a regular file, executable, owned by root or this user, not writable by group or others.
Result<void> check_program(int fd, const std::string& path);
// The child's side of run_child's status record, which says how it ended when the host took its
// exit status first (a host that reaps with __WALL, or one that ignores SIGCHLD): start() at the
// child's start records the fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU,
// SIGTRAP, SIGSYS: each then takes the action it had before), exit(code) records an exit with
// `code` and returns it. A child that writes none is said to have ended in an unknown way.
void child_status_record_start();
int child_status_record_exit(int code);

// The child's side of run_child, for the program it started (the JIT helper):
// - child_detach: closes every descriptor above 5 (a host may have opened files without
//   close-on-exec) and ends the child when its parent dies;
// - child_orphaned: whether its parent has died already (before child_detach took effect);
// - child_limit: no core file, an address space of `memory` bytes (not under a sanitizer, whose
//   shadow memory is terabytes of address space) and `seconds` of CPU time, rounded up, plus one;
// - child_request / child_reply: the request whole (nullopt when unreadable or empty) and the
//   reply (false when it could not be written).
void child_detach();
bool child_orphaned() noexcept;
void child_limit(uint64_t memory, double seconds);
std::optional<ByteVector> child_request();
bool child_reply(Bytes reply);

// Whether `path` exists (false when it does not), and if it does, check_program's answer.
Result<bool> program_present(const std::string& path);

// The absolute path of the folder holding the binary this code is linked into (libsdm, or a
// program), fixed when it was loaded: a library found through a relative LD_LIBRARY_PATH entry is
// resolved against the working directory of that moment, never a later one. nullopt when unknown.
const std::optional<std::string>& own_binary_folder();

// mkdir -p with `mode` for the directories it creates.
Result<void> make_directories(const std::string& path, unsigned mode);
// sdm's per-user folders when no setting names one: the kernel cache's and the rollback marks'.
// POSIX: $XDG_CACHE_HOME/sdm, else ~/.cache/sdm ($HOME, else the password database); and
// $XDG_STATE_HOME/sdm, else ~/.local/state/sdm. Windows: %LOCALAPPDATA%\sdm\cache and
// %LOCALAPPDATA%\sdm\state (else %USERPROFILE%\AppData\Local). nullopt when the environment
// names no such place; kUserFolderVariables names what it reads, for that error's message.
enum class UserFolder { cache, state };
std::optional<std::string> user_folder(UserFolder which);
extern const char* const kUserFolderVariables;

// How this system names and places a CUDA toolkit's shared library `stem` ("nvJitLink") of the
// major versions `majors` (newest first): its file names (Linux: libnvJitLink.so.13, ..., then
// libnvJitLink.so; Windows: nvJitLink_130_0.dll, ...), and the folders of a toolkit installed at
// `home` that hold them (Linux: lib64; Windows: bin\x64, then bin).
std::vector<std::string> toolkit_library_names(const std::string& stem, std::initializer_list<int> majors);
std::vector<std::string> toolkit_library_folders(const std::string& home);
// The folders the system's loader searches for a bare library name, in order, as far as sdm can
// tell (to name the file it would load): Linux, LD_LIBRARY_PATH's, then the system's library
// folders; Windows (LoadLibraryExW's default folders), the application's folder, then System32.
std::vector<std::string> loader_search_folders();
// Whether `name` is a path (it holds a folder separator) rather than a bare name for the loader.
bool names_a_path(const std::string& name) noexcept;

}  // namespace sdm::runtime::platform
