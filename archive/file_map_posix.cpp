// file_map.hpp on POSIX systems: open(2) without blocking, fstat, mmap or read.
#include "file_map.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sdm::archive {
namespace {

Error os_error(const std::string& what, const std::string& path, int err) {
    return make_error(ErrorCode::io, what + " " + path + ": " + std::strerror(err));
}

struct Fd {
    int fd{-1};
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

Result<std::shared_ptr<const FileMap>> FileMap::open(const std::string& path, FileMapOptions options) {
    // Non-blocking, so that opening a FIFO returns at once instead of waiting for a writer; the
    // type is then checked on the descriptor itself, and only a regular file is read.
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (options.no_follow ? O_NOFOLLOW : 0))};
    if (f.fd < 0) {
        if (errno == ELOOP && options.no_follow) return make_error(ErrorCode::invalid_argument, path + " is a symbolic link; sdm does not follow it here");
        return os_error("cannot open", path, errno);
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) return os_error("cannot stat", path, errno);
    if (!S_ISREG(st.st_mode))
        return make_error(ErrorCode::invalid_argument, path + " is " + file_type_name(st.st_mode) + ", not a regular file; sdm reads only regular files");
    std::shared_ptr<FileMap> map(new FileMap());
    map->path_ = path;
    map->device_ = static_cast<uint64_t>(st.st_dev);
    map->inode_ = static_cast<uint64_t>(st.st_ino);
    map->mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    map->owner_ = static_cast<uint32_t>(st.st_uid);
    map->mode_ = static_cast<uint32_t>(st.st_mode & 07777);
    const auto size = static_cast<uint64_t>(st.st_size);
    if (options.max_size != 0 && size > options.max_size)
        return make_error(ErrorCode::invalid_argument, path + " is " + std::to_string(size) + " bytes, more than the " +
                                                           std::to_string(options.max_size) + " it may hold");
    if (size > 0 && size >= options.read_below && !options.private_copy) {
        void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE | (options.populate ? MAP_POPULATE : 0), f.fd, 0);
        if (p != MAP_FAILED) {
            map->data_ = p;
            map->size_ = static_cast<size_t>(size);
            map->mapped_ = true;
            return std::shared_ptr<const FileMap>(std::move(map));
        }
    }
    // Small, asked for a private copy, or not mappable: read it, straight into the buffer.
    SDM_TRY(map->read_whole(size, [&](std::byte* into, size_t want) -> Result<size_t> {
        for (;;) {
            const ssize_t n = ::read(f.fd, into, want);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return os_error("cannot read", path, errno);
            return static_cast<size_t>(n);
        }
    }));
    return std::shared_ptr<const FileMap>(std::move(map));
}

FileMap::~FileMap() {
    if (mapped_) ::munmap(data_, size_);
}

Result<void> write_file_atomic(const std::string& path, Bytes bytes) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    std::string tmp = path + ".tmp.XXXXXX";
    Fd f{::mkstemp(tmp.data())};
    if (f.fd < 0) return os_error("cannot create a temporary file for", path, errno);
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::unlink(tmp.c_str());
            return os_error("cannot write", tmp, err);
        }
        done += static_cast<size_t>(n);
    }
    if (::fchmod(f.fd, 0644) != 0 || ::fsync(f.fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return os_error("cannot sync", tmp, err);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return os_error("cannot rename into place", path, err);
    }
    Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (d.fd >= 0) ::fsync(d.fd);
    return {};
}

}  // namespace sdm::archive
