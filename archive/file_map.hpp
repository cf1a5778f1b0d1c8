// A read-only view of a whole regular file: mmapped where the platform allows, read into memory
// otherwise (small files, a file system without mmap). Anything but a regular file (a directory,
// a FIFO, a device such as /dev/zero, a socket) is refused with a message naming what it is,
// without blocking and without reading from it. The archive layer's only platform code:
// file_map_posix.cpp and file_map_windows.cpp (CreateFileMapping), over file_map.cpp's portable part.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::archive {

inline constexpr size_t kWindowsMapFrom = size_t{64} << 20;

struct FileMapOptions {
    // Files smaller than this are read into memory instead of mapped: for a few pages, open + read
    // is cheaper than mmap, the page faults and the munmap (with its TLB flush) at release. On
    // Windows, files below kWindowsMapFrom are read whatever this says: a view keeps Windows from
    // replacing the file, and a host drops a new archive over a mounted one by rename, as on POSIX.
    size_t read_below{0};
    // Maps every page at once (MAP_POPULATE) for a file that will be read whole right away: one
    // call instead of a page fault per 64 KiB.
    bool populate{false};
    // Reads the file into private memory whatever its size: the bytes cannot change after they
    // were checked, and another process truncating the file cannot fault the reader (SIGBUS).
    bool private_copy{false};
    // Refuses a path that is a symbolic link (O_NOFOLLOW).
    bool no_follow{false};
    // Refuses a file larger than this (0: no limit) before reading any of it.
    uint64_t max_size{0};
};

class FileMap {
public:
    static Result<std::shared_ptr<const FileMap>> open(const std::string& path, FileMapOptions options = {});
    ~FileMap();
    FileMap(const FileMap&) = delete;
    FileMap& operator=(const FileMap&) = delete;

    Bytes bytes() const noexcept { return {static_cast<const std::byte*>(data_), size_}; }
    const std::string& path() const noexcept { return path_; }
    bool mapped() const noexcept { return mapped_; }
    // Identity of the file at open time (device, inode, size, mtime) for change detection.
    uint64_t device() const noexcept { return device_; }
    uint64_t inode() const noexcept { return inode_; }
    int64_t mtime_ns() const noexcept { return mtime_ns_; }
    uint32_t owner() const noexcept { return owner_; }  // st_uid
    uint32_t mode() const noexcept { return mode_; }    // permission bits

private:
    FileMap() = default;
    // Reads the file's `size` bytes into owned_ through `read` (bytes read; 0 at the end), refusing
    // a file that grew; data_ and size_ then point at them.
    Result<void> read_whole(uint64_t size, const std::function<Result<size_t>(std::byte* into, size_t want)>& read);
    std::string path_;
    void* data_{nullptr};
    size_t size_{0};
    bool mapped_{false};
    ByteVector owned_;
    uint64_t device_{0}, inode_{0};
    int64_t mtime_ns_{0};
    uint32_t owner_{0}, mode_{0};
};

// What a stat mode says a file is, for messages: "a regular file", "a directory", "a FIFO (named
// pipe)", "a character device", "a block device", "a socket", "a symbolic link".
std::string file_type_name(uint32_t mode);

// Writes `bytes` to `path` atomically: a temporary file beside it, fsync, rename, fsync of the directory.
Result<void> write_file_atomic(const std::string& path, Bytes bytes);
Result<ByteVector> read_file(const std::string& path);

}  // namespace sdm::archive
