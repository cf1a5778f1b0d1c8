#include "kernel_names.hpp"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <span>

#include "archive/cxx_names.hpp"
#include "common/edit_distance.hpp"
#include "runtime/archives/archive_set.hpp"
#include "runtime/jit/jit_toolchain.hpp"
#include "common/text.hpp"

namespace sdm::runtime {

namespace {

// The demangling budget of one archive (docs/LOADING.md, "Kernel names"). Time: every helper run
// of the archive together, at most 10 s, or twice the JIT time limit when that is shorter (so that
// one name that takes a run's whole limit leaves time for the others). Bytes: what a real name
// demangles to is a few times its mangled length (sdm_test::fill: 46 bytes of 36; CUTLASS's
// kernels 2 to 5 times), so 16 times the archive's mangled bytes, 1 MiB at least and 64 MiB at
// most, leaves every real archive whole and stops a crafted one at a bound of its own size.
constexpr double kDemangleSeconds = 10;
constexpr size_t kDemangledFloor = size_t{1} << 20, kDemangledPerMangledByte = 16, kDemangledCap = size_t{64} << 20;
// A helper run's reply may hold up to kMaxDemangledOutput per name: a run asks for no more names
// than the bytes left allow, so the replies stay within the budget too. Each name a run dies on
// costs a run: at most 64 such.
constexpr size_t kMaxDeaths = 64;

// The index of `m` if it is built (never builds it, never waits).
const KernelNameIndex* built_names(const MountedArchive& m) { return m.names->built.load(std::memory_order_acquire); }

// A kernel as a message lists it: its C++ declaration (when its archive's index is built and has
// one) and its listed name.
std::string kernel_text(const MountedArchive& m, uint32_t k) {
    const std::string_view name = m.manifest->kernels()[k].name;
    const KernelNameIndex* names = built_names(m);
    const std::string_view d = names != nullptr ? names->demangled(k) : std::string_view();
    return d.empty() ? shown_name(name) : shown_name(d) + " (" + shown_name(name) + ")";
}

std::string format_mib(size_t bytes) { return std::to_string((bytes + (size_t{1} << 19)) >> 20) + " MiB"; }

}  // namespace

size_t demangled_bytes_budget(size_t mangled_bytes) noexcept {
    return std::min(kDemangledCap, kDemangledFloor + kDemangledPerMangledByte * std::min(mangled_bytes, kDemangledCap));
}

std::vector<std::string> demangled_names(JitToolchain& jit, const MountedArchive& archive) {
    const auto kernels = archive.manifest->kernels();
    std::vector<std::string> out(kernels.size());
    std::vector<uint32_t> mangled;  // the kernels whose names are C++ symbols
    size_t mangled_bytes = 0;
    for (uint32_t i = 0; i < kernels.size(); ++i)
        if (kernels[i].name.starts_with("_Z") && kernels[i].name.size() <= archive::kMaxDemangledSymbol) {
            mangled.push_back(i);
            mangled_bytes += kernels[i].name.size();
        }
    if (mangled.empty()) return out;
    const std::string label = archive.archive.label();
    const size_t budget = demangled_bytes_budget(mangled_bytes);
    const std::string over_budget = "their demangled names would pass the archive's budget of " + format_mib(budget) +
                                    " (16 times its mangled names' bytes, from 1 to 64 MiB)";
    size_t spent = 0;
    if (archive.embedded || jit.isolation().policy == JitIsolation::never) {  // the trusted archive, or the host's choice
        for (size_t k = 0; k < mangled.size(); ++k) {
            auto d = archive::demangle(kernels[mangled[k]].name);
            if (!d || d->size() > kMaxDemangledOutput) continue;
            if (d->size() > budget - spent) {
                jit.log().warn(std::to_string(mangled.size() - k) + " kernel name(s) of archive " + label +
                               " were not demangled (they are found by their mangled names only): " + over_budget);
                break;
            }
            spent += d->size();
            out[mangled[k]] = std::move(*d);
        }
        return out;
    }
    auto helper = jit.helper();
    if (!helper) {
        jit.log().warn("the C++ names of archive " + label + "'s kernels are not indexed (they are found by their mangled names only): " +
                           helper.error().message);
        return out;
    }
    JitLimits limits = jit.isolation().limits;
    const double seconds = std::min(kDemangleSeconds, 2 * limits.seconds);
    limits.memory_bytes = std::min<uint64_t>(limits.memory_bytes, uint64_t{1} << 30);
    const auto started = std::chrono::steady_clock::now();
    // The helper writes each result as it goes: a run that dies leaves the names before the one it
    // died on done; that one is left out and the next run starts after it. Every index below is
    // bounded by the names asked for, whatever a run answers.
    size_t next = 0, died = 0;
    std::string died_how, rest_why;
    while (next < mangled.size()) {
        const double left = seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (died == kMaxDeaths) rest_why = "left after " + std::to_string(kMaxDeaths) + " helper runs died";
        else if (left < 0.01) rest_why = "the archive's demangling time budget of " + std::to_string(std::lround(seconds * 1000)) + " ms was spent";
        else if (budget - spent <= kMaxDemangledOutput) rest_why = over_budget;
        if (!rest_why.empty()) break;
        const size_t count = std::min(mangled.size() - next, (budget - spent) / (kMaxDemangledOutput + 1));
        std::string names;
        for (size_t k = next; k < next + count; ++k) {
            if (k != next) names += '\0';
            names += kernels[mangled[k]].name;
        }
        limits.seconds = std::min(limits.seconds, left);
        jit.log().debug("demangling " + std::to_string(count) + " kernel name(s) of archive " + label + " in the JIT helper");
        auto run = run_demangler(*helper, names, count, limits);
        if (!run) {
            rest_why = run.error().message;
            break;
        }
        // The reply is at most count * (kMaxDemangledOutput + 1) bytes (run_demangler refuses a
        // longer one): within the room left; checked again here all the same.
        size_t done = std::min(run->demangled.size(), count);
        for (size_t k = 0; k < done; ++k) {
            if (run->demangled[k].size() > budget - spent) {
                done = k;
                rest_why = over_budget;
                break;
            }
            spent += run->demangled[k].size();
            out[mangled[next + k]] = std::move(run->demangled[k]);
        }
        next += done;
        if (!rest_why.empty()) break;
        if (done == count) continue;  // every name asked for came back, whatever the run's end
        ++died;  // the name it died on
        died_how = run->how + " on kernel " + shown_name(kernels[mangled[next]].name);
        ++next;
    }
    const size_t left_out = died + (mangled.size() - next);
    if (left_out > 0) {
        std::string why = died > 1 ? std::to_string(died) + " that a run died on, the last: " + died_how : died_how;
        if (next < mangled.size()) why += (why.empty() ? "" : "; ") + std::to_string(mangled.size() - next) + " more: " + rest_why;
        jit.log().warn(std::to_string(left_out) + " kernel name(s) of archive " + label + " were not demangled (they are found by their mangled names only): " + why);
    }
    return out;
}

const KernelNameIndex& kernel_names(JitToolchain& jit, const MountedArchive& archive) {
    KernelNamesOnce& cell = *archive.names;
    std::call_once(cell.once, [&] {
        cell.index = std::make_unique<const KernelNameIndex>(*archive.manifest, demangled_names(jit, archive));
        cell.built.store(cell.index.get(), std::memory_order_release);
    });
    return *cell.index;
}

namespace {

using Candidate = std::pair<const MountedArchive*, uint32_t>;

Error ambiguity(std::string_view requested, const std::vector<Candidate>& matches, std::string_view how) {
    std::string list;
    for (size_t i = 0; i < matches.size() && i < 10; ++i) list += "\n  " + kernel_text(*matches[i].first, matches[i].second);
    if (matches.size() > 10) list += "\n  and " + std::to_string(matches.size() - 10) + " more";
    return make_error(ErrorCode::ambiguous, "kernel name '" + shown_name(requested) + "' matches " + std::to_string(matches.size()) + " kernels" + std::string(how) +
                                           "; ask for one by its template arguments (a name expression such as \"ns::fill<float, 256>\"), its whole "
                                           "declaration or its mangled name:" + list);
}

// Whether `text` holds a literal cast to a qualified type ("(mylib::Tag)1"): how a symbol spells
// an enumerator given as a template argument. One pass.
bool enumerator_literal(std::string_view text) {
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':'; };
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '(') continue;
        size_t j = i + 1;
        while (j < text.size() && word(text[j])) ++j;
        if (j + 1 < text.size() && text[j] == ')' && text.substr(i, j - i).find("::") != std::string_view::npos &&
            (std::isdigit(static_cast<unsigned char>(text[j + 1])) != 0 || text[j + 1] == '-'))
            return true;
        i = j - 1;
    }
    return false;
}

// The closest kernels to `requested` (canonical: `key`; "" for a mangled name), for the hint of a
// failed lookup, as a message lists them.
std::string closest_kernels(std::span<const std::shared_ptr<const MountedArchive>> archives, std::string_view requested, std::string_view key) {
    // The closest kernels: by edit distance between unqualified names without template arguments,
    // then, among the nearest, between their template arguments (canonical). Both compared on short
    // prefixes, so the work is bounded whatever the names' lengths: each base name and each kernel of
    // the nearest bases costs at most kCompared squared. An archive whose index is not built (a
    // lookup by a mangled name builds none) gives its kernels' bases from their mangled names,
    // parsed in one pass: the hint never runs the demangler.
    constexpr size_t kCompared = 96;
    constexpr size_t kShown = 4;
    const bool mangled = key.empty();
    const std::string_view base = (mangled ? archive::mangled_base_name(requested) : archive::cxx_base_name(key)).substr(0, kCompared);
    // The template arguments of the name, whether a parameter list follows it or not.
    const archive::CxxSpellings spellings = archive::cxx_spellings(key);
    const std::string_view arguments =
        mangled || spellings.expressions.empty() ? std::string_view() : archive::cxx_template_arguments(spellings.expressions.front()).substr(0, kCompared);
    const auto distance_within = [](std::string_view a, std::string_view b, size_t bound) {
        const size_t longer = std::max(a.size(), b.size()), shorter = std::min(a.size(), b.size());
        if (longer - shorter > bound) return bound + 1;  // at least that many edits apart
        return edit_distance(a, b);
    };
    size_t best_distance = std::max<size_t>(2, base.size() / 3) + 1;
    struct Near {
        const MountedArchive* archive;
        std::span<const uint32_t> kernels;
        const KernelNameIndex* index;  // null: bases parsed from mangled names
    };
    std::vector<Near> nearest;  // the bases at the best distance
    std::vector<uint32_t> single;  // the kernel of each base parsed from a mangled name, stable for `nearest`
    const auto consider = [&](const Near& n, std::string_view candidate) {
        const size_t d = distance_within(base, candidate.substr(0, kCompared), best_distance);
        if (d > best_distance) return;
        if (d < best_distance) {
            best_distance = d;
            nearest.clear();
        }
        nearest.push_back(n);
    };
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
        const MountedArchive& m = **it;
        if (m.manifest && built_names(m) == nullptr) single.resize(single.size() + m.manifest->kernels().size());
    }
    size_t next_single = 0;
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
        const MountedArchive& m = **it;
        if (!m.manifest) continue;
        if (const KernelNameIndex* index = built_names(m)) {
            for (const auto& [candidate, kernels] : index->bases()) consider({&m, kernels, index}, candidate);
            continue;
        }
        const auto kernels = m.manifest->kernels();
        for (uint32_t k = 0; k < kernels.size(); ++k) {
            single[next_single] = k;
            consider({&m, std::span<const uint32_t>(&single[next_single++], 1), nullptr}, archive::mangled_base_name(kernels[k].name));
        }
    }
    // Among the nearest bases, the kernels nearest by template arguments (in order found on a tie).
    std::vector<std::pair<size_t, Candidate>> near;
    std::set<std::string_view> near_names;
    for (const Near& n : nearest)
        for (const uint32_t k : n.kernels) {
            if (!near_names.insert(n.archive->manifest->kernels()[k].name).second) continue;
            const size_t worst = near.size() < kShown ? kCompared : near.back().first;
            const std::string_view theirs = n.index != nullptr ? n.index->template_arguments(k).substr(0, kCompared) : std::string_view();
            const size_t d = arguments.empty() ? 0 : distance_within(arguments, theirs, worst);
            if (near.size() == kShown && d >= worst) continue;
            const auto at = std::upper_bound(near.begin(), near.end(), d, [](size_t v, const auto& e) { return v < e.first; });
            near.insert(at, {d, {n.archive, k}});
            if (near.size() > kShown) near.pop_back();
        }
    std::string hint;
    bool enumerator = false;
    for (const auto& [d, c] : near) {
        hint += (hint.empty() ? "" : "; ") + kernel_text(*c.first, c.second);
        if (const KernelNameIndex* index = built_names(*c.first)) enumerator = enumerator || enumerator_literal(index->template_arguments(c.second));
    }
    if (enumerator && arguments.find("::") != std::string_view::npos)
        hint += " (a symbol spells an enumerator given as a template argument as its value cast to its type, \"(mylib::Tag)1\": ask for it so, "
                "or by a name expression the archive records)";
    return hint;
}

}  // namespace

Result<std::string> resolve_kernel_name(const ArchiveSet& set, JitToolchain& jit, std::string_view requested, std::string_view module) {
    const auto archives = set.archives();
    // A mangled name no archive lists is no kernel: it is never demangled here (a crafted one costs
    // the demangler minutes and gigabytes), only parsed for its base name, for the hint.
    const bool mangled = requested.starts_with("_Z");
    std::string key, spelling;  // canonical, and as written (whitespace normalised)
    if (!mangled) {
        if (auto parsed = archive::check_cxx_brackets(requested); !parsed)
            return make_error(ErrorCode::invalid_argument, "kernel name '" + shown_name(requested) + "' does not parse as a C++ name: " + parsed.error().message +
                                                               " (a name as an archive lists it, a declaration as c++filt prints it, or a name "
                                                               "expression such as \"ns::fill<float, 256>\")");
        key = archive::canonical_cxx(requested);
        spelling = archive::normalize_cxx(requested);
    }
    // The matches at the most specific level, across archives (the newest first); one listed name
    // may come from several archives (an overlay), which is one kernel.
    int best = 4;
    std::vector<Candidate> matches;
    std::set<std::string_view> names;
    std::string mounted;
    for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
        const MountedArchive& m = **it;
        mounted += (mounted.empty() ? "" : ", ") + m.archive.label();
        if (!m.manifest || key.empty()) continue;
        const auto match = kernel_names(jit, m).find(key);
        if (!match || match->level > best) continue;
        const auto in_module = [&](uint32_t k) { return module.empty() || m.manifest->kernels()[k].module == module; };
        if (std::none_of(match->kernels->begin(), match->kernels->end(), in_module)) continue;
        if (match->level < best) {
            best = match->level;
            matches.clear();
            names.clear();
        }
        for (const uint32_t k : *match->kernels)
            if (in_module(k) && names.insert(m.manifest->kernels()[k].name).second) matches.emplace_back(&m, k);
    }
    // Kernels that one canonical form names (f<3> over int, f<3u> over unsigned): those spelled as asked.
    if (matches.size() > 1) {
        std::vector<Candidate> spelled;
        for (const auto& [m, k] : matches)
            if (built_names(*m)->spelled(k, best, spelling)) spelled.emplace_back(m, k);
        if (!spelled.empty()) matches = std::move(spelled);
    }
    // A name expression with trailing template arguments left to their defaults ("shift<int>" of
    // "shift<int, void>"): only a compiler knows the defaults, so only a kernel alone in answering is taken.
    const bool defaults = matches.empty() && !key.empty();
    if (defaults)
        for (auto it = archives.rbegin(); it != archives.rend(); ++it) {
            const MountedArchive& m = **it;
            if (!m.manifest) continue;
            for (const uint32_t k : kernel_names(jit, m).find_with_defaults(key))
                if ((module.empty() || m.manifest->kernels()[k].module == module) && names.insert(m.manifest->kernels()[k].name).second)
                    matches.emplace_back(&m, k);
        }
    if (matches.size() == 1) return std::string(matches[0].first->manifest->kernels()[matches[0].second].name);
    if (matches.size() > 1)
        return ambiguity(requested, matches, defaults ? " whose first template arguments are these (the others left to defaults, which only a compiler knows)" : "");
    const std::string hint = closest_kernels(archives, requested, key);
    return make_error(ErrorCode::not_found, "kernel " + shown_name(requested) + " is in no mounted archive (" + (mounted.empty() ? "none is mounted" : "mounted: " + mounted) +
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
                    if (!archive::kind_has_arch(entry.kind) && entry.kind != archive::Kind::fatbin) continue;
                    if (!t.empty()) t += ',';
                    t += entry.target();
                }
            }
            out.push_back({a, std::string(kernels[i].name), std::string(names.demangled(i)), std::string(kernels[i].module), archive::signature_text(spec->signature), t,
                           archive_index.has_value() && shadowed});
        }
    }
    std::sort(out.begin(), out.end(), [](const KernelListing& x, const KernelListing& y) { return x.name < y.name; });
    return out;
}

}  // namespace sdm::runtime
