// file_map.hpp on Windows: CreateFileW (never following a reparse point when asked), the type
// checked on the handle, then a read-only view (CreateFileMappingW, MapViewOfFile) or a read into
// memory. Paths are UTF-8, turned into UTF-16 for the wide-character calls.
#include "file_map.hpp"

#include <algorithm>
#include <utility>

#include <windows.h>

#include "common/windows_text.hpp"

namespace sdm::archive {
namespace {

Error os_error(const std::string& what, const std::string& path, DWORD err) {
    return make_error(ErrorCode::io, what + " " + path + ": " + system_message(err));
}

struct Handle {
    HANDLE h{INVALID_HANDLE_VALUE};
    ~Handle() {
        if (h != INVALID_HANDLE_VALUE && h != nullptr) ::CloseHandle(h);
    }
};

constexpr uint32_t kCharacter = 0020000, kFifo = 0010000;  // file_type_name's bits

}  // namespace

Result<std::shared_ptr<const FileMap>> FileMap::open(const std::string& path, FileMapOptions options) {
    const std::wstring name = wide(path);
    if (name.empty()) return make_error(ErrorCode::invalid_argument, "cannot open " + path + ": not a valid UTF-8 path");
    // FILE_FLAG_OPEN_REPARSE_POINT opens a link itself (then refused below) instead of its target.
    Handle f{::CreateFileW(name.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                           FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS | (options.no_follow ? FILE_FLAG_OPEN_REPARSE_POINT : 0), nullptr)};
    if (f.h == INVALID_HANDLE_VALUE) return os_error("cannot open", path, ::GetLastError());
    BY_HANDLE_FILE_INFORMATION info{};
    if (::GetFileType(f.h) != FILE_TYPE_DISK)
        return make_error(ErrorCode::invalid_argument, path + " is " + file_type_name(::GetFileType(f.h) == FILE_TYPE_PIPE ? kFifo : kCharacter) +
                                                           ", not a regular file; sdm reads only regular files");
    if (!::GetFileInformationByHandle(f.h, &info)) return os_error("cannot stat", path, ::GetLastError());
    if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return make_error(ErrorCode::invalid_argument, path + " is a symbolic link; sdm does not follow it here");
    if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        return make_error(ErrorCode::invalid_argument, path + " is a directory, not a regular file; sdm reads only regular files");
    std::shared_ptr<FileMap> map(new FileMap());
    map->path_ = path;
    map->device_ = info.dwVolumeSerialNumber;
    map->inode_ = (uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow;
    const uint64_t written = (uint64_t{info.ftLastWriteTime.dwHighDateTime} << 32) | info.ftLastWriteTime.dwLowDateTime;
    map->mtime_ns_ = static_cast<int64_t>(written) * 100;  // 100 ns ticks (since 1601: an identity, not a date)
    map->owner_ = 0;                                       // Windows has ACLs, not a uid and mode bits
    map->mode_ = 0644;
    const uint64_t size = (uint64_t{info.nFileSizeHigh} << 32) | info.nFileSizeLow;
    if (options.max_size != 0 && size > options.max_size)
        return make_error(ErrorCode::invalid_argument, path + " is " + std::to_string(size) + " bytes, more than the " +
                                                           std::to_string(options.max_size) + " it may hold");
    // (A mapped file cannot be replaced or deleted while the view lives: below kWindowsMapFrom it is
    // read, so that a new version can be renamed over a mounted one.)
    if (size > 0 && size >= std::max(options.read_below, kWindowsMapFrom) && !options.private_copy) {
        Handle mapping{::CreateFileMappingW(f.h, nullptr, PAGE_READONLY, 0, 0, nullptr)};
        if (mapping.h != nullptr) {
            if (void* p = ::MapViewOfFile(mapping.h, FILE_MAP_READ, 0, 0, 0); p != nullptr) {
                map->data_ = p;
                map->size_ = static_cast<size_t>(size);
                map->mapped_ = true;
                return std::shared_ptr<const FileMap>(std::move(map));
            }
        }
    }
    // Small, asked for a private copy, or not mappable: read it into memory.
    SDM_TRY(map->read_whole(size, [&](std::byte* into, size_t want) -> Result<size_t> {
        DWORD n = 0;
        if (!::ReadFile(f.h, into, static_cast<DWORD>(std::min<size_t>(want, 1u << 30)), &n, nullptr)) return os_error("cannot read", path, ::GetLastError());
        return static_cast<size_t>(n);
    }));
    return std::shared_ptr<const FileMap>(std::move(map));
}

FileMap::~FileMap() {
    if (mapped_) ::UnmapViewOfFile(data_);
}

Result<void> write_file_atomic(const std::string& path, Bytes bytes) {
    const std::string tmp = path + ".tmp." + std::to_string(::GetCurrentProcessId()) + "." + std::to_string(::GetTickCount64());
    const std::wstring wtmp = wide(tmp), wpath = wide(path);
    if (wtmp.empty() || wpath.empty()) return make_error(ErrorCode::invalid_argument, "cannot write " + path + ": not a valid UTF-8 path");
    {
        Handle f{::CreateFileW(wtmp.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr)};
        if (f.h == INVALID_HANDLE_VALUE) return os_error("cannot create a temporary file for", path, ::GetLastError());
        size_t done = 0;
        while (done < bytes.size()) {
            DWORD n = 0;
            const DWORD want = static_cast<DWORD>(std::min<size_t>(bytes.size() - done, 1u << 30));
            if (!::WriteFile(f.h, bytes.data() + done, want, &n, nullptr)) {
                const DWORD err = ::GetLastError();
                ::CloseHandle(std::exchange(f.h, INVALID_HANDLE_VALUE));
                ::DeleteFileW(wtmp.c_str());
                return os_error("cannot write", tmp, err);
            }
            done += n;
        }
        if (!::FlushFileBuffers(f.h)) {
            const DWORD err = ::GetLastError();
            ::CloseHandle(std::exchange(f.h, INVALID_HANDLE_VALUE));
            ::DeleteFileW(wtmp.c_str());
            return os_error("cannot sync", tmp, err);
        }
    }
    if (!::MoveFileExW(wtmp.c_str(), wpath.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
        const DWORD err = ::GetLastError();
        ::DeleteFileW(wtmp.c_str());
        return os_error("cannot rename into place", path, err);
    }
    return {};
}

}  // namespace sdm::archive
