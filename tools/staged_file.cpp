#include "staged_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sdm::tools {
namespace {

std::string directory_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

Error os_error(const std::string& what) { return make_error(ErrorCode::io, what + ": " + std::strerror(errno)); }

}  // namespace

Result<StagedFile> StagedFile::create(const std::string& target) {
    const std::string directory = directory_of(target);
    struct stat st{};
    if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return make_error(ErrorCode::io, "directory " + directory + " (of " + target + ") does not exist: create it first");
    if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return make_error(ErrorCode::io, target + " exists and is not a regular file: sdm replaces only regular files");
    const size_t slash = target.rfind('/');
    std::string name = directory + "/." + (slash == std::string::npos ? target : target.substr(slash + 1)) + ".partial-XXXXXX";
    // mkstemp: O_CREAT | O_EXCL, mode 0600.
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) return os_error("cannot create a temporary file in " + directory);
    return StagedFile(target, name, fd);
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : target_(std::move(other.target_)), path_(std::move(other.path_)), fd_(other.fd_), committed_(other.committed_) {
    other.fd_ = -1;
    other.committed_ = true;
}

StagedFile::~StagedFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
}

Result<void> StagedFile::write(Bytes bytes) {
    const auto* p = reinterpret_cast<const char*>(bytes.data());
    for (size_t left = bytes.size(); left > 0;) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return os_error("writing " + path_);
        p += n;
        left -= static_cast<size_t>(n);
    }
    return {};
}

Result<void> StagedFile::sync() {
    if (::fsync(fd_) != 0) return os_error("fsync " + path_);
    return {};
}

Result<void> StagedFile::commit() {
    // Owner-only while staged; readable as any installed archive once whole and checked.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd_, 0644 & ~mask) != 0) return os_error("chmod " + path_);
    SDM_TRY(sync());
    if (::rename(path_.c_str(), target_.c_str()) != 0) return os_error("rename " + path_ + " to " + target_);
    committed_ = true;
    const std::string directory = directory_of(target_);
    const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return os_error("open " + directory);
    const int synced = ::fsync(dir);
    ::close(dir);
    if (synced != 0) return os_error("fsync " + directory);
    return {};
}

}  // namespace sdm::tools
