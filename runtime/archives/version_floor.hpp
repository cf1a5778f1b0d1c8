// No rollback (docs/SIGNING.md, "Rollback"): per release line (an archive's header names it), else
// per signing key, the highest archive version this account has admitted under the signature
// policy `require`, kept in a small state file
// (`versions` in the state directory: owner-only, replaced atomically, read under a lock), and a
// minimum version the host may set. A signature binds bytes, not time: without this an attacker
// who holds an old signed archive could put it back. Thread-safe; processes exclude each other
// through the state directory's lock file.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "archive/archive.hpp"
#include "archive/signature_block.hpp"
#include "common/result.hpp"
#include "runtime/platform/log.hpp"

namespace sdm::runtime {

struct VersionFloorOptions {
    std::string state_dir;     // empty: $SDM_STATE_DIR, else $XDG_STATE_HOME/sdm, else ~/.local/state/sdm
    uint64_t minimum{0};       // archives below this version are refused (unversioned ones read as 0)
};

class VersionFloor {
public:
    explicit VersionFloor(const VersionFloorOptions& options);

    const std::string& state_file() const noexcept { return file_; }
    uint64_t minimum() const noexcept { return minimum_; }

    // The host's minimum, for every archive but the embedded one, under any policy.
    Result<void> check_minimum(const archive::Archive& archive) const;
    // `archive`, whose signatures by `signers` (every trusted key whose signature holds) hold:
    // refused (ErrorCode::untrusted, naming both versions, the line or key and the state file) when
    // it is older than the mark it is judged by: its release line's when its header names one (every
    // key's releases of the line count), else the highest mark of its signers. Otherwise, with
    // `record`, its line's mark and every signer's are raised to its version (a key's mark is the
    // highest version it signed on any line, so an unnamed archive by that key cannot go below it).
    // An unreadable or damaged state file refuses the archive too (it could hide a rollback).
    Result<void> admit(const archive::Archive& archive, std::span<const archive::KeyId> signers, bool record);
    // The mark of `key` or of a release line (0: none), read from the state file.
    Result<uint64_t> mark(const archive::KeyId& key) const;
    Result<uint64_t> line_mark(const std::string& line) const;

private:
    Result<uint64_t> stored_mark(const std::string& name) const;
    std::string dir_, file_;
    uint64_t minimum_{0};
    std::mutex mutex_;
};

// The marks in a state file's text, keyed "key KEYID" and "line NAME": "sdm versions 2" then
// "key KEYID VERSION" and "line NAME VERSION" lines (16 hex digits or a release line's name, a
// decimal); "sdm versions 1" (an older sdm's) has "KEYID VERSION" lines. An error naming `label`
// and the line when it is anything else.
Result<std::map<std::string, uint64_t>> parse_version_marks(std::string_view text, const std::string& label);

}  // namespace sdm::runtime
