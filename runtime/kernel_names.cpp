#include "kernel_names.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "archive/cxx_names.hpp"
#include "common/edit_distance.hpp"
#include "archive_set.hpp"
#include "jit_toolchain.hpp"
#include "common/text.hpp"

namespace sdm::runtime {

namespace {

// A requested name in a message: printable, and at most 256 bytes of it.
std::string shown(std::string_view name) {
    if (name.size() <= 256) return printable(std::string(name));
    return printable(std::string(name.substr(0, 256))) + "... (" + std::to_string(name.size()) + " bytes)";
}

// A kernel as a message lists it: its C++ declaration (when it has one) and its listed name.
std::string kernel_text(JitToolchain& jit, const MountedArchive& m, uint32_t k) {
    const std::string_view name = m.manifest->kernels()[k].name;
    const std::string& d = kernel_names(jit, m).demangled(k);
    return d.empty() ? shown(name) : shown(d) + " (" + shown(name) + ")";
}

}  // namespace

std::vector<std::string> demangled_names(JitToolchain& jit, const MountedArchive& archive) {
    const auto kernels = archive.manifest->kernels();
    std::vector<std::string> out(kernels.size());
    std::vector<uint32_t> mangled;  // the kernels whose names are C++ symbols
    for (uint32_t i = 0; i < kernels.size(); ++i)
        if (kernels[i].name.starts_with("_Z") && kernels[i].name.size() <= archive::kMaxDemangledSymbol) mangled.push_back(i);
    if (mangled.empty()) return out;
    const std::string label = archive.archive.label();
    if (archive.embedded || jit.isolation().policy == JitIsolation::never) {  // the trusted archive, or the host's choice
        for (const uint32_t i : mangled)
            if (auto d = archive::demangle(kernels[i].name); d && d->size() <= kMaxDemangledOutput) out[i] = std::move(*d);
        return out;
    }
    auto helper = jit.helper();
    if (!helper) {
        jit.log().warn("the C++ names of archive " + label + "'s kernels are not indexed (they are found by their mangled names only): " +
                           helper.error().message);
        return out;
    }
    JitLimits limits = jit.isolation().limits;
    limits.seconds = std::min(limits.seconds, 10.0);
    limits.memory_bytes = std::min<uint64_t>(limits.memory_bytes, uint64_t{1} << 30);
    // The helper writes each result as it goes: a run that dies leaves the names before the one it
    // died on done; that one is left out and the next run starts after it.
    size_t next = 0, left_out = 0;
    std::string why;
    for (int runs = 0; next < mangled.size(); ++runs) {
        if (runs == 8) {
            left_out += mangled.size() - next;
            why += (why.empty() ? "" : "; ") + std::string("the rest after 8 helper runs");
            break;
        }
        std::string names;
        for (size_t k = next; k < mangled.size(); ++k) {
            if (k != next) names += '\0';
            names += kernels[mangled[k]].name;
        }
        auto run = run_demangler(*helper, names, mangled.size() - next, limits);
        if (!run) {
            left_out += mangled.size() - next;
            why = run.error().message;
            break;
        }
        for (size_t k = 0; k < run->demangled.size(); ++k) out[mangled[next + k]] = std::move(run->demangled[k]);
        next += run->demangled.size();
        if (run->complete) break;
        ++left_out;  // the name it died on
        why = run->how + " on kernel " + shown(kernels[mangled[next]].name);
        ++next;
    }
    if (left_out > 0)
        jit.log().warn(std::to_string(left_out) + " kernel name(s) of archive " + label + " were not demangled (they are found by their mangled names only): " + why);
    return out;
}

const KernelNameIndex& kernel_names(JitToolchain& jit, const MountedArchive& archive) {
    KernelNamesOnce& cell = *archive.names;
    std::call_once(cell.once, [&] { cell.index = std::make_unique<const KernelNameIndex>(*archive.manifest, demangled_names(jit, archive)); });
    return *cell.index;
}

Result<std::string> resolve_kernel_name(const ArchiveSet& set, JitToolchain& jit, std::string_view requested) {
    const auto archives = set.archives();
    std::string key;
    if (requested.starts_with("_Z")) {  // a mangled name no archive lists: its declaration may match another spelling
        if (auto d = archive::demangle(requested)) key = archive::normalize_cxx(*d);
    } else {
        if (auto parsed = archive::check_cxx_brackets(requested); !parsed)
            return make_error(ErrorCode::invalid_argument, "kernel name '" + shown(requested) + "' does not parse as a C++ name: " + parsed.error().message +
                                                               " (a name as an archive lists it, a declaration as c++filt prints it, or a name "
                                                               "expression such as \"ns::fill<float, 256>\")");
        key = archive::normalize_cxx(requested);
    }
    // The matches at the most specific level, across archives (the newest first); one listed name
    // may come from several archives (an overlay), which is one kernel.
    int best = 4;
    std::vector<std::pair<const MountedArchive*, uint32_t>> matches;
    std::set<std::string_view> names;
    std::string mounted;
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
        const MountedArchive& m = **it;
        mounted += (mounted.empty() ? "" : ", ") + m.archive.label();
        if (!m.manifest || key.empty()) continue;
        const auto match = kernel_names(jit, m).find(key);
        if (!match || match->level > best) continue;
        if (match->level < best) {
            best = match->level;
            matches.clear();
            names.clear();
        }
        for (const uint32_t k : *match->kernels)
            if (names.insert(m.manifest->kernels()[k].name).second) matches.emplace_back(&m, k);
    }
    if (matches.size() == 1) return std::string(matches[0].first->manifest->kernels()[matches[0].second].name);
    if (matches.size() > 1) {
        std::string list;
        for (size_t i = 0; i < matches.size() && i < 10; ++i) list += "\n  " + kernel_text(jit, *matches[i].first, matches[i].second);
        if (matches.size() > 10) list += "\n  and " + std::to_string(matches.size() - 10) + " more";
        return make_error(ErrorCode::ambiguous, "kernel name '" + shown(requested) + "' matches " + std::to_string(matches.size()) +
                                                    " kernels; ask for one by its template arguments (a name expression such as "
                                                    "\"ns::fill<float, 256>\"), its whole declaration or its mangled name:" + list);
    }
    // The closest kernels: by edit distance between unqualified names without template arguments
    // (short, so the work is bounded whatever the names' lengths).
    constexpr size_t kCompared = 96;
    const std::string_view base = archive::cxx_base_name(key.empty() ? std::string_view(requested) : std::string_view(key)).substr(0, kCompared);
    size_t best_distance = std::max<size_t>(2, base.size() / 3) + 1;
    std::vector<std::pair<const MountedArchive*, uint32_t>> near;
    std::set<std::string_view> near_names;
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
        const MountedArchive& m = **it;
        if (!m.manifest) continue;
        for (const auto& [candidate, kernels] : kernel_names(jit, m).bases()) {
            const size_t d = edit_distance(base, candidate.substr(0, kCompared));
            if (d > best_distance) continue;
            if (d < best_distance) {
                best_distance = d;
                near.clear();
                near_names.clear();
            }
            for (const uint32_t k : kernels)
                if (near.size() < 4 && near_names.insert(m.manifest->kernels()[k].name).second) near.emplace_back(&m, k);
        }
    }
    std::string hint;
    for (const auto& [m, k] : near) hint += (hint.empty() ? "" : "; ") + kernel_text(jit, *m, k);
    return make_error(ErrorCode::not_found, "kernel " + shown(requested) + " is in no mounted archive (" + (mounted.empty() ? "none is mounted" : "mounted: " + mounted) +
                                                ")" + (hint.empty() ? "" : "; the closest: " + hint) +
                                                ". Mount the archive that lists it; list the kernels with sdm_kernel_list_create or `sdm ls --demangle ARCHIVE`");
}

Result<std::vector<KernelListing>> list_kernels(const ArchiveSet& set, JitToolchain& jit, std::optional<uint32_t> archive_index) {
    const auto archives = set.archives();
    if (archive_index && *archive_index >= archives.size())
        return make_error(ErrorCode::not_found, "there is no mounted archive " + std::to_string(*archive_index) + " (" + std::to_string(archives.size()) +
                                                    " mounted; sdm_archive_count)");
    // The newest archive listing each name serves it.
    std::map<std::string_view, uint32_t> newest;
    for (uint32_t a = 0; a < archives.size(); ++a)
        if (archives[a]->manifest)
            for (const auto& k : archives[a]->manifest->kernels()) newest[k.name] = a;
    std::vector<KernelListing> out;
    for (uint32_t a = 0; a < archives.size(); ++a) {
        if (archive_index && a != *archive_index) continue;
        const MountedArchive& m = *archives[a];
        if (!m.manifest) continue;
        const auto kernels = m.manifest->kernels();
        const KernelNameIndex& names = kernel_names(jit, m);
        std::map<std::string_view, std::string> targets;  // per module
        for (uint32_t i = 0; i < kernels.size(); ++i) {
            const bool shadowed = newest[kernels[i].name] != a;
            if (!archive_index && shadowed) continue;
            SDM_TRY_GET(spec, m.manifest->spec(kernels[i]));
            auto& t = targets[kernels[i].module];
            if (t.empty()) {
                const auto [first, last] = m.archive.find_name(kernels[i].module);
                for (size_t e = first; e < last; ++e) {
                    const auto& entry = m.archive.entries()[e];
                    if (archive::kind_has_arch(entry.kind) || entry.kind == archive::Kind::fatbin) t += (t.empty() ? "" : ",") + entry.target();
                }
            }
            out.push_back({a, std::string(kernels[i].name), names.demangled(i), std::string(kernels[i].module), archive::signature_text(spec->signature), t,
                           archive_index.has_value() && shadowed});
        }
    }
    std::sort(out.begin(), out.end(), [](const KernelListing& x, const KernelListing& y) { return x.name < y.name; });
    return out;
}

}  // namespace sdm::runtime
