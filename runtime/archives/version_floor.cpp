#include "version_floor.hpp"

#include <algorithm>
#include <charconv>
#include <tuple>

#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"

namespace sdm::runtime {
namespace {

constexpr const char* kStateName = "versions";
constexpr const char* kLockName = "versions.lock";
constexpr std::string_view kFirstLine = "sdm versions 2", kFirstLine1 = "sdm versions 1";
constexpr uint64_t kMaxStateBytes = 64 * 1024;  // 1,500 keys or lines or so; a larger file is not ours
constexpr double kLockWarnSeconds = 2, kLockGiveUpSeconds = 30;

std::string default_state_dir() {
    if (auto dir = settings::value_or(settings::path(settings::Id::state_dir), ""); !dir.empty()) return dir;
    return platform::user_folder(platform::UserFolder::state).value_or("");
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
        return make_error(ErrorCode::invalid_argument, std::string("no state directory for the rollback marks: set SDM_STATE_DIR (none of ") +
                                                           platform::kUserFolderVariables + " is set)");
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
    bool first_format = false;  // "sdm versions 1": bare key ids
    const auto damaged = [&](const std::string& why) {
        return make_error(ErrorCode::invalid_argument, label + " line " + std::to_string(line_number) + ": " + why +
                                                           "; it is not a file sdm wrote. Restore it, or remove it (the marks then start again)");
    };
    while (!text.empty()) {
        ++line_number;
        const size_t end = text.find('\n');
        if (end == std::string_view::npos) return damaged("the last line has no newline (cut short?)");
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end + 1);
        if (line_number == 1) {
            first_format = line == kFirstLine1;
            if (line != kFirstLine && !first_format) return damaged("not \"" + std::string(kFirstLine) + "\"");
            continue;
        }
        std::string kind = "key";
        if (!first_format) {
            const size_t space = line.find(' ');
            kind = std::string(line.substr(0, space));
            if (space == std::string_view::npos || (kind != "key" && kind != "line")) return damaged("not \"key KEYID VERSION\" or \"line NAME VERSION\"");
            line.remove_prefix(space + 1);
        }
        const size_t space = line.rfind(' ');
        if (space == std::string_view::npos) return damaged("no version");
        const std::string_view id = line.substr(0, space), number = line.substr(space + 1);
        if (kind == "key" && (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string_view::npos))
            return damaged("the key id is not 16 hex digits");
        if (kind == "line" && !archive::release_line_problem(id).empty()) return damaged("the release line's name is not one sdm writes");
        uint64_t version = 0;
        const auto [at, ec] = std::from_chars(number.data(), number.data() + number.size(), version);
        if (number.empty() || ec != std::errc() || at != number.data() + number.size()) return damaged("the version is not a decimal number below 2^64");
        if (!marks.emplace(kind + " " + std::string(id), version).second) return damaged(kind + " " + std::string(id) + " is listed twice");
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

Result<uint64_t> VersionFloor::mark(const archive::KeyId& key) const { return stored_mark("key " + archive::key_id_text(key)); }
Result<uint64_t> VersionFloor::line_mark(const std::string& line) const { return stored_mark("line " + line); }

Result<uint64_t> VersionFloor::stored_mark(const std::string& name) const {
    auto dir = open_state(dir_, false);
    if (!dir) {
        if (dir.error().code == ErrorCode::not_found) return uint64_t{0};
        return std::move(dir).error();
    }
    SDM_TRY_GET(marks, read_marks(*dir, file_));
    const auto found = marks->find(name);
    return found == marks->end() ? uint64_t{0} : found->second;
}

Result<void> VersionFloor::admit(const archive::Archive& a, std::span<const archive::KeyId> signers, bool record) {
    const uint64_t version = version_of(a);
    const auto& line = a.header().release_line;
    std::vector<std::string> raised;  // the marks this archive raises: its line's, its signers'
    if (line) raised.push_back("line " + *line);
    for (const auto& key : signers) raised.push_back("key " + archive::key_id_text(key));
    std::lock_guard guard(mutex_);
    auto dir = open_state(dir_, record && version > 0);
    if (!dir) {
        if (dir.error().code == ErrorCode::not_found) return {};  // nothing admitted yet, nothing to record
        return make_error(dir.error().code, "archive " + a.label() + " is not mounted: " + dir.error().message);
    }
    // The mark it is judged by: its line's (whichever key signed the releases before), else its
    // signers' highest. A rollback names that mark.
    const auto judge = [&](const std::map<std::string, uint64_t>& marks) -> Result<void> {
        std::string by;
        uint64_t seen = 0;
        for (const auto& name : raised) {
            const auto found = marks.find(name);
            if (found != marks.end() && found->second > seen) std::tie(by, seen) = std::pair(name, found->second);
            if (line) break;  // a named line is judged by its own mark alone
        }
        if (version >= seen) return {};
        const std::string whose = by.starts_with("line ") ? "release line " + by.substr(5) + " (signed by any trusted key)"
                                                          : "key " + by.substr(4) + ", one of its signers";
        return make_error(ErrorCode::untrusted, "archive " + a.label() + (line ? " of release line " + *line : std::string()) + " has " +
                                                    version_text(a) + ", older than version " + std::to_string(seen) +
                                                    " this account already admitted from " + whose + " (" + file_ +
                                                    "): a rollback is refused. Install version " + std::to_string(seen) +
                                                    " or later; to go back on purpose, sign the old content again with a higher --archive-version");
    };
    const auto raises = [&](const std::map<std::string, uint64_t>& marks) {
        return std::any_of(raised.begin(), raised.end(), [&](const std::string& name) {
            const auto found = marks.find(name);
            return found == marks.end() ? version > 0 : found->second < version;
        });
    };
    // The file is only ever replaced by a rename, so a read without the lock sees one whole
    // version of it: what most mounts need (a version already admitted) takes no lock.
    auto marks = read_marks(*dir, file_);
    if (!marks) return make_error(marks.error().code, "archive " + a.label() + " is not mounted: " + marks.error().message);
    SDM_TRY(judge(*marks));
    if (!record || !raises(*marks)) return {};
    // New marks: read again under the lock (another process may have raised them), then replace.
    SDM_TRY_GET(lock, dir->lock(kLockName, kLockWarnSeconds, kLockGiveUpSeconds, {}));
    marks = read_marks(*dir, file_);
    if (!marks) return make_error(marks.error().code, "archive " + a.label() + " is not mounted: " + marks.error().message);
    SDM_TRY(judge(*marks));
    if (!raises(*marks)) return {};
    for (const auto& name : raised) (*marks)[name] = std::max((*marks)[name], version);
    std::string text = std::string(kFirstLine) + "\n";
    for (const auto& [k, v] : *marks) text += k + " " + std::to_string(v) + "\n";
    return dir->write_file_atomic(kStateName, std::string(kStateName) + ".tmp" + std::to_string(platform::process_id()),
                                  {std::as_bytes(std::span(text.data(), text.size()))});
}

}  // namespace sdm::runtime
