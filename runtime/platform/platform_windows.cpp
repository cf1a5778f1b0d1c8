// platform.hpp on Windows (docs/WINDOWS.md): libraries by LoadLibraryExW with a search order that
// leaves out the working directory and PATH, UTF-8 paths turned into UTF-16, directories held by a
// handle and everything below them opened relative to it (NtCreateFile's RootDirectory) without
// following a reparse point, byte-range locks (LockFileEx) the system drops with the holder, and
// directories created with an owner-only ACL. A descriptor of platform.hpp (Directory, FileLock) is
// a C runtime descriptor wrapping the handle (_open_osfhandle). Windows has no uid or mode bits:
// FileStatus says owner 0 (effective_user() is 0 too) and mode 0600 or 0700, and the owner-only ACL
// sdm sets on what it creates stands in for the POSIX checks.
#include "platform.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include <windows.h>
#include <winternl.h>
#include <io.h>
#include <sddl.h>

#include "archive/file_map.hpp"
#include "common/windows_text.hpp"

namespace sdm::runtime::platform {

namespace {

Error os_error(const std::string& what, DWORD err, const std::string& fix = {}) {
    const bool full = err == ERROR_DISK_FULL || err == ERROR_HANDLE_DISK_FULL;
    return make_error(ErrorCode::io, what + ": " + system_message(err) + (full && !fix.empty() ? "; " + fix : std::string()));
}

HANDLE handle_of(int fd) { return reinterpret_cast<HANDLE>(::_get_osfhandle(fd)); }

// A handle made a C runtime descriptor (closing the descriptor closes the handle); -1 on failure,
// the handle then closed.
int descriptor_of(HANDLE h) {
    const int fd = ::_open_osfhandle(reinterpret_cast<intptr_t>(h), 0);
    if (fd < 0) ::CloseHandle(h);
    return fd;
}

struct Handle {
    HANDLE h{INVALID_HANDLE_VALUE};
    Handle() = default;
    explicit Handle(HANDLE handle) : h(handle) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
        if (h != INVALID_HANDLE_VALUE && h != nullptr) ::CloseHandle(h);
    }
    HANDLE release() { return std::exchange(h, INVALID_HANDLE_VALUE); }
    explicit operator bool() const { return h != INVALID_HANDLE_VALUE && h != nullptr; }
};

constexpr uint32_t kRegularBits = 0100000, kDirectoryBits = 0040000, kLinkBits = 0120000;

int64_t ticks_ns(const FILETIME& t) { return static_cast<int64_t>((uint64_t{t.dwHighDateTime} << 32) | t.dwLowDateTime) * 100; }

FileStatus status_from(const BY_HANDLE_FILE_INFORMATION& info) {
    FileStatus f;
    const bool link = (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0;
    f.directory = !link && (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
    f.regular = !link && !f.directory;
    f.owner = 0;
    f.mode = (link ? kLinkBits : f.directory ? kDirectoryBits | 0700 : kRegularBits | 0600);
    f.size = (uint64_t{info.nFileSizeHigh} << 32) | info.nFileSizeLow;
    f.inode = (uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow;
    f.device = info.dwVolumeSerialNumber;
    f.mtime_ns = ticks_ns(info.ftLastWriteTime);
    return f;
}

std::optional<FileStatus> status_of_handle(HANDLE h) {
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(h, &info)) return std::nullopt;
    return status_from(info);
}

// An owner-only security descriptor (a protected DACL granting full access to the owner, inherited
// by what is created below): what sdm creates, nobody else may read or replace.
struct OwnerOnly {
    PSECURITY_DESCRIPTOR descriptor{nullptr};
    SECURITY_ATTRIBUTES attributes{sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE};
    OwnerOnly() {
        if (::ConvertStringSecurityDescriptorToSecurityDescriptorW(L"D:P(A;OICI;FA;;;OW)(A;OICI;FA;;;SY)", SDDL_REVISION_1, &descriptor, nullptr))
            attributes.lpSecurityDescriptor = descriptor;
    }
    ~OwnerOnly() {
        if (descriptor != nullptr) ::LocalFree(descriptor);
    }
};

// A single path component: no separator, no stream (':'), not "." or "..".
bool plain_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find_first_of("/\\:") == std::string::npos;
}

#ifndef FILE_OPEN_REPARSE_POINT
#define FILE_OPEN_REPARSE_POINT 0x00200000
#endif
#ifndef FILE_OPEN
#define FILE_OPEN 0x00000001
#define FILE_CREATE 0x00000002
#define FILE_OPEN_IF 0x00000003
#endif
#ifndef FILE_DIRECTORY_FILE
#define FILE_DIRECTORY_FILE 0x00000001
#define FILE_NON_DIRECTORY_FILE 0x00000040
#define FILE_SYNCHRONOUS_IO_NONALERT 0x00000020
#endif

// `name` opened relative to the directory `dir`, a reparse point opened as itself (never
// followed). `error` gets the Win32 error on failure.
HANDLE open_at(HANDLE dir, const std::string& name, ACCESS_MASK access, ULONG disposition, ULONG options, DWORD& error,
               PSECURITY_DESCRIPTOR security = nullptr) {
    if (!plain_name(name)) {
        error = ERROR_INVALID_NAME;
        return INVALID_HANDLE_VALUE;
    }
    std::wstring wname = wide(name);
    if (wname.empty()) {
        error = ERROR_NO_UNICODE_TRANSLATION;
        return INVALID_HANDLE_VALUE;
    }
    UNICODE_STRING uname;
    uname.Buffer = wname.data();
    uname.Length = static_cast<USHORT>(wname.size() * sizeof(wchar_t));
    uname.MaximumLength = uname.Length;
    OBJECT_ATTRIBUTES attributes{};
    attributes.Length = sizeof attributes;
    attributes.RootDirectory = dir;
    attributes.ObjectName = &uname;
    attributes.Attributes = OBJ_CASE_INSENSITIVE;
    attributes.SecurityDescriptor = security;
    IO_STATUS_BLOCK io{};
    HANDLE h = INVALID_HANDLE_VALUE;
    const NTSTATUS status = ::NtCreateFile(&h, access | SYNCHRONIZE, &attributes, &io, nullptr, FILE_ATTRIBUTE_NORMAL,
                                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, disposition,
                                           options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT, nullptr, 0);
    if (status < 0) {
        error = ::RtlNtStatusToDosError(status);
        return INVALID_HANDLE_VALUE;
    }
    return h;
}

bool missing(DWORD err) { return err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND; }

Result<void> read_at(HANDLE h, std::byte* into, size_t size, uint64_t offset, const std::string& path, uint64_t expected,
                     const std::function<void(Bytes)>* consume) {
    constexpr size_t kPiece = 256 * 1024;
    size_t used = 0;
    while (used < size) {
        const size_t want = consume != nullptr && *consume ? std::min(kPiece, size - used) : std::min<size_t>(size - used, 1u << 30);
        OVERLAPPED at{};
        at.Offset = static_cast<DWORD>(offset + used);
        at.OffsetHigh = static_cast<DWORD>((offset + used) >> 32);
        DWORD n = 0;
        if (!::ReadFile(h, into + used, static_cast<DWORD>(want), &n, &at) && ::GetLastError() != ERROR_HANDLE_EOF)
            return os_error("cannot read " + path, ::GetLastError());
        if (n == 0)
            return make_error(ErrorCode::io, path + " was cut short while it was read (" + std::to_string(expected) + " bytes, then " +
                                                 std::to_string(offset + used) + ")");
        if (consume != nullptr && *consume) (*consume)({into + used, static_cast<size_t>(n)});
        used += n;
    }
    return {};
}

bool delete_by_handle(HANDLE h) {
    FILE_DISPOSITION_INFO disposition{TRUE};
    return ::SetFileInformationByHandle(h, FileDispositionInfo, &disposition, sizeof disposition) != 0;
}

}  // namespace

// ---- libraries --------------------------------------------------------------------------------

Result<Library> Library::open(const std::string& path, bool keep_loaded) {
    std::wstring name = wide(path);
    if (name.empty()) return make_error(ErrorCode::invalid_argument, "cannot load " + path + ": not a valid UTF-8 name");
    DWORD flags = LOAD_LIBRARY_SEARCH_DEFAULT_DIRS;  // the application's folder, System32, added folders: never the working directory or PATH
    if (path.find_first_of("/\\") != std::string::npos) {
        // A path: made absolute, and a regular file (a device or a pipe would hang the loader).
        wchar_t full[MAX_PATH * 4];
        const DWORD n = ::GetFullPathNameW(name.c_str(), static_cast<DWORD>(std::size(full)), full, nullptr);
        if (n == 0 || n >= std::size(full)) return make_error(ErrorCode::invalid_argument, "cannot load " + path + ": the path is too long");
        name.assign(full, n);
        Handle f{::CreateFileW(name.c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                               FILE_FLAG_BACKUP_SEMANTICS, nullptr)};
        if (!f) return os_error("cannot open " + path, ::GetLastError());
        const auto st = status_of_handle(f.h);
        if (::GetFileType(f.h) != FILE_TYPE_DISK || !st || !st->regular)
            return make_error(ErrorCode::invalid_argument, path + " is " + (st ? st->type() : std::string("not a file")) +
                                                               ", not a regular file; sdm loads only regular files");
        flags |= LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR;  // its own dependencies beside it
    }
    HMODULE handle = ::LoadLibraryExW(name.c_str(), nullptr, flags);
    if (handle == nullptr) return make_error(ErrorCode::io, "cannot load " + path + ": " + system_message(::GetLastError()));
    if (keep_loaded) {
        HMODULE pinned = nullptr;
        ::GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN, reinterpret_cast<LPCWSTR>(handle), &pinned);
    }
    Library lib;
    lib.handle_ = handle;
    lib.path_ = path;
    return lib;
}

void close_descriptor(int fd) noexcept { ::_close(fd); }  // (closes the handle it wraps: a lock goes with it)

void unload_library(void* handle) noexcept { ::FreeLibrary(static_cast<HMODULE>(handle)); }

void* Library::symbol(const char* name) const noexcept {
    return handle_ != nullptr ? reinterpret_cast<void*>(::GetProcAddress(static_cast<HMODULE>(handle_), name)) : nullptr;
}

std::optional<std::string> Library::file_of(const void* address) {
    HMODULE module = nullptr;
    if (address == nullptr || !::GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                                                    static_cast<LPCWSTR>(address), &module))
        return std::nullopt;
    wchar_t file[MAX_PATH * 4];
    const DWORD n = ::GetModuleFileNameW(module, file, static_cast<DWORD>(std::size(file)));
    if (n == 0 || n >= std::size(file)) return std::nullopt;
    return narrow(std::wstring_view(file, n));
}

// ---- the environment --------------------------------------------------------------------------

std::optional<std::string> env(const char* name) {
    const std::wstring wname = wide(name);
    std::wstring value(256, L'\0');
    for (;;) {
        const DWORD n = ::GetEnvironmentVariableW(wname.c_str(), value.data(), static_cast<DWORD>(value.size()));
        if (n == 0) return std::nullopt;  // unset, or empty
        if (n < value.size()) {
            value.resize(n);
            return narrow(value);
        }
        value.resize(n);
    }
}

// ---- files and directories --------------------------------------------------------------------

Result<void> make_directories(const std::string& path, unsigned) {
    OwnerOnly owner_only;
    size_t at = 0;
    while (at != std::string::npos) {
        at = path.find_first_of("/\\", at + 1);
        const std::string partial = path.substr(0, at);
        if (partial.empty() || (partial.size() == 2 && partial[1] == ':')) continue;  // "C:"
        if (!::CreateDirectoryW(wide(partial).c_str(), &owner_only.attributes) && ::GetLastError() != ERROR_ALREADY_EXISTS)
            return os_error("cannot create directory " + partial, ::GetLastError());
    }
    return {};
}

uint32_t effective_user() noexcept { return 0; }

std::string FileStatus::type() const { return archive::file_type_name(mode); }

int process_id() noexcept { return static_cast<int>(::GetCurrentProcessId()); }

std::optional<FileStatus> path_status(const std::string& path) {
    Handle f{::CreateFileW(wide(path).c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, nullptr)};
    if (!f) return std::nullopt;
    return status_of_handle(f.h);
}

std::optional<std::pair<std::string, FileStatus>> resolved_regular_file(const std::string& path) {
    Handle f{::CreateFileW(wide(path).c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, nullptr)};
    if (!f) return std::nullopt;
    const auto st = status_of_handle(f.h);
    if (!st || !st->regular) return std::nullopt;
    wchar_t final_path[MAX_PATH * 4];
    const DWORD n = ::GetFinalPathNameByHandleW(f.h, final_path, static_cast<DWORD>(std::size(final_path)), FILE_NAME_NORMALIZED);
    if (n == 0 || n >= std::size(final_path)) return std::nullopt;
    std::wstring_view resolved(final_path, n);
    if (resolved.starts_with(L"\\\\?\\")) resolved.remove_prefix(4);
    return std::pair{narrow(resolved), *st};
}

Result<Directory> Directory::open(const std::string& path, bool create, unsigned) {
    const std::wstring wpath = wide(path);
    if (wpath.empty()) return make_error(ErrorCode::invalid_argument, "directory " + path + ": not a valid UTF-8 path");
    const auto open_it = [&] {
        return ::CreateFileW(wpath.c_str(), FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES | SYNCHRONIZE,
                             FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                             FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
    };
    HANDLE h = open_it();
    if (h == INVALID_HANDLE_VALUE && missing(::GetLastError()) && create) {
        OwnerOnly owner_only;
        if (!::CreateDirectoryW(wpath.c_str(), &owner_only.attributes) && ::GetLastError() != ERROR_ALREADY_EXISTS)
            return os_error("cannot create directory " + path, ::GetLastError());
        h = open_it();
    }
    if (h == INVALID_HANDLE_VALUE) {
        const DWORD err = ::GetLastError();
        if (missing(err)) return make_error(ErrorCode::not_found, "directory " + path + " does not exist");
        return os_error("cannot open directory " + path, err);
    }
    const auto st = status_of_handle(h);
    if (!st || !st->directory) {
        ::CloseHandle(h);
        return make_error(ErrorCode::invalid_argument, path + " is " + (st ? st->type() : std::string("unreadable")) +
                                                           ", not a directory; sdm does not follow links here");
    }
    const int fd = descriptor_of(h);
    if (fd < 0) return make_error(ErrorCode::io, "cannot open directory " + path + ": out of descriptors");
    return Directory(fd, path);
}

Result<FileStatus> Directory::status() const {
    const auto st = status_of_handle(handle_of(fd_));
    if (!st) return os_error("cannot stat " + path_, ::GetLastError());
    return *st;
}

Result<Directory> Directory::child(const std::string& name, bool create, unsigned) const {
    const std::string path = path_ + "\\" + name;
    OwnerOnly owner_only;
    DWORD err = 0;
    HANDLE h = open_at(handle_of(fd_), name, FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
                       create ? FILE_OPEN_IF : FILE_OPEN, FILE_DIRECTORY_FILE, err, owner_only.descriptor);
    if (h == INVALID_HANDLE_VALUE) {
        if (missing(err)) return make_error(ErrorCode::not_found, "directory " + path + " does not exist");
        if (const auto st = status_of(name); st && !st->directory)
            return make_error(ErrorCode::invalid_argument, path + " is " + st->type() + ", not a directory; remove it");
        return os_error("cannot open directory " + path, err);
    }
    const auto st = status_of_handle(h);
    if (!st || !st->directory) {
        ::CloseHandle(h);
        return make_error(ErrorCode::invalid_argument, path + " is " + (st ? st->type() : std::string("unreadable")) + ", not a directory; remove it");
    }
    const int fd = descriptor_of(h);
    if (fd < 0) return make_error(ErrorCode::io, "cannot open directory " + path + ": out of descriptors");
    return Directory(fd, path);
}

Result<std::pair<FileStatus, ByteVector>> Directory::read_file(const std::string& name, uint64_t max_size,
                                                                        const std::function<Result<void>(const FileStatus&)>& accept,
                                                                        std::span<std::byte> prefix,
                                                                        const std::function<void(Bytes)>& consume) const {
    const std::string path = path_ + "\\" + name;
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, GENERIC_READ, FILE_OPEN, FILE_NON_DIRECTORY_FILE, err)};
    if (!f) {
        if (missing(err)) return make_error(ErrorCode::not_found, path + " does not exist");
        if (const auto st = status_of(name); st && !st->regular) return make_error(ErrorCode::invalid_argument, path + " is " + st->type() + ", not a regular file");
        return os_error("cannot open " + path, err);
    }
    const auto got = status_of_handle(f.h);
    if (!got) return os_error("cannot stat " + path, ::GetLastError());
    const FileStatus status = *got;
    SDM_TRY(check_whole_read(path, status, max_size, prefix.size()));
    if (accept) SDM_TRY(accept(status));
    SDM_TRY(read_at(f.h, prefix.data(), prefix.size(), 0, path, status.size, nullptr));
    ByteVector bytes;
    const size_t rest = static_cast<size_t>(status.size) - prefix.size();
    try {
        bytes.resize(rest);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(rest) + " bytes to read " + path);
    }
    SDM_TRY(read_at(f.h, bytes.data(), rest, prefix.size(), path, status.size, &consume));
    return std::pair(status, std::move(bytes));
}

Result<void> Directory::write_file_atomic(const std::string& name, const std::string& temporary, std::initializer_list<Bytes> parts) const {
    const std::string tmp_path = path_ + "\\" + temporary;
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), temporary, GENERIC_WRITE | DELETE, FILE_CREATE, FILE_NON_DIRECTORY_FILE, err)};
    if (!f) return os_error("cannot create " + tmp_path, err);
    const auto fail = [&](const std::string& what, DWORD why) {
        delete_by_handle(f.h);
        return os_error(what, why, "free space in " + path_);
    };
    for (const Bytes part : parts) {
        size_t done = 0;
        while (done < part.size()) {
            DWORD n = 0;
            if (!::WriteFile(f.h, part.data() + done, static_cast<DWORD>(std::min<size_t>(part.size() - done, 1u << 30)), &n, nullptr))
                return fail("cannot write " + tmp_path, ::GetLastError());
            done += n;
        }
    }
    if (!::FlushFileBuffers(f.h)) return fail("cannot sync " + tmp_path, ::GetLastError());
    // Renamed by its handle, relative to this directory's handle, replacing `name`: through
    // NtSetInformationFile (SetFileInformationByHandle would make the name a path against the
    // working directory first, and refuse it with a RootDirectory).
    if (!plain_name(name)) return fail("cannot rename " + tmp_path + " into place", ERROR_INVALID_NAME);
    const std::wstring target = wide(name);
    std::vector<std::byte> buffer(sizeof(FILE_RENAME_INFORMATION) + target.size() * sizeof(wchar_t));
    auto* rename = reinterpret_cast<FILE_RENAME_INFORMATION*>(buffer.data());
    rename->ReplaceIfExists = TRUE;
    rename->RootDirectory = handle_of(fd_);
    rename->FileNameLength = static_cast<ULONG>(target.size() * sizeof(wchar_t));
    std::memcpy(rename->FileName, target.data(), target.size() * sizeof(wchar_t));
    IO_STATUS_BLOCK io{};
    const NTSTATUS status = ::NtSetInformationFile(f.h, &io, rename, static_cast<ULONG>(buffer.size()), FileRenameInformation);
    if (status < 0) return fail("cannot rename " + tmp_path + " into place", ::RtlNtStatusToDosError(status));
    return {};
}

bool Directory::remove(const std::string& name, std::optional<uint64_t> inode) const {
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, DELETE | FILE_READ_ATTRIBUTES, FILE_OPEN, FILE_NON_DIRECTORY_FILE, err)};
    if (!f) return false;
    if (inode) {
        const auto st = status_of_handle(f.h);
        if (!st || st->inode != *inode) return false;
    }
    return delete_by_handle(f.h);
}

void Directory::touch(const std::string& name) const {
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, FILE_WRITE_ATTRIBUTES, FILE_OPEN, 0, err)};
    if (!f) return;
    FILETIME now{};
    ::GetSystemTimeAsFileTime(&now);
    ::SetFileTime(f.h, nullptr, nullptr, &now);
}

std::optional<FileStatus> Directory::status_of(const std::string& name) const {
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, FILE_READ_ATTRIBUTES, FILE_OPEN, 0, err)};
    if (!f) return std::nullopt;
    return status_of_handle(f.h);
}

Result<std::vector<std::pair<std::string, FileStatus>>> Directory::list() const {
    // The names through this directory's own handle (never its path), each one's status opened
    // relative to it without following links.
    std::vector<std::pair<std::string, FileStatus>> out;
    std::vector<std::byte> buffer(64 * 1024);
    bool first = true;
    for (;;) {
        if (!::GetFileInformationByHandleEx(handle_of(fd_), first ? FileFullDirectoryRestartInfo : FileFullDirectoryInfo, buffer.data(),
                                            static_cast<DWORD>(buffer.size()))) {
            if (::GetLastError() == ERROR_NO_MORE_FILES) break;
            return os_error("cannot list " + path_, ::GetLastError());
        }
        first = false;
        for (size_t at = 0;;) {
            const auto* entry = reinterpret_cast<const FILE_FULL_DIR_INFO*>(buffer.data() + at);
            const std::string name = narrow(std::wstring_view(entry->FileName, entry->FileNameLength / sizeof(wchar_t)));
            if (name != "." && name != "..")
                if (const auto st = status_of(name)) out.emplace_back(name, *st);
            if (entry->NextEntryOffset == 0) break;
            at += entry->NextEntryOffset;
        }
    }
    return out;
}

namespace {

// The lock is a byte far past any mark, so that the mark at the file's start stays readable by
// waiters (a locked range cannot be read by other handles).
constexpr DWORD kLockedByteHigh = 0x40000000;

bool lock_byte(HANDLE h) {
    OVERLAPPED at{};
    at.OffsetHigh = kLockedByteHigh;
    return ::LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at) != 0;
}

LockHolder lock_holder(HANDLE h) {
    char text[256] = {0};
    OVERLAPPED at{};
    DWORD n = 0;
    if (!::ReadFile(h, text, sizeof text - 1, &n, &at)) n = 0;
    return parse_lock_mark(std::string_view(text, n), process_id(), static_cast<int64_t>(std::time(nullptr)));
}

}  // namespace

Result<FileLock> Directory::lock(const std::string& name, double warn_after_seconds, double give_up_seconds,
                                 const std::function<void(const std::string& holder)>& waiting, const LockMark& mark) const {
    const std::string path = path_ + "\\" + name;
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, GENERIC_READ | GENERIC_WRITE, FILE_OPEN_IF, FILE_NON_DIRECTORY_FILE, err)};
    if (!f) {
        if (const auto st = status_of(name); st && !st->regular) return make_error(ErrorCode::io, "lock file " + path + " is " + st->type() + "; remove it");
        return os_error("cannot open lock file " + path, err, "free space in " + path_);
    }
    if (const auto st = status_of_handle(f.h); !st || !st->regular)
        return make_error(ErrorCode::io, "lock file " + path + " is not a regular file; remove it");
    SDM_TRY(wait_for_lock(path, warn_after_seconds, give_up_seconds, waiting, [&]() -> Result<bool> {
        if (lock_byte(f.h)) return true;
        if (::GetLastError() == ERROR_LOCK_VIOLATION || ::GetLastError() == ERROR_IO_PENDING) return false;
        return os_error("cannot lock " + path, ::GetLastError());
    }, [&] { return lock_holder(f.h); }));
    // Who holds it, for whoever waits (best effort, as on POSIX).
    const std::string text = lock_mark_text(mark, process_id(), static_cast<int64_t>(std::time(nullptr)));
    FILE_END_OF_FILE_INFO end{};
    ::SetFileInformationByHandle(f.h, FileEndOfFileInfo, &end, sizeof end);
    OVERLAPPED at{};
    DWORD n = 0;
    ::WriteFile(f.h, text.data(), static_cast<DWORD>(text.size()), &n, &at);
    const int fd = descriptor_of(f.release());
    if (fd < 0) return make_error(ErrorCode::io, "cannot lock " + path + ": out of descriptors");
    return FileLock(fd);
}

std::optional<FileLock> Directory::try_lock(const std::string& name) const {
    DWORD err = 0;
    Handle f{open_at(handle_of(fd_), name, GENERIC_READ | GENERIC_WRITE, FILE_OPEN, FILE_NON_DIRECTORY_FILE, err)};
    if (!f || !lock_byte(f.h)) return std::nullopt;
    const int fd = descriptor_of(f.release());
    if (fd < 0) return std::nullopt;
    return FileLock(fd);
}

const char* const kUserFolderVariables = "LOCALAPPDATA or USERPROFILE";

std::optional<std::string> user_folder(UserFolder which) {
    auto local = env("LOCALAPPDATA");
    if (!local)
        if (const auto profile = env("USERPROFILE")) local = *profile + "\\AppData\\Local";
    if (!local) return std::nullopt;
    return *local + (which == UserFolder::cache ? "\\sdm\\cache" : "\\sdm\\state");
}

namespace {

// The file of the module holding this code (libsdm's DLL, or a program), fixed at load.
std::optional<std::string> find_own_folder() {
    const auto file = Library::file_of(reinterpret_cast<const void*>(&find_own_folder));
    if (!file) return std::nullopt;
    const size_t slash = file->find_last_of("/\\");
    if (slash == std::string::npos) return std::nullopt;
    return file->substr(0, slash);
}

const std::optional<std::string> own_folder = find_own_folder();

}  // namespace

const std::optional<std::string>& own_binary_folder() { return own_folder; }

std::vector<std::string> toolkit_library_names(const std::string& stem, std::initializer_list<int> majors) {
    std::vector<std::string> names;
    for (const int major : majors) names.push_back(stem + "_" + std::to_string(major) + "0_0.dll");  // nvJitLink_130_0.dll
    return names;
}

std::vector<std::string> toolkit_library_folders(const std::string& home) { return {home + "\\bin\\x64", home + "\\bin"}; }

std::vector<std::string> loader_search_folders() {
    std::vector<std::string> folders;
    wchar_t buffer[MAX_PATH * 4];
    if (const DWORD n = ::GetModuleFileNameW(nullptr, buffer, static_cast<DWORD>(std::size(buffer))); n > 0 && n < std::size(buffer)) {
        std::wstring exe(buffer, n);
        if (const size_t slash = exe.find_last_of(L"\\/"); slash != std::wstring::npos) folders.push_back(narrow(exe.substr(0, slash)));
    }
    if (const UINT n = ::GetSystemDirectoryW(buffer, static_cast<UINT>(std::size(buffer))); n > 0 && n < std::size(buffer))
        folders.push_back(narrow(std::wstring(buffer, n)));
    return folders;
}

bool names_a_path(const std::string& name) noexcept { return name.find_first_of("/\\") != std::string::npos; }

}  // namespace sdm::runtime::platform
