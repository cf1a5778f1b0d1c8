#include "overlays.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "archive/identity.hpp"
#include "archive/file_map.hpp"
#include "archive/signature_block.hpp"
#include "oci/artifact.hpp"

namespace sdm::tools {
namespace {

// The items of a comma-separated annotation ("compute_90,sm_90,sm_100").
std::vector<std::string> split_list(const std::string& listed) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= listed.size()) {
        const size_t comma = std::min(listed.find(',', at), listed.size());
        out.push_back(listed.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

// The items of `listed` that are in `wanted`.
std::set<std::string> listed_of(const std::string& listed, const std::set<std::string>& wanted) {
    std::set<std::string> out;
    for (auto& item : split_list(listed))
        if (wanted.count(item) != 0) out.insert(std::move(item));
    return out;
}

std::string annotation(const std::map<std::string, std::string>& a, const std::string& key) {
    const auto found = a.find(key);
    return found == a.end() ? std::string() : found->second;
}

// What an overlay's staged archive must be, whatever its manifest said: built from the installed
// base (its header's base identity) and holding a cubin for `target`.
StagedCheck overlay_check(const Hash128& base, const std::string& base_file, const std::string& target) {
    return [=](const archive::Archive& a) -> Result<void> {
        if (!a.header().base || *a.header().base != base)
            return make_error(ErrorCode::mismatch, "archive " + a.label() + " is not an overlay of " + base_file + " (" + archive::identity_text(base) +
                                                       "): its header names " + (a.header().base ? archive::identity_text(*a.header().base) : "no base"));
        const bool serves = std::any_of(a.entries().begin(), a.entries().end(),
                                        [&](const archive::Entry& e) { return e.kind == archive::Kind::cubin && e.target() == target; });
        if (!serves) return make_error(ErrorCode::mismatch, "archive " + a.label() + " holds no " + target + " cubin, though it was listed for " + target);
        return {};
    };
}

struct Node {  // what the overlays are pulled for
    std::set<std::string> targets;
    Hash128 base_identity{};
    std::string base_file;  // the installed base
    std::string stem;       // its path less .sdma
};

Result<Pulled> install(const PullOptions& o, const oci::Reference& ref, const Node& node, const std::string& digest, const std::string& target,
                       InstallCheck& install_check) {
    PullOptions one = o;
    one.output = node.stem + ".overlay-" + digest.substr(7, 12) + ".sdma";  // from the digest's hex only: never a name from the registry
    oci::Reference by_digest = ref;
    by_digest.digest = digest;
    return pull_artifact(one, by_digest, install_check, overlay_check(node.base_identity, node.base_file, target));
}

// The pinned digests: each fetched by digest and checked as a referrer of the base; every one
// that serves a GPU here is installed (an error when two serve one target, or one fails).
Result<size_t> install_pinned(const PullOptions& o, const oci::Reference& ref, const Pulled& base, const Node& node,
                              const std::vector<std::string>& pinned, InstallCheck& install_check) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    std::map<std::string, std::string> chosen;  // target -> digest
    for (const auto& digest : std::set<std::string>(pinned.begin(), pinned.end())) {
        SDM_TRY_GET(fetched, registry->manifest(digest, oci::kManifestMediaType));
        SDM_TRY_GET(m, oci::parse_artifact_manifest(fetched->bytes, ref.repository + "@" + digest));
        if (!m->subject || m->subject->digest != base.digest)
            return make_error(ErrorCode::mismatch, "pinned overlay " + digest + " is " +
                                                       (m->subject ? "a referrer of " + m->subject->digest : std::string("no referrer")) +
                                                       ", not of the archive pulled (" + base.digest + "): pin the overlays of this base (sdm lock --overlays)");
        const auto serves = listed_of(annotation(m->annotations, "io.sdm.targets"), node.targets);
        if (serves.empty() && !o.quiet) fmt::print("pinned overlay {} serves none of this machine's GPUs ({}): skipped\n", digest, fmt::join(node.targets, ", "));
        for (const auto& t : serves)
            if (const auto [at, added] = chosen.emplace(t, digest); !added)
                return make_error(ErrorCode::invalid_argument, "two pinned overlays serve " + t + ": " + at->second + " and " + digest +
                                                                   "; at most one overlay per GPU target: pin one");
    }
    std::set<std::string> done;
    for (const auto& [target, digest] : chosen) {
        if (!done.insert(digest).second) continue;
        SDM_TRY_GET(pulled, install(o, ref, node, digest, target, install_check));
        if (!o.quiet) fmt::print("overlay {}@{} (pinned, {}) -> {}\n", ref.repository, digest, target, pulled->target);
    }
    return done.size();
}

// The referrers index of `base_digest` (the fallback tag sdm push maintains), bounded; none: empty.
Result<std::vector<oci::Referrer>> read_referrers(oci::Registry& registry, const std::string& base_digest, const std::string& label) {
    auto index = registry.manifest("sha256-" + base_digest.substr(7), oci::kIndexMediaType);
    if (!index) {
        if (index.error().code == ErrorCode::not_found) return std::vector<oci::Referrer>{};
        return std::move(index).error();
    }
    SDM_TRY_GET(listed, oci::parse_referrers(index->bytes, label + " referrers"));
    if (listed->size() > kMaxReferrers)
        return make_error(ErrorCode::invalid_argument, label + ": its referrers index lists " + std::to_string(listed->size()) + " manifests, more than the " +
                                                           std::to_string(kMaxReferrers) + " sdm considers; pin the overlays by digest (--overlay DIGEST)");
    std::vector<oci::Referrer> out;
    std::set<std::string> seen;  // a digest listed twice is one candidate
    for (auto& r : *listed)
        if (r.artifact_type == oci::kArtifactType && seen.insert(r.manifest.digest).second) out.push_back(std::move(r));
    return out;
}

// The signed path: for each GPU target, the candidates that name it and a trusted signer, newest
// archive version first, tried until one passes every check (a failure is said and skipped:
// one bad referrer does not deny the others).
Result<size_t> install_signed(const PullOptions& o, const oci::Reference& ref, const Pulled& base, const Node& node, InstallCheck& install_check) {
    SDM_TRY_GET(registry, oci::Registry::open(ref, {o.plain_http, o.docker_config, o.stall_timeout_s}));
    SDM_TRY_GET(referrers, read_referrers(*registry, base.digest, ref.text()));
    std::set<std::string> trusted;
    for (const auto& id : install_check.trusted_ids()) trusted.insert(archive::key_id_text(id));
    const auto version = [](const oci::Referrer& r) {
        const std::string v = annotation(r.manifest.annotations, "io.sdm.archive-version");
        return v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos ? uint64_t{0} : std::stoull(v);
    };
    std::stable_sort(referrers->begin(), referrers->end(), [&](const auto& a, const auto& b) { return version(a) > version(b); });
    std::set<std::string> served, installed;
    for (const auto& target : node.targets) {
        if (served.count(target) != 0) continue;
        size_t attempts = 0;
        for (const auto& r : *referrers) {
            if (listed_of(annotation(r.manifest.annotations, "io.sdm.targets"), {target}).empty()) continue;
            if (listed_of(annotation(r.manifest.annotations, "io.sdm.signers"), trusted).empty()) continue;  // a hint; the archive is checked
            if (attempts++ == kMaxOverlayAttempts) {
                fmt::print(stderr, "sdm pull: {}: {} signed candidates for {} failed; the rest are not tried\n", ref.text(), kMaxOverlayAttempts, target);
                break;
            }
            auto pulled = install(o, ref, node, r.manifest.digest, target, install_check);
            if (!pulled) {
                fmt::print(stderr, "sdm pull: {}: overlay {} for {} skipped: {}\n", ref.text(), r.manifest.digest, target, pulled.error().message);
                continue;
            }
            installed.insert(r.manifest.digest);
            for (const auto& t : listed_of(annotation(r.manifest.annotations, "io.sdm.targets"), node.targets)) served.insert(t);
            if (!o.quiet) fmt::print("overlay {}@{} (signed, {}) -> {}\n", ref.repository, r.manifest.digest, target, pulled->target);
            break;
        }
    }
    return installed.size();
}

}  // namespace

Result<size_t> pull_overlays(const PullOptions& o, const oci::Reference& ref, const Pulled& base, const std::vector<std::string>& pinned,
                             InstallCheck& install_check) {
    Node node;
    SDM_TRY_GET(targets, device_targets(o));
    if (targets->empty()) return make_error(ErrorCode::not_found, "--for-devices: the driver lists no GPU on this machine");
    node.targets = std::move(*targets);
    node.base_file = base.target;
    node.stem = base.target.substr(0, base.target.size() - (base.target.ends_with(".sdma") ? 5 : 0));
    SDM_TRY_GET(map, archive::FileMap::open(base.target));
    SDM_TRY_GET(opened, archive::Archive::open_memory((*map)->bytes(), base.target, *map));
    node.base_identity = archive::identity(*opened);
    size_t installed = 0;
    if (!pinned.empty()) {
        SDM_TRY_GET(n, install_pinned(o, ref, base, node, pinned, install_check));
        installed = *n;
    } else if (install_check.requires_signature()) {
        SDM_TRY_GET(n, install_signed(o, ref, base, node, install_check));
        installed = *n;
    } else {
        if (!o.quiet)
            fmt::print("{}: no overlay installed: --for-devices installs only overlays pinned (--overlay DIGEST, or sdm lock --overlays with "
                       "--locked) or signed by a trusted key (--trust KEY.pub): the referrers index is not theirs to grant\n",
                       base.target);
        return size_t{0};
    }
    if (installed == 0 && !o.quiet)
        fmt::print("{}: no overlay holds a cubin for this machine's GPUs ({})\n", base.target, fmt::join(node.targets, ", "));
    return installed;
}

Result<std::vector<LockedOverlay>> listed_overlays(oci::Registry& registry, const std::string& base_digest, const std::string& label) {
    SDM_TRY_GET(referrers, read_referrers(registry, base_digest, label));
    std::vector<LockedOverlay> out;
    std::map<std::string, std::string> by_target;
    for (const auto& r : *referrers) {
        SDM_TRY_GET(fetched, registry.manifest(r.manifest.digest, oci::kManifestMediaType));
        SDM_TRY_GET(m, oci::parse_artifact_manifest(fetched->bytes, label + " referrer " + r.manifest.digest));
        if (!m->subject || m->subject->digest != base_digest) continue;  // the index lies about it: not a referrer of this base
        const std::string targets = annotation(m->annotations, "io.sdm.targets");
        for (const auto& t : split_list(targets)) {
            if (!t.starts_with("sm_")) continue;
            if (const auto [it, added] = by_target.emplace(t, r.manifest.digest); !added)
                return make_error(ErrorCode::invalid_argument, label + ": two overlays are listed for " + t + " (" + it->second + " and " + r.manifest.digest +
                                                                   "); lock one: sdm pull --overlay DIGEST pins it without the lock");
        }
        out.push_back({r.manifest.digest, targets});
    }
    return out;
}

}  // namespace sdm::tools
