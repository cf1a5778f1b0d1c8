// sdm ls: the index as a table, or JSON; filtered by kernel name (a glob) and module.
#include <set>
#include <string_view>


#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common/digest.hpp"
#include "archive/manifest.hpp"
#include "archive/signature_check.hpp"
#include "archive/archive.hpp"
#include "archive/identity.hpp"
#include "kernel_filter.hpp"
#include "runtime/kernel/kernel_names.hpp"
#include "runtime/runtime.hpp"
#include "table.hpp"
#include "wording.hpp"
#include "common/text.hpp"

namespace sdm::tools {

namespace {

// The archive's kernels as libsdm lists them to hosts (sdm_kernel_list_create: demangled names,
// the module's targets): the archive mounted alone, whatever the signature policy. nullopt when it
// does not mount (its error is the manifest's, reported after the entries).
std::optional<std::vector<runtime::KernelListing>> listed_kernels(const std::string& path, const std::string& self) {
    runtime::RuntimeOptions options;
    options.mount_embedded = false;
    options.log_level = runtime::LogLevel::error;
    options.signatures.policy = runtime::SignaturePolicy::off;
    options.cache.disabled = true;
    options.isolation.helper = {self, "--jit-helper"};  // the archive's names are demangled there (kernel_names.hpp)
    runtime::Runtime rt(std::move(options));
    if (!rt.mount_file(path)) return std::nullopt;
    auto listed = runtime::list_kernels(rt.archive_set(), rt.jit(), 0);
    if (!listed) return std::nullopt;
    return std::move(*listed);
}

// What a kernel row shows: the listing's, else (an archive that does not mount) the manifest's.
struct Row {
    std::string name, demangled, module, signature, targets;
    size_t plans;
};

std::vector<Row> kernel_rows(const std::string& path, const archive::Manifest& manifest, const std::string& self) {
    std::vector<Row> rows;
    const auto listed = listed_kernels(path, self);
    for (size_t i = 0; i < manifest.kernels.size(); ++i) {
        const auto& k = manifest.kernels[i];
        // Both are sorted by name, one row per kernel.
        if (listed && listed->size() == manifest.kernels.size() && (*listed)[i].name == k.name) {
            const auto& l = (*listed)[i];
            rows.push_back({l.name, l.demangled, l.module, l.signature, l.targets, k.plans.size()});
        } else {
            rows.push_back({k.name, "", k.module, archive::signature_text(k.signature), "", k.plans.size()});  // (not demangled here: kernel_names.hpp)
        }
    }
    return rows;
}

// The kernels the filters keep (indices into rows), and the modules they are in: the entries listed.
struct Selection {
    std::vector<size_t> kernels;
    std::set<std::string> modules;
    bool filtered;
    bool keeps_entry(std::string_view module) const { return !filtered || modules.contains(std::string(module)); }
};

Selection select(const std::vector<Row>& rows, const LsOptions& o) {
    Selection s{{}, {}, !o.kernel.empty() || !o.module.empty()};
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        if (!o.module.empty() && r.module != o.module) continue;
        if (!kernel_matches(o.kernel, r.name, r.demangled)) continue;
        s.kernels.push_back(i);
        s.modules.insert(r.module);
    }
    if (!o.module.empty()) s.modules.insert(o.module);  // its entries, whatever --kernel kept
    if (!o.kernel.empty() && s.kernels.empty()) s.modules.clear();
    return s;
}

// "--kernel 'gemm*' --module cublasLt": the filters as given, for messages.
std::string filter_text(const LsOptions& o) {
    std::string text;
    if (!o.kernel.empty()) text += "--kernel '" + o.kernel + "'";
    if (!o.module.empty()) text += std::string(text.empty() ? "" : " ") + "--module '" + o.module + "'";
    return text;
}

void print_json(const archive::Archive& a, const std::optional<archive::Manifest>& manifest, const std::vector<Row>& rows, const Selection& kept,
                const LsOptions& o) {
    const auto& h = a.header();
    nlohmann::json out;
    out["path"] = o.archive;
    out["format"] = fmt::format("{}.{}", h.format_major, h.format_minor);
    out["kernel_abi"] = fmt::format("{}.{}", h.kernel_abi_major, h.kernel_abi_minor);
    out["created_by"] = printable(h.created_by);
    out["size"] = h.archive_size;
    out["signers"] = archive::signer_ids(a);  // named, not checked: sdm verify --trust checks
    if (manifest) out["content_version"] = manifest->content_version;
    out["archive_identity"] = archive::identity_text(archive::identity(a));
    if (h.archive_version) out["archive_version"] = *h.archive_version;
    if (h.release_line) out["release_line"] = *h.release_line;
    if (h.base) out["base"] = archive::identity_text(*h.base);
    out["entries"] = nlohmann::json::array();
    for (size_t i = 0; i < a.entries().size(); ++i) {
        const auto& e = a.entries()[i];
        if (!kept.keeps_entry(e.name)) continue;
        nlohmann::json j{{"index", i},
                         {"name", std::string(e.name)},
                         {"kind", archive::kind_name(e.kind)},
                         {"target", e.target()},
                         {"codec", archive::codec_name(e.codec)},
                         {"raw_size", e.raw_size},
                         {"stored_size", e.stored_size},
                         {"offset", e.data_offset},
                         {"xxh3_128", e.raw_hash.hex()},
                         {"identity", crypto::digest_hex(a.identity(i))}};
        if (e.ref != archive::kNoRef) j["ref"] = e.ref;
        out["entries"].push_back(std::move(j));
    }
    if (manifest) {
        out["kernels"] = nlohmann::json::array();
        for (const size_t i : kept.kernels) {
            const auto& r = rows[i];
            out["kernels"].push_back({{"name", r.name}, {"demangled", r.demangled.empty() ? r.name : r.demangled},
                                      {"module", r.module}, {"signature", r.signature}, {"targets", r.targets},
                                      {"problem", manifest->kernels[i].problem}, {"plan_rules", r.plans}});
        }
        // Manifest 1.2: the name expressions recorded at build time, in their stored (key) form.
        out["name_expressions"] = nlohmann::json::array();
        for (const auto& x : manifest->expressions)
            if (kept.keeps_entry(x.module))
                out["name_expressions"].push_back({{"expression", printable(x.expression)}, {"module", x.module}, {"symbol", x.symbol}});
    }
    fmt::print("{}\n", out.dump(2));
}

void print_text(const archive::Archive& a, const std::optional<archive::Manifest>& manifest, const std::vector<Row>& rows, const Selection& kept,
                const LsOptions& o) {
    const auto& h = a.header();
    const std::string created_by = printable(h.created_by);
    fmt::print("{}: sdm archive format {}.{}, {}, {} bytes, {}{}{}\n", o.archive, h.format_major, h.format_minor,
               kernel_abi_text(h.kernel_abi_major, h.kernel_abi_minor), h.archive_size, plural(a.entries().size(), "entry", "entries"),
               manifest && !manifest->content_version.empty() ? ", content " + manifest->content_version : std::string(),
               created_by.empty() ? "" : ", written by " + created_by);
    if (h.archive_version || h.base)
        fmt::print("{}{}{}\n", h.archive_version ? fmt::format("archive version {}{}", *h.archive_version,
                                                                h.release_line ? " of release line " + *h.release_line : std::string())
                                                  : std::string(),
                   h.archive_version && h.base ? "; " : "",
                   h.base ? fmt::format("an overlay of the archive {} (it serves only above that archive)", archive::identity_text(*h.base))
                          : std::string());
    if (const auto ids = archive::signer_ids(a); !ids.empty()) {
        std::string list;
        for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
        fmt::print("signed by {} (not checked here: sdm verify --trust KEY.pub)\n", list);
    }
    if (kept.filtered)
        fmt::print("{} of {} {} {}\n", plural(kept.kernels.size(), "kernel"), rows.size(), kept.kernels.size() == 1 ? "matches" : "match", filter_text(o));
    const size_t width = listing_width(o.wide, o.width);
    TextTable entries({"#", "name", "kind", "target", "codec", "raw", "stored", "ratio", "ref"},
                      {Align::right, Align::left, Align::left, Align::left, Align::left, Align::right, Align::right, Align::right, Align::left});
    for (size_t i = 0; i < a.entries().size(); ++i) {
        const auto& e = a.entries()[i];
        if (!kept.keeps_entry(e.name)) continue;
        entries.add({std::to_string(i), std::string(e.name), archive::kind_name(e.kind), archive::kind_has_arch(e.kind) ? e.target() : "-",
                     archive::codec_name(e.codec), std::to_string(e.raw_size), std::to_string(e.stored_size),
                     fmt::format("{:.3f}", e.raw_size ? static_cast<double>(e.stored_size) / static_cast<double>(e.raw_size) : 0.0),
                     e.ref == archive::kNoRef ? std::string("-") : std::to_string(e.ref)});
    }
    if (!kept.filtered || !kept.modules.empty()) entries.print(stdout, width, 1);
    if (manifest && !kept.kernels.empty()) {
        fmt::print("\n");
        std::fflush(stdout);
        TextTable kernels({"kernel", "module", "signature", "targets", "plan rules"}, {Align::left, Align::left, Align::left, Align::left, Align::right});
        for (const size_t i : kept.kernels) {
            const auto& r = rows[i];
            kernels.add({o.demangle && !r.demangled.empty() ? r.demangled : r.name, r.module, r.signature, r.targets.empty() ? "-" : r.targets,
                         std::to_string(r.plans)});
        }
        kernels.print(stdout, width, 0);
    }
}

}  // namespace

int run_ls(const LsOptions& o) {
    auto a = archive::Archive::open_file(o.archive);
    if (!a) {
        fmt::print(stderr, "sdm ls: {}\n", a.error().message);
        return 1;
    }
    // A manifest that does not decode is an error, after the entries are listed: the kernels
    // are never silently missing from the listing.
    auto read = a->read_manifest();
    std::optional<archive::Manifest> manifest = read ? std::move(*read) : std::nullopt;
    const auto rows = manifest ? kernel_rows(o.archive, *manifest, o.self) : std::vector<Row>{};
    const Selection kept = select(rows, o);
    if (o.json) print_json(*a, manifest, rows, kept, o);
    else print_text(*a, manifest, rows, kept, o);
    if (!read) {
        fmt::print(stderr, "sdm ls: {}\n", read.error().message);
        return 1;
    }
    if (kept.filtered && kept.kernels.empty()) {
        fmt::print(stderr, "sdm ls: no kernel of {} matches {} (of {}; sdm ls {} lists them all)\n", o.archive, filter_text(o),
                   plural(rows.size(), "kernel"), o.archive);
        return 1;
    }
    return 0;
}

}  // namespace sdm::tools
