// sdm diff: entries added, removed and changed between two archives, and the manifest's changes.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>

#include "commands.hpp"
#include "archive/manifest.hpp"
#include "archive/archive.hpp"

namespace sdm::tools {
namespace {

std::string key_text(const archive::Entry& e) {
    return fmt::format("{}:{}", e.name, archive::kind_has_arch(e.kind) ? e.target() : archive::kind_name(e.kind));
}

}  // namespace

int run_diff(const std::string& left_path, const std::string& right_path, bool json) {
    auto left = archive::Archive::open_file(left_path);
    auto right = archive::Archive::open_file(right_path);
    for (const auto* a : {&left, &right})
        if (!*a) {
            fmt::print(stderr, "sdm diff: {}\n", a->error().message);
            return 2;
        }
    std::map<std::string, const archive::Entry*> l, r;
    for (const auto& e : left->entries())
        if (e.kind != archive::Kind::dictionary && e.kind != archive::Kind::manifest) l[key_text(e)] = &e;
    for (const auto& e : right->entries())
        if (e.kind != archive::Kind::dictionary && e.kind != archive::Kind::manifest) r[key_text(e)] = &e;
    std::vector<std::string> added, removed, changed;
    for (const auto& [k, e] : r)
        if (!l.count(k)) added.push_back(k);
    // Two entries hold the same image when their identities (BLAKE2b of what they store, archive.hpp)
    // agree; else when their raw bytes do, decoded and compared. Equal XXH3 checksums prove
    // nothing: two images of one XXH3-128 cost milliseconds to make.
    const auto index_of = [](const archive::Archive& a, const archive::Entry* e) { return static_cast<size_t>(e - a.entries().data()); };
    std::optional<Error> unreadable;
    const auto same_image = [&](const archive::Entry* a, const archive::Entry* b) {
        if (a->raw_size != b->raw_size || a->raw_hash != b->raw_hash) return false;
        const size_t i = index_of(*left, a), j = index_of(*right, b);
        if (left->identity(i) == right->identity(j)) return true;
        auto x = left->read(i), y = right->read(j);
        if (!x || !y) {
            if (!unreadable) unreadable = x ? y.error() : x.error();
            return false;
        }
        return *x == *y;
    };
    for (const auto& [k, e] : l) {
        const auto it = r.find(k);
        if (it == r.end()) removed.push_back(k);
        else if (!same_image(e, it->second)) changed.push_back(k);
    }
    if (unreadable) {
        fmt::print(stderr, "sdm diff: {}\n", unreadable->message);
        return 2;
    }
    // Manifest: ABI, content version, kernels.
    std::vector<std::string> manifest_changes;
    auto left_manifest = left->read_manifest(), right_manifest = right->read_manifest();
    for (const auto* m : {&left_manifest, &right_manifest})
        if (!*m) {
            fmt::print(stderr, "sdm diff: {}\n", m->error().message);
            return 2;
        }
    const auto& lm = *left_manifest;
    const auto& rm = *right_manifest;
    if (lm.has_value() != rm.has_value()) {
        manifest_changes.push_back(lm ? "manifest removed" : "manifest added");
    } else if (lm) {
        if (lm->kernel_abi_major != rm->kernel_abi_major || lm->kernel_abi_minor != rm->kernel_abi_minor)
            manifest_changes.push_back(fmt::format("kernel ABI {}.{} -> {}.{}", lm->kernel_abi_major, lm->kernel_abi_minor, rm->kernel_abi_major,
                                                   rm->kernel_abi_minor));
        if (lm->content_version != rm->content_version)
            manifest_changes.push_back(fmt::format("content version {} -> {}", lm->content_version, rm->content_version));
        // A kernel by its name, or by its module-qualified name where several modules list it.
        const auto scoped = [&](const archive::KernelSpec& k) { return lm->kernels_named(k.name).size() > 1 || rm->kernels_named(k.name).size() > 1; };
        const auto label = [&](const archive::KernelSpec& k) { return scoped(k) ? archive::qualified_name(k.module, k.name) : k.name; };
        const auto find = [&](const archive::Manifest& m, const archive::KernelSpec& k) { return m.find_kernel(k.name, scoped(k) ? k.module : std::string()); };
        for (const auto& k : rm->kernels)
            if (!find(*lm, k)) manifest_changes.push_back("kernel added: " + label(k));
        for (const auto& k : lm->kernels) {
            const auto* other = find(*rm, k);
            if (!other) {
                manifest_changes.push_back("kernel removed: " + label(k));
                continue;
            }
            if (other->module != k.module) manifest_changes.push_back(fmt::format("kernel {}: module {} -> {}", k.name, k.module, other->module));
            if (other->signature != k.signature)
                manifest_changes.push_back(fmt::format("kernel {}: signature {} -> {}", label(k), archive::signature_text(k.signature),
                                                       archive::signature_text(other->signature)));
            if (other->problem != k.problem || other->plans != k.plans)
                manifest_changes.push_back(fmt::format("kernel {}: plan table changed", label(k)));
        }
        if (lm->expressions != rm->expressions) manifest_changes.push_back("name expressions changed");
    }
    const bool same = added.empty() && removed.empty() && changed.empty() && manifest_changes.empty();
    if (json) {
        fmt::print("{}\n", nlohmann::json{{"added", added}, {"removed", removed}, {"changed", changed}, {"manifest", manifest_changes}, {"identical", same}}
                               .dump(2));
    } else if (same) {
        fmt::print("{} and {} hold the same entries and manifest\n", left_path, right_path);
    } else {
        for (const auto& k : added) fmt::print("+ {}\n", k);
        for (const auto& k : removed) fmt::print("- {}\n", k);
        for (const auto& k : changed) fmt::print("~ {}\n", k);
        for (const auto& k : manifest_changes) fmt::print("! manifest: {}\n", k);
        fmt::print("{} added, {} removed, {} changed, {} manifest changes\n", added.size(), removed.size(), changed.size(), manifest_changes.size());
    }
    return same ? 0 : 1;
}

}  // namespace sdm::tools
