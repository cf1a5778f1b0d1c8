// A file written beside the one it will replace and renamed over it only once it is whole and
// checked, as `sdm pull` installs an archive: created with O_EXCL and mode 0600 in the target's
// directory, fsynced, renamed, the directory fsynced. Until it is committed, destroying it removes
// it: a failed pull leaves the old file in place and nothing else behind.
#pragma once

#include <string>

#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools {

class StagedFile {
public:
    // A new temporary file in the directory of `target`, named after it.
    static Result<StagedFile> create(const std::string& target);
    StagedFile(StagedFile&& other) noexcept;
    StagedFile& operator=(StagedFile&&) = delete;
    ~StagedFile();

    Result<void> write(Bytes bytes);
    // Flushes the bytes to disk; the file stays open and staged.
    Result<void> sync();
    // Renames the file over the target and syncs the directory; afterwards nothing is removed.
    Result<void> commit();

    const std::string& path() const noexcept { return path_; }
    const std::string& target() const noexcept { return target_; }

private:
    StagedFile(std::string target, std::string path, int fd) : target_(std::move(target)), path_(std::move(path)), fd_(fd) {}
    std::string target_;
    std::string path_;
    int fd_{-1};
    bool committed_{false};
};

}  // namespace sdm::tools
