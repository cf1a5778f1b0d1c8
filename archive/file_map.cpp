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
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) return os_error("cannot open", path, errno);
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) return os_error("cannot stat", path, errno);
    std::shared_ptr<FileMap> map(new FileMap());
    map->path_ = path;
    map->device_ = static_cast<uint64_t>(st.st_dev);
    map->inode_ = static_cast<uint64_t>(st.st_ino);
    map->mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (S_ISDIR(st.st_mode)) return make_error(ErrorCode::invalid_argument, path + " is a directory, not an archive file");
    const bool small = S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) < options.read_below;
    if (S_ISREG(st.st_mode) && st.st_size > 0 && !small) {
        void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | (options.populate ? MAP_POPULATE : 0), f.fd, 0);
        if (p != MAP_FAILED) {
            map->data_ = p;
            map->size_ = static_cast<size_t>(st.st_size);
            map->mapped_ = true;
            return std::shared_ptr<const FileMap>(std::move(map));
        }
    }
    // Small, or not mappable (empty, a pipe, or mmap refused): read it, straight into the buffer.
    // A regular file's size is known: one read, and one more that sees the end.
    size_t used = 0;
    map->owned_.resize(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : 65536);
    for (;;) {
        if (used == map->owned_.size()) map->owned_.resize(used * 2);
        const ssize_t n = ::read(f.fd, map->owned_.data() + used, map->owned_.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return os_error("cannot read", path, errno);
        if (n == 0) break;
        used += static_cast<size_t>(n);
    }
    map->owned_.resize(used);
    map->data_ = map->owned_.data();
    map->size_ = map->owned_.size();
    return std::shared_ptr<const FileMap>(std::move(map));
}

FileMap::~FileMap() {
    if (mapped_) ::munmap(data_, size_);
}

Result<ByteVector> read_file(const std::string& path) {
    auto map = FileMap::open(path);
    if (!map) return std::move(map).error();
    const Bytes b = (*map)->bytes();
    return ByteVector(b.begin(), b.end());
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
