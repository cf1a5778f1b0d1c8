// The archives a runtime mounted, in layer order (later ones take precedence: layering.hpp), and
// their replacement by a hot reload. Every mount is admitted first: the signature policy
// (provenance.hpp) and the kernel ABI the host was built for read only the metadata. Thread-safe:
// a reader takes a snapshot (archives()), and mount_generation() changes whenever the set does.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "runtime/platform/log.hpp"
#include "mounted_archive.hpp"
#include "provenance.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class ArchiveSet {
public:
    // `kernel_abi_major`: the kernel ABI major the host was built for; 0: any.
    ArchiveSet(const Logger& log, Provenance& provenance, uint16_t kernel_abi_major)
        : log_(log), provenance_(provenance), kernel_abi_major_(kernel_abi_major) {}
    ArchiveSet(const ArchiveSet&) = delete;
    ArchiveSet& operator=(const ArchiveSet&) = delete;

    Result<void> mount(std::shared_ptr<MountedArchive> mounted);
    Result<void> mount_file(const std::string& path);
    Result<void> mount_memory(Bytes bytes, const std::string& label);
    std::vector<std::shared_ptr<const MountedArchive>> archives() const;
    // Changes whenever the set of mounted archives does (a mount, a reload).
    uint64_t mount_generation() const noexcept { return generation_.load(std::memory_order_acquire); }

    // Hot reload: remounts the archive files that changed on disk since they were mounted (every
    // file archive when `changed_only` is false; one whose content is byte-identical is kept).
    // A new version takes the old one's place in the layer order, and `retire` is told of the old
    // one (the registry stops serving from it). A file that fails to mount leaves the old version
    // serving; the first such error is returned (after every file was tried), and each is logged.
    // `reloaded` counts the archives replaced. With `changed_only` (a poll), a version of a file
    // that was refused before is not tried (nor reported) again until it changes.
    // `contract` may refuse a new version against the old one (reload_contract.hpp), as a file
    // that fails to mount is refused.
    Result<void> reload(bool changed_only, uint32_t& reloaded, const std::function<void(const MountedArchive*)>& retire,
                        const std::function<Result<void>(const MountedArchive& old, const MountedArchive& fresh)>& contract);

    // Unmounts the archive mounted as `label` (its path, or the label it was mounted with): new
    // fetches no longer see it, and `retire` is told of it and of each overlay that stood on it (an
    // overlay whose base goes goes with it, logged), as a reload tells of a replaced version. Its
    // kernels already fetched keep working until released. ErrorCode::not_found naming what is
    // mounted, or ErrorCode::ambiguous when several mounts share the label. Serialized with reloads.
    // `unmounted` receives how many archives went (the one named and its overlays).
    Result<void> unmount(std::string_view label, uint32_t& unmounted, const std::function<void(const MountedArchive*)>& retire);

    // Archives of $SDM_ARCHIVE_PATH that could not be mounted, each with why.
    void skipped(std::string why);
    std::vector<std::string> skipped_archives() const;

private:
    Result<void> check_compatible(const archive::Archive& archive) const;
    // With mutex_ held: the overlays whose base is no longer beneath them leave the set (`after`
    // says what changed it, for the log).
    std::vector<std::shared_ptr<const MountedArchive>> drop_stale_overlays(std::string_view after);

    const Logger& log_;
    Provenance& provenance_;
    const uint16_t kernel_abi_major_;
    mutable std::mutex mutex_;
    std::vector<std::shared_ptr<const MountedArchive>> archives_;
    std::atomic<uint64_t> generation_{0};
    std::vector<std::string> skipped_;
    std::mutex reload_mutex_;  // one reload at a time
    // path -> the on-disk version (device, inode, size, mtime) a reload refused: polls skip it.
    std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t, int64_t>> refused_;
};

}  // namespace sdm::runtime
