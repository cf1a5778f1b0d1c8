// run_child and the child's side on Windows (platform.hpp). The child is started by CreateProcessW,
// suspended, inside a Job Object that bounds its memory (JOB_OBJECT_LIMIT_PROCESS_MEMORY) and its
// CPU time, and kills it when the job's last handle closes (so it never outlives sdm's process);
// then resumed. Its request, reply and standard error are temporary files deleted on close, the
// only handles it inherits (PROC_THREAD_ATTRIBUTE_HANDLE_LIST); it learns theirs from the
// environment (SDM_CHILD_HANDLES="request reply"). The program file is held open, denying writes
// and deletion, from its check until the process has started. Windows keeps a process's exit code
// whoever waits, so no status record is needed (child_status_record_* only return the code); an
// exception that ends it (0xC0000005, ...) is reported as a crash.
#include "platform.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <windows.h>
#include <io.h>

#include "common/windows_text.hpp"

namespace sdm::runtime::platform {
namespace {

constexpr const wchar_t* kHandlesVariable = L"SDM_CHILD_HANDLES";

Error os_failure(const std::string& what, DWORD err) { return make_error(ErrorCode::io, what + ": " + system_message(err)); }

struct Handle {
    HANDLE h{nullptr};
    Handle() = default;
    explicit Handle(HANDLE handle) : h(handle == INVALID_HANDLE_VALUE ? nullptr : handle) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
        if (h != nullptr) ::CloseHandle(h);
    }
    explicit operator bool() const { return h != nullptr; }
    void reset() {
        if (h != nullptr) ::CloseHandle(std::exchange(h, nullptr));
    }
};

// A temporary file, inheritable, deleted when its last handle closes.
Result<HANDLE> temporary_file(const char* what) {
    wchar_t folder[MAX_PATH + 1];
    wchar_t name[MAX_PATH + 1];
    if (::GetTempPathW(MAX_PATH + 1, folder) == 0 || ::GetTempFileNameW(folder, L"sdm", 0, name) == 0)
        return os_failure(std::string("cannot name ") + what, ::GetLastError());
    SECURITY_ATTRIBUTES inherit{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
    HANDLE h = ::CreateFileW(name, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, &inherit, CREATE_ALWAYS,
                             FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, nullptr);
    if (h == INVALID_HANDLE_VALUE) return os_failure(std::string("cannot create ") + what, ::GetLastError());
    return h;
}

Result<void> write_all(HANDLE h, Bytes bytes) {
    for (size_t done = 0; done < bytes.size();) {
        DWORD n = 0;
        if (!::WriteFile(h, bytes.data() + done, static_cast<DWORD>(std::min<size_t>(bytes.size() - done, 1u << 30)), &n, nullptr))
            return os_failure("cannot write the child's request", ::GetLastError());
        done += n;
    }
    return {};
}

// What the child wrote to `h`, from its start: at most `limit` bytes (with refuse_longer, more
// is an error), read with a positioned read.
Result<ByteVector> read_back(HANDLE h, uint64_t limit, bool refuse_longer, const char* what) {
    LARGE_INTEGER size{};
    if (!::GetFileSizeEx(h, &size)) return os_failure(std::string("cannot size ") + what, ::GetLastError());
    const auto have = static_cast<uint64_t>(size.QuadPart);
    if (have > limit && refuse_longer)
        return make_error(ErrorCode::jit, std::string(what) + " is " + std::to_string(have) + " bytes, more than the " + std::to_string(limit) + " allowed");
    ByteVector out(static_cast<size_t>(std::min(have, limit)));
    for (size_t done = 0; done < out.size();) {
        OVERLAPPED at{};
        at.Offset = static_cast<DWORD>(done);
        at.OffsetHigh = static_cast<DWORD>(uint64_t{done} >> 32);
        DWORD n = 0;
        if (!::ReadFile(h, out.data() + done, static_cast<DWORD>(std::min<size_t>(out.size() - done, 1u << 30)), &n, &at) || n == 0)
            return os_failure(std::string("cannot read ") + what, ::GetLastError());
        done += n;
    }
    return out;
}

// One argument quoted the way CommandLineToArgvW and the C runtime read it back.
std::wstring quoted(const std::wstring& arg) {
    if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) return arg;
    std::wstring out = L"\"";
    for (size_t i = 0;; ++i) {
        size_t slashes = 0;
        while (i < arg.size() && arg[i] == L'\\') ++i, ++slashes;
        if (i == arg.size()) {
            out.append(slashes * 2, L'\\');
            break;
        }
        if (arg[i] == L'"') out.append(slashes * 2 + 1, L'\\').push_back(L'"');
        else out.append(slashes, L'\\').push_back(arg[i]);
    }
    return out + L"\"";
}

// This process's environment with SDM_CHILD_HANDLES set to the two handles' values.
std::vector<wchar_t> child_environment(HANDLE request, HANDLE reply) {
    std::vector<wchar_t> block;
    if (wchar_t* env = ::GetEnvironmentStringsW()) {
        for (const wchar_t* at = env; *at != L'\0'; at += std::wcslen(at) + 1) {
            const std::wstring_view entry(at);
            if (entry.starts_with(std::wstring(kHandlesVariable) + L"=")) continue;
            block.insert(block.end(), entry.begin(), entry.end());
            block.push_back(L'\0');
        }
        ::FreeEnvironmentStringsW(env);
    }
    const std::wstring mine = std::wstring(kHandlesVariable) + L"=" + std::to_wstring(reinterpret_cast<uintptr_t>(request)) + L" " +
                              std::to_wstring(reinterpret_cast<uintptr_t>(reply));
    block.insert(block.end(), mine.begin(), mine.end());
    block.push_back(L'\0');
    block.push_back(L'\0');
    return block;
}

// The handles SDM_CHILD_HANDLES names, in the child.
std::optional<std::pair<HANDLE, HANDLE>> own_handles() {
    wchar_t text[64];
    const DWORD n = ::GetEnvironmentVariableW(kHandlesVariable, text, 64);
    if (n == 0 || n >= 64) return std::nullopt;
    wchar_t* end = nullptr;
    const auto request = std::wcstoull(text, &end, 10);
    if (end == nullptr || *end != L' ') return std::nullopt;
    const auto reply = std::wcstoull(end + 1, &end, 10);
    if (end == nullptr || *end != L'\0') return std::nullopt;
    return std::pair{reinterpret_cast<HANDLE>(static_cast<uintptr_t>(request)), reinterpret_cast<HANDLE>(static_cast<uintptr_t>(reply))};
}

// check_program's test on a handle: a regular file, not a directory or a reparse point.
Result<void> check_program_handle(HANDLE h, const std::string& path) {
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(h, &info)) return os_failure("cannot stat " + path, ::GetLastError());
    if (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))
        return make_error(ErrorCode::jit, path + " is not a regular file: sdm runs only a program file it checked; reinstall it");
    return {};
}

}  // namespace

Result<void> check_program(int fd, const std::string& path) { return check_program_handle(reinterpret_cast<HANDLE>(::_get_osfhandle(fd)), path); }

void child_status_record_start() {}

int child_status_record_exit(int code) { return code; }

void child_detach() {}  // it inherited only its three handles, and the job ends it with its parent

bool child_orphaned() noexcept { return false; }  // the job kills it when its parent's handle closes

void child_limit(uint64_t, double) {}  // the parent's job object bounds memory and CPU time

std::optional<ByteVector> child_request() {
    const auto handles = own_handles();
    if (!handles) return std::nullopt;
    auto bytes = read_back(handles->first, uint64_t{1} << 34, false, "the request");
    if (!bytes || bytes->empty()) return std::nullopt;
    return std::move(*bytes);
}

bool child_reply(Bytes reply) {
    const auto handles = own_handles();
    if (!handles) return false;
    for (size_t done = 0; done < reply.size();) {
        DWORD n = 0;
        if (!::WriteFile(handles->second, reply.data() + done, static_cast<DWORD>(std::min<size_t>(reply.size() - done, 1u << 30)), &n, nullptr) ||
            n == 0)
            return false;
        done += n;
    }
    return true;
}

Result<bool> program_present(const std::string& path) {
    const DWORD attributes = ::GetFileAttributesW(wide(path).c_str());
    if (attributes == INVALID_FILE_ATTRIBUTES) {
        const DWORD err = ::GetLastError();
        if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND) return false;
        return os_failure("cannot open " + path, err);
    }
    if (attributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))
        return make_error(ErrorCode::jit, path + " is not a regular file: sdm runs only a program file it checked; reinstall it");
    return true;
}

std::string ended_by(int signal) {
    char text[64];
    const auto code = static_cast<unsigned>(signal);
    std::snprintf(text, sizeof text, "crashed with exception 0x%08X", code);
    return std::string(text) + (code == 0xC0000005u ? " (access violation)" : code == 0xC0000017u || code == 0xC000012Du ? " (out of memory)" :
                                code == 0xC00000FDu ? " (stack overflow)" : code == 0xC0000409u ? " (abort)" : "");
}

Result<ChildOutcome> run_child(const ChildRun& run, const std::function<void(int pid)>& started) {
    if (run.argv.empty()) return make_error(ErrorCode::invalid_argument, "run_child: no program");
    const std::wstring program = wide(run.argv[0]);
    // Held open from its check to the process's start: nobody may write, rename or delete it.
    Handle program_file(::CreateFileW(program.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr));
    if (!program_file) return make_error(ErrorCode::jit, "cannot open " + run.argv[0] + ": " + system_message(::GetLastError()));
    SDM_TRY(check_program_handle(program_file.h, run.argv[0]));
    SDM_TRY_GET(request_h, temporary_file("the child's request file"));
    Handle request(*request_h);
    SDM_TRY(write_all(request.h, run.request));
    SDM_TRY_GET(reply_h, temporary_file("the child's reply file"));
    Handle reply(*reply_h);
    SDM_TRY_GET(errors_h, temporary_file("the child's error file"));
    Handle errors(*errors_h);

    Handle job(::CreateJobObjectW(nullptr, nullptr));
    if (!job) return os_failure("cannot create a job object for the child", ::GetLastError());
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
    if (run.seconds > 0) {
        limits.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_PROCESS_TIME;
        limits.BasicLimitInformation.PerProcessUserTimeLimit.QuadPart = static_cast<LONGLONG>((std::ceil(run.seconds) + 1) * 1e7);
    }
    if (run.memory > 0) {
        limits.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_PROCESS_MEMORY;
        limits.ProcessMemoryLimit = static_cast<SIZE_T>(run.memory);
    }
    if (!::SetInformationJobObject(job.h, JobObjectExtendedLimitInformation, &limits, sizeof limits))
        return os_failure("cannot set the child's limits", ::GetLastError());

    // Only these three handles reach it.
    HANDLE inherited[3] = {request.h, reply.h, errors.h};
    SIZE_T list_size = 0;
    ::InitializeProcThreadAttributeList(nullptr, 1, 0, &list_size);
    std::vector<std::byte> list_bytes(list_size);
    auto* list = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(list_bytes.data());
    if (!::InitializeProcThreadAttributeList(list, 1, 0, &list_size) ||
        !::UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited, sizeof inherited, nullptr, nullptr))
        return os_failure("cannot prepare the child's handles", ::GetLastError());
    STARTUPINFOEXW info{};
    info.StartupInfo.cb = sizeof info;
    info.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    info.StartupInfo.hStdInput = nullptr;
    info.StartupInfo.hStdOutput = nullptr;
    info.StartupInfo.hStdError = errors.h;
    info.lpAttributeList = list;
    std::wstring command;
    for (const std::string& a : run.argv) command += (command.empty() ? L"" : L" ") + quoted(wide(a));
    std::vector<wchar_t> environment = child_environment(request.h, reply.h);
    PROCESS_INFORMATION process{};
    const auto begun = std::chrono::steady_clock::now();
    const BOOL created = ::CreateProcessW(program.c_str(), command.data(), nullptr, nullptr, TRUE,
                                          CREATE_SUSPENDED | CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT, environment.data(),
                                          nullptr, &info.StartupInfo, &process);
    ::DeleteProcThreadAttributeList(list);
    if (!created) return make_error(ErrorCode::jit, "cannot start " + run.argv[0] + ": " + system_message(::GetLastError()));
    Handle process_handle(process.hProcess), thread(process.hThread);
    if (!::AssignProcessToJobObject(job.h, process.hProcess)) {
        const DWORD err = ::GetLastError();
        ::TerminateProcess(process.hProcess, 1);
        return os_failure("cannot put the child in its job object", err);
    }
    ::ResumeThread(process.hThread);
    program_file.reset();  // started: the file may change now
    if (started) started(static_cast<int>(process.dwProcessId));

    ChildOutcome out;
    const DWORD wait_ms = run.seconds > 0 ? static_cast<DWORD>(std::min(run.seconds * 1000.0, 4.0e9)) : INFINITE;
    if (::WaitForSingleObject(process.hProcess, wait_ms) == WAIT_TIMEOUT) {
        out.timed_out = true;
        ::TerminateJobObject(job.h, 137);
        ::WaitForSingleObject(process.hProcess, INFINITE);
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    DWORD code = 0;
    ::GetExitCodeProcess(process.hProcess, &code);
    if (out.timed_out) out.signal = 9;
    else if (code >= 0xC0000000u) out.signal = static_cast<int>(code);
    else out.exit_code = static_cast<int>(code);
    if (!out.timed_out) {
        SDM_TRY_GET(bytes, read_back(reply.h, run.max_reply, true, "the child's reply"));
        out.reply = std::move(*bytes);
    }
    if (auto text = read_back(errors.h, run.max_stderr, false, "the child's standard error"))
        out.standard_error.assign(reinterpret_cast<const char*>(text->data()), text->size());
    return out;
}

}  // namespace sdm::runtime::platform
