#include "platform.hpp"

#include "archive/file_map.hpp"
#include "common/text.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include <cerrno>
#include <climits>
#include <cmath>
#include <ctime>
#include <chrono>
#include <cstring>
#include <thread>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sdm::runtime::platform {

Result<Library> Library::open(const std::string& path, bool keep_loaded) {
    // A path must name a regular file: checked on the file opened without blocking (a FIFO would
    // block the loader, a device feed it endless bytes). Whoever could swap the file between this
    // check and dlopen could put any library there anyway: the check is against mistakes and
    // hostile paths, not a boundary against the path's owner. (Loading through /proc/self/fd/N
    // is no way round it: the loader matches libraries by that name, and N is reused.)
    if (path.find('/') != std::string::npos) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
        struct stat st {};
        const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        ::close(fd);
        if (!regular) {
            FileStatus status;
            status.mode = static_cast<uint32_t>(st.st_mode);
            return make_error(ErrorCode::invalid_argument, path + " is " + status.type() + ", not a regular file; sdm loads only regular files");
        }
    }
    dlerror();
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (keep_loaded ? RTLD_NODELETE : 0));
    if (handle == nullptr) {
        const char* why = dlerror();
        return make_error(ErrorCode::io, why != nullptr ? why : ("cannot load " + path));
    }
    Library lib;
    lib.handle_ = handle;
    lib.path_ = path;
    return lib;
}

void close_descriptor(int fd) noexcept { ::close(fd); }  // (closing a lock's descriptor releases the flock)

void unload_library(void* handle) noexcept { ::dlclose(handle); }

void* Library::symbol(const char* name) const noexcept { return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr; }

std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
}

Result<void> make_directories(const std::string& path, unsigned mode) {
    std::string partial;
    size_t at = 0;
    while (at != std::string::npos) {
        at = path.find('/', at + 1);
        partial = path.substr(0, at);
        if (partial.empty()) continue;
        if (::mkdir(partial.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
            return make_error(ErrorCode::io, "cannot create directory " + partial + ": " + std::strerror(errno));
    }
    return {};
}

uint32_t effective_user() noexcept { return static_cast<uint32_t>(::geteuid()); }

namespace {

FileStatus status_from(const struct stat& st) {
    FileStatus f;
    f.regular = S_ISREG(st.st_mode);
    f.directory = S_ISDIR(st.st_mode);
    f.owner = static_cast<uint32_t>(st.st_uid);
    f.mode = static_cast<uint32_t>(st.st_mode);  // type() reads the type bits; callers mask 07777
    f.size = static_cast<uint64_t>(st.st_size);
    f.inode = static_cast<uint64_t>(st.st_ino);
    f.device = static_cast<uint64_t>(st.st_dev);
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return f;
}

// Maps the pages of [data, data + size) in one call (MADV_POPULATE_WRITE, Linux 5.14) instead of
// one page fault each as they are first written: on a virtual machine a fault costs microseconds,
// which for a few megabytes is a millisecond. Where the kernel lacks it, the pages fault in as usual.
void populate(void* data, size_t size) {
#ifdef MADV_POPULATE_WRITE
    constexpr size_t kWorthIt = 64 * 1024;
    if (size < kWorthIt) return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(data) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(data) + size + page - 1) / page * page;
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
    (void)data;
    (void)size;
#endif
}

Error os_error(const std::string& what, int err, const std::string& fix = {}) {
    std::string message = what + ": " + std::strerror(err);
    if (err == ENOSPC || err == EDQUOT) message += fix.empty() ? "; free space on that file system" : "; " + fix;
    return make_error(ErrorCode::io, std::move(message));
}

}  // namespace

std::string FileStatus::type() const { return archive::file_type_name(mode); }

int process_id() noexcept { return static_cast<int>(::getpid()); }

std::optional<FileStatus> path_status(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return status_from(st);
}

std::optional<std::pair<std::string, FileStatus>> resolved_regular_file(const std::string& path) {
    char resolved[PATH_MAX];
    struct stat st {};
    if (::realpath(path.c_str(), resolved) == nullptr || ::stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return std::pair{std::string(resolved), status_from(st)};
}

std::optional<std::string> Library::file_of(const void* address) {
    Dl_info info{};
    if (address != nullptr && ::dladdr(address, &info) != 0 && info.dli_fname != nullptr) return std::string(info.dli_fname);
    return std::nullopt;
}

Result<Directory> Directory::open(const std::string& path, bool create, unsigned mode) {
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::open(path.c_str(), flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
            return os_error("cannot create directory " + path, errno);
        fd = ::open(path.c_str(), flags);
    }
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) return make_error(ErrorCode::not_found, "directory " + path + " does not exist");
        struct stat st {};
        if ((err == ELOOP || err == ENOTDIR) && ::lstat(path.c_str(), &st) == 0)
            return make_error(ErrorCode::invalid_argument, path + " is " + status_from(st).type() + ", not a directory; sdm does not follow links here");
        return os_error("cannot open directory " + path, err);
    }
    return Directory(fd, path);
}

Result<FileStatus> Directory::status() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return os_error("cannot stat " + path_, errno);
    return status_from(st);
}

Result<Directory> Directory::child(const std::string& name, bool create, unsigned mode) const {
    const std::string path = path_ + "/" + name;
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(fd_, name.c_str(), flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (::mkdirat(fd_, name.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
            return os_error("cannot create directory " + path, errno);
        fd = ::openat(fd_, name.c_str(), flags);
    }
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) return make_error(ErrorCode::not_found, "directory " + path + " does not exist");
        if (const auto st = status_of(name); st && (err == ELOOP || err == ENOTDIR))
            return make_error(ErrorCode::invalid_argument, path + " is " + st->type() + ", not a directory; remove it");
        return os_error("cannot open directory " + path, err);
    }
    return Directory(fd, path);
}

Result<std::pair<FileStatus, ByteVector>> Directory::read_file(const std::string& name, uint64_t max_size,
                                                                        const std::function<Result<void>(const FileStatus&)>& accept,
                                                                        std::span<std::byte> prefix,
                                                                        const std::function<void(Bytes)>& consume) const {
    const std::string path = path_ + "/" + name;
    const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) return make_error(ErrorCode::not_found, path + " does not exist");
        if (err == ELOOP) return make_error(ErrorCode::invalid_argument, path + " is a symbolic link; sdm does not follow links here");
        return os_error("cannot open " + path, err);
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return os_error("cannot stat " + path, errno);
    const FileStatus status = status_from(st);
    SDM_TRY(check_whole_read(path, status, max_size, prefix.size()));
    if (accept) SDM_TRY(accept(status));
    constexpr size_t kPiece = 256 * 1024;  // what `consume` sees at a time: well within a core's L2
    const auto read_at = [&](std::byte* into, size_t size, uint64_t offset, bool pieces) -> Result<void> {
        size_t used = 0;
        while (used < size) {
            const size_t want = pieces && consume ? std::min(kPiece, size - used) : size - used;
            const ssize_t n = ::pread(fd, into + used, want, static_cast<off_t>(offset + used));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return os_error("cannot read " + path, errno);
            if (n == 0)
                return make_error(ErrorCode::io, path + " was cut short while it was read (" + std::to_string(status.size) + " bytes, then " +
                                                     std::to_string(offset + used) + ")");
            if (pieces && consume) consume({into + used, static_cast<size_t>(n)});
            used += static_cast<size_t>(n);
        }
        return {};
    };
    SDM_TRY(read_at(prefix.data(), prefix.size(), 0, false));
    ByteVector bytes;
    const size_t rest = static_cast<size_t>(status.size) - prefix.size();
    try {
        bytes.reserve(rest);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(rest) + " bytes to read " + path);
    }
    populate(bytes.data(), rest);
    bytes.resize(rest);
    SDM_TRY(read_at(bytes.data(), rest, prefix.size(), true));
    return std::pair(status, std::move(bytes));
}

Result<void> Directory::write_file_atomic(const std::string& name, const std::string& temporary, std::initializer_list<Bytes> parts) const {
    const std::string tmp_path = path_ + "/" + temporary;
    const int fd = ::openat(fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return os_error("cannot create " + tmp_path, errno);
    const auto fail = [&](const std::string& what, int err) {
        ::close(fd);
        ::unlinkat(fd_, temporary.c_str(), 0);
        return os_error(what, err, "free space in " + path_);
    };
    for (const Bytes part : parts) {
        size_t done = 0;
        while (done < part.size()) {
            const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail("cannot write " + tmp_path, errno);
            done += static_cast<size_t>(n);
        }
    }
    if (::fsync(fd) != 0) return fail("cannot sync " + tmp_path, errno);
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlinkat(fd_, temporary.c_str(), 0);
        return os_error("cannot close " + tmp_path, err, "free space in " + path_);
    }
    if (::renameat(fd_, temporary.c_str(), fd_, name.c_str()) != 0) {
        const int err = errno;
        ::unlinkat(fd_, temporary.c_str(), 0);
        return os_error("cannot rename " + tmp_path + " into place", err);
    }
    ::fsync(fd_);
    return {};
}

bool Directory::remove(const std::string& name, std::optional<uint64_t> inode) const {
    if (inode) {
        const auto st = status_of(name);
        if (!st || st->inode != *inode) return false;
    }
    return ::unlinkat(fd_, name.c_str(), 0) == 0;
}

void Directory::touch(const std::string& name) const { ::utimensat(fd_, name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW); }

std::optional<FileStatus> Directory::status_of(const std::string& name) const {
    struct stat st {};
    if (::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
    return status_from(st);
}

Result<std::vector<std::pair<std::string, FileStatus>>> Directory::list() const {
    const int fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // fdopendir takes over its own descriptor
    if (fd < 0) return os_error("cannot list " + path_, errno);
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
        const int err = errno;
        ::close(fd);
        return os_error("cannot list " + path_, err);
    }
    std::vector<std::pair<std::string, FileStatus>> out;
    errno = 0;
    while (const dirent* d = ::readdir(dir)) {
        const std::string name = d->d_name;
        if (name == "." || name == "..") continue;
        if (const auto st = status_of(name)) out.emplace_back(name, *st);
    }
    ::closedir(dir);
    return out;
}

namespace {

LockHolder lock_holder(int fd) {
    char text[256] = {0};
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    return parse_lock_mark(std::string_view(text, n > 0 ? static_cast<size_t>(n) : 0), process_id(), static_cast<int64_t>(::time(nullptr)));
}

}  // namespace

Result<FileLock> Directory::lock(const std::string& name, double warn_after_seconds, double give_up_seconds,
                                 const std::function<void(const std::string& holder)>& waiting, const LockMark& mark) const {
    const std::string path = path_ + "/" + name;
    const int fd = ::openat(fd_, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0) {
        const int err = errno;
        if (const auto st = status_of(name); st && !st->regular)
            return make_error(ErrorCode::io, "lock file " + path + " is " + st->type() + "; remove it");
        return os_error("cannot open lock file " + path, err, "free space in " + path_);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(ErrorCode::io, "lock file " + path + " is not a regular file; remove it");
    }
    const auto taken = wait_for_lock(path, warn_after_seconds, give_up_seconds, waiting, [&]() -> Result<bool> {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
        if (errno == EWOULDBLOCK || errno == EINTR) return false;
        return os_error("cannot lock " + path, errno);
    }, [&] { return lock_holder(fd); });
    if (!taken) {
        ::close(fd);
        return taken.error();
    }
    // Who holds it and for how long at most, for whoever waits: best effort (a full disk leaves it
    // empty, and a waiter then says "another process or thread").
    const std::string text = lock_mark_text(mark, process_id(), static_cast<int64_t>(::time(nullptr)));
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) < 0) {
        // nothing to do: see above
    }
    return FileLock(fd);
}

std::optional<FileLock> Directory::try_lock(const std::string& name) const {
    const int fd = ::openat(fd_, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return FileLock(fd);
    ::close(fd);
    return std::nullopt;
}

namespace {

std::optional<std::string> home_directory() {
    if (auto home = env("HOME")) return home;
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir != nullptr) return std::string(pw->pw_dir);
    return std::nullopt;
}

}  // namespace

const char* const kUserFolderVariables = "HOME, XDG_CACHE_HOME or XDG_STATE_HOME";

std::optional<std::string> user_folder(UserFolder which) {
    const bool cache = which == UserFolder::cache;
    if (const auto xdg = env(cache ? "XDG_CACHE_HOME" : "XDG_STATE_HOME")) return *xdg + "/sdm";
    if (const auto home = home_directory()) return *home + (cache ? "/.cache/sdm" : "/.local/state/sdm");
    return std::nullopt;
}

namespace {

// The file mapped at this code's address, as the kernel names it (/proc/self/maps: an absolute
// path whatever the loader was given), else dladdr's name made absolute now.
std::optional<std::string> find_own_folder() {
    const auto address = reinterpret_cast<uintptr_t>(&find_own_folder);
    std::optional<std::string> file;
    if (FILE* maps = std::fopen("/proc/self/maps", "re")) {
        // "START-END PERMS OFFSET DEV INODE   PATH": the range read by hand (sscanf over every
        // line of a large process's map cost a fresh process tens of microseconds), the path
        // only of the line that holds this code.
        char line[4096 + 256];
        while (!file && std::fgets(line, sizeof line, maps) != nullptr) {
            char* at = line;
            const unsigned long long start = std::strtoull(at, &at, 16);
            if (*at != '-') continue;
            const unsigned long long end = std::strtoull(at + 1, &at, 16);
            if (address < start || address >= end) continue;
            char* path = std::strchr(at, '/');
            if (path == nullptr) continue;
            std::string found(path);
            while (!found.empty() && found.back() == '\n') found.pop_back();
            file = std::move(found);
        }
        std::fclose(maps);
    }
    Dl_info self{};
    if (!file && ::dladdr(reinterpret_cast<void*>(&find_own_folder), &self) != 0 && self.dli_fname != nullptr) {
        if (char* real = ::realpath(self.dli_fname, nullptr)) {
            file = real;
            std::free(real);
        }
    }
    if (!file || file->find('/') == std::string::npos) return std::nullopt;
    return file->substr(0, file->rfind('/'));
}

// Fixed when the binary is loaded (static initialization runs then), before a host can chdir.
const std::optional<std::string> own_folder = find_own_folder();

}  // namespace

const std::optional<std::string>& own_binary_folder() { return own_folder; }

std::vector<std::string> toolkit_library_names(const std::string& stem, std::initializer_list<int> majors) {
    std::vector<std::string> names;
    for (const int major : majors) names.push_back("lib" + stem + ".so." + std::to_string(major));
    names.push_back("lib" + stem + ".so");
    return names;
}

std::vector<std::string> toolkit_library_folders(const std::string& home) { return {home + "/lib64"}; }

std::vector<std::string> loader_search_folders() {
    std::vector<std::string> folders = env_list("LD_LIBRARY_PATH");
    for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"}) folders.emplace_back(d);
    return folders;
}

bool names_a_path(const std::string& name) noexcept { return name.find('/') != std::string::npos; }

}  // namespace sdm::runtime::platform
