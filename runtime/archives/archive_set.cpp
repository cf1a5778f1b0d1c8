#include "archive_set.hpp"

#include <algorithm>
#include <span>

#include "archive/file_map.hpp"
#include "archive/identity.hpp"
#include "archive/verify.hpp"
#include "common/text.hpp"
#include "runtime/platform/trace_ranges.hpp"
#include "runtime/platform/platform.hpp"

namespace sdm::runtime {

Result<void> ArchiveSet::check_compatible(const archive::Archive& a) const {
    const auto& h = a.header();
    if (kernel_abi_major_ != 0 && h.kernel_abi_major != kernel_abi_major_)
        return make_error(ErrorCode::mismatch, "archive " + a.label() + " holds kernels of kernel ABI " + std::to_string(h.kernel_abi_major) + "." +
                                                   std::to_string(h.kernel_abi_minor) + ", but this host was built for kernel ABI " +
                                                   std::to_string(kernel_abi_major_) + ".x (sdm_runtime_params.kernel_abi_major). Use an archive built for kernel ABI " +
                                                   std::to_string(kernel_abi_major_) + ", or rebuild the host for " + std::to_string(h.kernel_abi_major));
    return {};
}

namespace {

// The manifest indexed in place (a stored one, as the sdm writer writes it, is never copied); each
// kernel's fields are decoded at its first use.
Result<void> decode_manifest_of(MountedArchive& mounted) {
    const auto index = mounted.archive.find_manifest();
    if (!index) return {};
    Bytes bytes;
    if (mounted.archive.entries()[*index].codec == archive::Codec::stored) {
        SDM_TRY_GET(view, mounted.archive.view(*index));
        bytes = *view;
    } else {
        SDM_TRY_GET(raw, mounted.archive.read(*index));
        mounted.manifest_bytes = std::move(*raw);
        bytes = mounted.manifest_bytes;
    }
    auto built = archive::ManifestIndex::build(bytes);
    if (!built) return make_error(built.error().code, mounted.archive.describe(*index) + ": " + built.error().message);
    mounted.manifest = std::move(*built);
    return {};
}

// What identifies a file's version on disk: device, inode, size, modification time (ns).
using FileVersion = std::tuple<uint64_t, uint64_t, uint64_t, int64_t>;

std::optional<FileVersion> on_disk(const std::string& path) {
    const auto st = platform::path_status(path);
    if (!st) return std::nullopt;
    return FileVersion{st->device, st->inode, st->size, st->mtime_ns};
}

FileVersion mapped(const archive::FileMap& map) { return {map.device(), map.inode(), map.bytes().size(), map.mtime_ns()}; }

// An overlay (sdm jit: format 1.2 with kFeatureBase) serves only above the archive it was built
// from: one of the archives beneath it in the layer order must have the identity it names.
Result<void> check_base(const MountedArchive& overlay, std::span<const std::shared_ptr<const MountedArchive>> beneath) {
    const auto& base = overlay.archive.header().base;
    if (!base) return {};
    std::string seen;
    for (const auto& m : beneath) {
        if (m->identity() == *base) return {};
        seen += (seen.empty() ? "" : ", ") + m->archive.label() + " " + archive::identity_text(m->identity());
    }
    return make_error(ErrorCode::mismatch, "archive " + overlay.archive.label() + " is an overlay built (sdm jit) from the archive " +
                                               archive::identity_text(*base) + ", and no archive beneath it is that one (" +
                                               (seen.empty() ? std::string("none is mounted beneath it") : "beneath it: " + seen) +
                                               "); it is not served, so that no cubin linked from other PTX serves. Rebuild the overlay "
                                               "with `sdm jit` from the archive it is to serve above, or mount its base before it");
}

}  // namespace

// After a reload replaced some archives: the overlays whose base is no longer beneath them stop
// serving (each logged with both identities), in layer order, so an overlay of a removed overlay
// goes too. Called with mutex_ held.
std::vector<std::shared_ptr<const MountedArchive>> ArchiveSet::drop_stale_overlays(std::string_view after) {
    std::vector<std::shared_ptr<const MountedArchive>> kept, dropped;
    for (auto& m : archives_) {
        if (auto bound = check_base(*m, kept); !bound) {
            log_.warn(std::string(after) + ", " + bound.error().message);
            dropped.push_back(std::move(m));
            continue;
        }
        kept.push_back(std::move(m));
    }
    archives_ = std::move(kept);
    return dropped;
}

Result<void> ArchiveSet::reload(bool changed_only, uint32_t& reloaded, const std::function<void(const MountedArchive*)>& retire,
                                const std::function<Result<void>(const MountedArchive& old, const MountedArchive& fresh)>& contract) {
    reloaded = 0;
    std::lock_guard serial(reload_mutex_);
    std::optional<Error> first;
    for (const auto& old : archives()) {
        const archive::FileMap* map = old->archive.file();
        if (map == nullptr || old->embedded) continue;  // memory and embedded archives do not change
        const auto now = on_disk(map->path());
        if (changed_only && now == mapped(*map)) continue;
        {  // a poll reports a refused version once; sdm_runtime_reload tries it again
            std::lock_guard lock(mutex_);
            const auto refused = refused_.find(map->path());
            if (changed_only && refused != refused_.end() && now && refused->second == *now) continue;
        }
        auto fresh = [&]() -> Result<std::shared_ptr<MountedArchive>> {
            SDM_TRY_GET(a, archive::Archive::open_file(map->path()));
            // Admitted first, as a mount is: the policy and the kernel ABI read only the metadata,
            // and an archive they refuse (an unsigned one under require) costs no decoding.
            SDM_TRY_GET(signers, provenance_.admit(*a, false));
            SDM_TRY(check_compatible(*a));
            // A new version replaces one that works only when all of it is sound: every checksum,
            // every image against its declared target, the manifest.
            SDM_TRY(archive::verify_archive(*a));
            auto m = std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, nullptr, {}});
            SDM_TRY(decode_manifest_of(*m));
            SDM_TRY(contract(*old, *m));
            if (m->archive.header().base) {  // an overlay: its base must be beneath the place it takes
                const auto set = archives();
                const auto at = std::find(set.begin(), set.end(), old);
                SDM_TRY(check_base(*m, std::span(set.begin(), at)));
            }
            SDM_TRY(provenance_.record(m->archive, *signers));
            return m;
        }();
        if (!fresh) {
            Error e = std::move(fresh).error();
            e.message = "reloading " + map->path() + " failed; the version mounted before keeps serving: " + e.message;
            log_.warn(e.message);
            if (now) {
                std::lock_guard lock(mutex_);
                refused_[map->path()] = *now;
            }
            if (!first) first = std::move(e);
            continue;
        }
        // Byte-identical metadata (every entry's checksums included) is the same archive: keep it.
        const auto meta = [](const archive::Archive& a) { return a.file()->bytes().first(static_cast<size_t>(a.header().payload_offset)); };
        const auto before = meta(old->archive), after = meta((*fresh)->archive);
        if (before.size() == after.size() && std::equal(before.begin(), before.end(), after.begin())) continue;
        std::vector<std::shared_ptr<const MountedArchive>> dropped;
        {
            std::lock_guard lock(mutex_);
            std::replace(archives_.begin(), archives_.end(), old, std::shared_ptr<const MountedArchive>(*fresh));
            dropped = drop_stale_overlays("after the reload");
            generation_.fetch_add(1, std::memory_order_acq_rel);
        }
        retire(old.get());
        for (const auto& gone : dropped) retire(gone.get());
        ++reloaded;
        log_.info("reloaded archive " + map->path() + " (" + std::to_string((*fresh)->archive.entries().size()) + " entries)");
    }
    if (first) return *first;
    return {};
}

Result<void> ArchiveSet::unmount(std::string_view label, uint32_t& unmounted, const std::function<void(const MountedArchive*)>& retire) {
    unmounted = 0;
    std::lock_guard serial(reload_mutex_);  // not under a reload that is replacing it
    std::shared_ptr<const MountedArchive> gone;
    std::vector<std::shared_ptr<const MountedArchive>> dropped;
    {
        std::lock_guard lock(mutex_);
        std::string mounted;
        size_t matches = 0;
        for (const auto& m : archives_) {
            mounted += (mounted.empty() ? "" : ", ") + m->archive.label();
            if (m->archive.label() == label) {
                ++matches;
                gone = m;
            }
        }
        if (matches == 0)
            return make_error(ErrorCode::not_found, "no archive mounted as " + printable(std::string(label)) + " to unmount (mounted: " +
                                                        (mounted.empty() ? std::string("none") : mounted) +
                                                        "); name it as sdm_archive_info_get's label does: its path as mounted, or the label given");
        if (matches > 1)
            return make_error(ErrorCode::ambiguous, "archive " + printable(std::string(label)) + " is mounted " + std::to_string(matches) +
                                                        " times; unmount is refused, since it could not tell which one the host meant. Mount an archive once, "
                                                        "or under labels of its own (sdm_archive_mount_memory)");
        std::erase(archives_, gone);
        dropped = drop_stale_overlays("after unmounting " + gone->archive.label());
        generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    retire(gone.get());
    for (const auto& overlay : dropped) retire(overlay.get());
    unmounted = static_cast<uint32_t>(1 + dropped.size());
    log_.info("unmounted archive " + gone->archive.label() + (dropped.empty() ? std::string() : " and " + std::to_string(dropped.size()) + " overlay(s) on it") +
              "; its kernels already fetched keep working until released");
    return {};
}

Result<void> ArchiveSet::mount(std::shared_ptr<MountedArchive> mounted) {
    SDM_TRY_GET(signers, provenance_.admit(mounted->archive, mounted->embedded));
    SDM_TRY(check_compatible(mounted->archive));
    SDM_TRY(decode_manifest_of(*mounted));
    if (mounted->archive.header().base) SDM_TRY(check_base(*mounted, archives()));
    SDM_TRY(provenance_.record(mounted->archive, *signers));  // last: a refused archive raises no mark
    log_.info("mounted archive " + mounted->archive.label() + " (" + std::to_string(mounted->archive.entries().size()) + " entries)");
    std::lock_guard lock(mutex_);
    archives_.push_back(std::move(mounted));
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

Result<void> ArchiveSet::mount_file(const std::string& path) {
    const TraceRange range("mount", path);
    SDM_TRY_GET(a, archive::Archive::open_file(path));
    auto mounted = std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, nullptr, {}});
    return mount(std::move(mounted));
}

Result<void> ArchiveSet::mount_memory(Bytes bytes, const std::string& label) {
    const TraceRange range("mount", label);
    auto owned = std::make_shared<const ByteVector>(bytes.begin(), bytes.end());
    SDM_TRY_GET(a, archive::Archive::open_memory(*owned, label, owned));
    return mount(std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, false, owned, {}}));
}

std::vector<std::shared_ptr<const MountedArchive>> ArchiveSet::archives() const {
    std::lock_guard lock(mutex_);
    return archives_;
}

void ArchiveSet::skipped(std::string why) {
    std::lock_guard lock(mutex_);
    skipped_.push_back(std::move(why));
}

std::vector<std::string> ArchiveSet::skipped_archives() const {
    std::lock_guard lock(mutex_);
    return skipped_;
}

}  // namespace sdm::runtime
