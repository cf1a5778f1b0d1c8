#include "version_floor.hpp"

#include <charconv>

#include <unistd.h>

#include "platform.hpp"

namespace sdm::runtime {
namespace {

constexpr const char* kStateName = "versions";
constexpr const char* kLockName = "versions.lock";
constexpr std::string_view kFirstLine = "sdm versions 1";
constexpr uint64_t kMaxStateBytes = 64 * 1024;  // 2,000 keys or so; a larger file is not ours
constexpr double kLockWarnSeconds = 2, kLockGiveUpSeconds = 30;

std::string default_state_dir() {
    if (const auto dir = platform::env("SDM_STATE_DIR")) return *dir;
    if (const auto xdg = platform::env("XDG_STATE_HOME")) return *xdg + "/sdm";
    if (const auto home = platform::home_directory()) return *home + "/.local/state/sdm";
    return {};
}

uint64_t version_of(const archive::Archive& a) { return a.header().archive_version.value_or(0); }

std::string version_text(const archive::Archive& a) {
    return a.header().archive_version ? "version " + std::to_string(*a.header().archive_version) : "no version (read as 0)";
}

Result<void> check_state_directory(const std::string& path, const platform::FileStatus& st) {
    if (!st.directory) return make_error(ErrorCode::invalid_argument, "state directory " + path + " is " + st.type() + "; set SDM_STATE_DIR");
    if (st.owner != platform::effective_user() || (st.mode & 022) != 0)
        return make_error(ErrorCode::invalid_argument, "state directory " + path + " belongs to uid " + std::to_string(st.owner) +
                                                           " or others may write to it (mode " + std::to_string(st.mode & 0777) +
                                                           " in decimal); the rollback marks must be this user's alone: chmod 700 it, or set SDM_STATE_DIR");
    return {};
}

Result<platform::Directory> open_state(const std::string& dir, bool create) {
    if (dir.empty())
        return make_error(ErrorCode::invalid_argument, "no state directory for the rollback marks: set SDM_STATE_DIR (no HOME or XDG_STATE_HOME)");
    auto opened = platform::Directory::open(dir, false, 0700);
    if (!opened && opened.error().code == ErrorCode::not_found && create) {
        const auto slash = dir.rfind('/');
        if (slash != std::string::npos && slash > 0) SDM_TRY(platform::make_directories(dir.substr(0, slash), 0700));
        opened = platform::Directory::open(dir, true, 0700);
    }
    if (!opened) return std::move(opened).error();
    SDM_TRY_GET(st, opened->status());
    SDM_TRY(check_state_directory(dir, *st));
    return opened;
}

Result<std::map<std::string, uint64_t>> read_marks(const platform::Directory& dir, const std::string& file) {
    auto read = dir.read_file(kStateName, kMaxStateBytes, [&](const platform::FileStatus& st) -> Result<void> {
        if (st.owner != platform::effective_user() || (st.mode & 022) != 0)
            return make_error(ErrorCode::invalid_argument, file + " belongs to another user or others may write to it; remove it (the rollback marks start again from the archives admitted next)");
        return {};
    });
    if (!read) {
        if (read.error().code == ErrorCode::not_found) return std::map<std::string, uint64_t>{};
        return make_error(read.error().code, "the rollback marks " + file + " cannot be read: " + read.error().message);
    }
    const auto& bytes = read->second;
    return parse_version_marks(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), file);
}

}  // namespace

Result<std::map<std::string, uint64_t>> parse_version_marks(std::string_view text, const std::string& label) {
    std::map<std::string, uint64_t> marks;
    size_t line_number = 0;
    const auto damaged = [&](const std::string& why) {
        return make_error(ErrorCode::invalid_argument, label + " line " + std::to_string(line_number) + ": " + why +
                                                           "; it is not a file sdm wrote. Restore it, or remove it (the marks then start again)");
    };
    while (!text.empty()) {
        ++line_number;
        const size_t end = text.find('\n');
        if (end == std::string_view::npos) return damaged("the last line has no newline (cut short?)");
        const std::string_view line = text.substr(0, end);
        text.remove_prefix(end + 1);
        if (line_number == 1) {
            if (line != kFirstLine) return damaged("not \"" + std::string(kFirstLine) + "\"");
            continue;
        }
        if (line.size() < 18 || line[16] != ' ') return damaged("not \"KEYID VERSION\"");
        const std::string_view id = line.substr(0, 16), number = line.substr(17);
        if (id.find_first_not_of("0123456789abcdef") != std::string_view::npos) return damaged("the key id is not 16 hex digits");
        uint64_t version = 0;
        const auto [at, ec] = std::from_chars(number.data(), number.data() + number.size(), version);
        if (ec != std::errc() || at != number.data() + number.size()) return damaged("the version is not a decimal number below 2^64");
        if (!marks.emplace(std::string(id), version).second) return damaged("key " + std::string(id) + " is listed twice");
    }
    if (line_number == 0) return damaged("the file is empty");
    return marks;
}

VersionFloor::VersionFloor(const VersionFloorOptions& options)
    : dir_(options.state_dir.empty() ? default_state_dir() : options.state_dir), minimum_(options.minimum) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
    file_ = dir_ + "/" + kStateName;
}

Result<void> VersionFloor::check_minimum(const archive::Archive& a) const {
    if (minimum_ == 0 || version_of(a) >= minimum_) return {};
    return make_error(ErrorCode::untrusted, "archive " + a.label() + " has " + version_text(a) + ", below the minimum version " +
                                                std::to_string(minimum_) + " this host requires (sdm_runtime_params.min_archive_version); "
                                                "it is not mounted: use version " + std::to_string(minimum_) + " or later");
}

Result<uint64_t> VersionFloor::mark(const archive::KeyId& key) const {
    auto dir = open_state(dir_, false);
    if (!dir) {
        if (dir.error().code == ErrorCode::not_found) return uint64_t{0};
        return std::move(dir).error();
    }
    SDM_TRY_GET(marks, read_marks(*dir, file_));
    const auto found = marks->find(archive::key_id_text(key));
    return found == marks->end() ? uint64_t{0} : found->second;
}

Result<void> VersionFloor::admit(const archive::Archive& a, const archive::KeyId& key, bool record) {
    const uint64_t version = version_of(a);
    const std::string id = archive::key_id_text(key);
    std::lock_guard guard(mutex_);
    auto dir = open_state(dir_, record && version > 0);
    if (!dir) {
        if (dir.error().code == ErrorCode::not_found) return {};  // nothing admitted yet, nothing to record
        return make_error(dir.error().code, "archive " + a.label() + " is not mounted: " + dir.error().message);
    }
    const auto judge = [&](const std::map<std::string, uint64_t>& marks) -> Result<uint64_t> {
        const auto found = marks.find(id);
        const uint64_t seen = found == marks.end() ? 0 : found->second;
        if (version < seen)
            return make_error(ErrorCode::untrusted, "archive " + a.label() + " signed by " + id + " has " + version_text(a) +
                                                        ", older than version " + std::to_string(seen) + " this account already admitted from that key (" +
                                                        file_ + "): a rollback is refused. Install version " + std::to_string(seen) +
                                                        " or later; to go back on purpose, sign the old content again with a higher --archive-version");
        return seen;
    };
    // The file is only ever replaced by a rename, so a read without the lock sees one whole
    // version of it: what most mounts need (a version already admitted) takes no lock.
    auto marks = read_marks(*dir, file_);
    if (!marks) return make_error(marks.error().code, "archive " + a.label() + " is not mounted: " + marks.error().message);
    SDM_TRY_GET(seen, judge(*marks));
    if (!record || version <= *seen) return {};
    // A new mark: read again under the lock (another process may have raised it), then replace.
    SDM_TRY_GET(lock, dir->lock(kLockName, kLockWarnSeconds, kLockGiveUpSeconds, {}));
    marks = read_marks(*dir, file_);
    if (!marks) return make_error(marks.error().code, "archive " + a.label() + " is not mounted: " + marks.error().message);
    SDM_TRY_GET(again, judge(*marks));
    if (version == *again) return {};
    (*marks)[id] = version;
    std::string text = std::string(kFirstLine) + "\n";
    for (const auto& [k, v] : *marks) text += k + " " + std::to_string(v) + "\n";
    return dir->write_file_atomic(kStateName, std::string(kStateName) + ".tmp" + std::to_string(::getpid()),
                                  {std::as_bytes(std::span(text.data(), text.size()))});
}

}  // namespace sdm::runtime
