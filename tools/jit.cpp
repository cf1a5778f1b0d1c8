// sdm jit: the fleet pre-build. Links every PTX (and LTO-IR) module of an archive for the given
// SMs, in parallel, and writes an overlay: the linked cubins and the original's manifest (so that
// its kernels are listed where the cubins are, with the same kernel ABI), its content version
// naming the nvJitLink that built them. Mounted over the original, production machines never JIT;
// whatever the overlay has no image for, the original still serves. --full writes the original's
// entries too, an archive that replaces it. Links of input sdm cannot fully check (LTO-IR, PTX of
// an input no --trust key verified) run in the JIT helper (this program again, `sdm --jit-helper`)
// under a time and memory limit, as libsdm runs them; --sign signs only what verified.
#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "commands.hpp"
#include "wording.hpp"
#include "archive/file_map.hpp"
#include "runtime/jit/jit_isolation.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "archive/key_files.hpp"
#include "archive/signature_block.hpp"
#include "archive/signature_check.hpp"
#include "archive/manifest.hpp"
#include "archive/archive.hpp"
#include "archive/identity.hpp"
#include "archive/image.hpp"
#include "runtime/select/image_selection.hpp"
#include "archive/writer.hpp"

namespace sdm::tools {
namespace {

struct Job {
    std::string module;
    size_t entry;  // the PTX / LTO-IR entry to link
    uint16_t sm;
    archive::Variant variant;
};

// Whether the input's signature holds under the --trust keys (its payloads then checked against
// their signed digests as they are read): what --sign may vouch for, and what lets PTX link in
// this process. A signed input must be checked before its output is signed: one edited after
// signing (its block no longer holds) would otherwise come out signed by the new key.
Result<bool> check_input(archive::Archive& input, const JitOptions& o) {
    const bool signed_input = input.signature_block().has_value();
    if (o.trust.empty()) {
        if (signed_input && !o.sign.empty())
            return make_error(ErrorCode::untrusted, "input " + o.input + " is signed (by " + archive::signer_ids(input).front() +
                                                        "); pass --trust KEY.pub so its signature is checked before its output is signed with " + o.sign);
        return false;
    }
    std::vector<crypto::PublicKey> trusted;
    std::vector<archive::KeyId> ids;
    for (const auto& file : o.trust) {
        SDM_TRY_GET(key, archive::read_public_key(file));
        SDM_TRY_GET(id, archive::key_id(*key));
        trusted.push_back(*key);
        ids.push_back(*id);
    }
    SDM_TRY_GET(check, archive::check_signatures(input, trusted));
    if (check->outcome != archive::SignatureCheck::Outcome::verified)
        return make_error(ErrorCode::untrusted, "input " + o.input + " " + check->why(ids) + "; nothing is written");
    SDM_TRY(input.enforce_digests());
    return true;
}

// The cubin targets of --arch: any spelling of one SM: 90, sm_90, compute_90 (link for SM 90), 90a, sm_90a.
Result<std::vector<archive::Target>> parse_targets(const std::vector<std::string>& archs) {
    std::vector<archive::Target> targets;
    for (const auto& a : archs) {
        auto t = parse_arch_option(a, archive::Kind::cubin);
        if (!t || t->kind == archive::Kind::fatbin || t->variant == archive::Variant::f)
            return make_error(ErrorCode::invalid_argument, "--arch " + a + " is not one SM like 90, sm_90, compute_90 or 90a (cubins are linked for one SM)");
        targets.push_back({archive::Kind::cubin, t->sm, t->variant});
    }
    return targets;
}

// The modules with PTX or LTO-IR, the links to run for them, and the targets none of their
// images can be linked for (said on stderr unless --quiet).
struct JobPlan {
    std::set<std::string> modules;
    std::vector<Job> jobs;
    std::vector<std::string> skipped;
};

JobPlan plan_jobs(const archive::Archive& input, const std::vector<archive::Target>& targets, const JitOptions& o) {
    const auto& entries = input.entries();
    JobPlan plan;
    for (const auto& e : entries)
        if (e.kind == archive::Kind::ptx || e.kind == archive::Kind::ltoir) plan.modules.emplace(e.name);
    for (const auto& module : plan.modules) {
        const auto [first, last] = input.find_name(module);
        std::vector<runtime::ImageCandidate> virtuals;
        for (size_t i = first; i < last; ++i)
            if (entries[i].kind == archive::Kind::ptx || entries[i].kind == archive::Kind::ltoir)
                virtuals.push_back({i, entries[i].kind, entries[i].sm, entries[i].variant});
        for (const auto& t : targets) {
            if (input.find(module, archive::Kind::cubin, t.sm, t.variant)) continue;  // already there
            const runtime::SelectionDevice device{{t.sm / 10, t.sm % 10}, class_of_capability(t.sm), "sm_" + std::to_string(t.sm)};
            auto s = runtime::select_image(virtuals, device, module, o.input);
            if (!s) {
                const std::string why = fmt::format("{} for {}: no PTX or LTO-IR of it can be linked for that SM", module,
                                                    archive::target_name(archive::Kind::cubin, t.sm, t.variant));
                if (!o.quiet) fmt::print(stderr, "sdm jit: skipping {}\n", why);
                plan.skipped.push_back(why);
                continue;
            }
            plan.jobs.push_back({module, s->image.index, t.sm, t.variant == archive::Variant::a ? archive::Variant::a : s->target_variant});
        }
    }
    return plan;
}

// One walk over the archive (each entry decoded once, a shared reference once): the jobs get
// their inputs (returned, by entry); the output the manifest (its content version naming the
// linker, `built_by`), and with --full every other entry but the dictionary (the writer trains
// its own).
Result<std::map<size_t, ByteVector>> copy_entries(const archive::Archive& input, const std::vector<Job>& jobs, const std::string& built_by,
                                                  const JitOptions& o, archive::ArchiveWriter& writer) {
    const auto& entries = input.entries();
    std::map<size_t, ByteVector> inputs;
    for (const Job& j : jobs) inputs[j.entry];
    SDM_TRY(input.for_each_entry([&](size_t i, Bytes raw) -> Result<void> {
        if (const auto it = inputs.find(i); it != inputs.end()) it->second.assign(raw.begin(), raw.end());
        if (entries[i].kind == archive::Kind::dictionary) return {};
        if (entries[i].kind == archive::Kind::manifest && !o.full) {
            SDM_TRY_GET(manifest, archive::decode_manifest(raw));
            std::string version = manifest->content_version.empty() ? "jit by " + built_by : manifest->content_version + " + jit by " + built_by;
            manifest->content_version = version.size() <= 64 ? version : version.substr(version.size() - 64);
            SDM_TRY_GET(encoded, archive::encode_manifest(*manifest));
            return writer.add({std::string(entries[i].name), entries[i].kind, entries[i].sm, entries[i].variant, std::move(*encoded)});
        }
        if (!o.full) return {};
        return writer.add({std::string(entries[i].name), entries[i].kind, entries[i].sm, entries[i].variant, ByteVector(raw.begin(), raw.end())});
    }));
    return inputs;
}

// How the links run: where (jit_isolation.hpp), with which nvJitLink, and whether a --trust key
// verified the input.
struct Linker {
    const runtime::JitIsolationSettings& isolation;
    const runtime::NvJitLink& jit;
    const std::string& file;  // jit's
    bool trusted;
};

// One job's cubin, linked where libsdm would link it: isolated unless the input is PTX whose
// signature a --trust key verified, or the policy says never; then checked as a cubin.
Result<runtime::JitOutput> link_job(const Linker& linker, const Job& j, const runtime::JitInput& in) {
    const bool isolated = linker.isolation.policy == runtime::JitIsolation::always ||
                          (linker.isolation.policy == runtime::JitIsolation::automatic && (in.kind == archive::Kind::ltoir || !linker.trusted));
    Result<runtime::JitOutput> out =
        isolated ? runtime::run_isolated(linker.isolation.helper, {runtime::IsolatedTool::nvjitlink, linker.file, in, j.sm, j.variant, {}}, linker.isolation.limits)
                 : linker.jit.link(in, j.sm, j.variant, {});
    if (out) {
        if (auto checked = archive::inspect_cubin(out->cubin); !checked)
            out = make_error(ErrorCode::jit, "the cubin linked from " + in.name + " is not well formed: " + checked.error().message);
    }
    return out;
}

// Every job on `threads` threads, the progress drawn unless --quiet; the cubins in job order, or
// the first error.
Result<std::vector<std::optional<ByteVector>>> link_all(const Linker& linker, const archive::Archive& input, const std::vector<Job>& jobs,
                                                        const std::map<size_t, ByteVector>& inputs, unsigned threads, bool quiet) {
    Progress progress("jit", !quiet);
    std::vector<std::optional<ByteVector>> cubins(jobs.size());
    std::atomic<size_t> next{0}, done{0};
    std::mutex error_mutex;
    std::optional<Error> first_error;
    const auto worker = [&] {
        for (size_t i = next++; i < jobs.size(); i = next++) {
            const Job& j = jobs[i];
            const runtime::JitInput in{input.entries()[j.entry].kind, inputs.at(j.entry), input.describe(j.entry)};
            Result<runtime::JitOutput> out = link_job(linker, j, in);
            if (out) {
                cubins[i] = std::move(out->cubin);
            } else {
                std::lock_guard lock(error_mutex);
                if (!first_error) first_error = out.error();
            }
            progress.update("link", ++done, jobs.size());  // every thread's links, as each lands
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    progress.finish();
    if (first_error) return *first_error;
    return cubins;
}

}  // namespace

int run_jit(const JitOptions& o) {
    auto input = archive::Archive::open_file(o.input);
    if (!input) {
        fmt::print(stderr, "sdm jit: {}\n", input.error().message);
        return 1;
    }
    const auto trusted = check_input(*input, o);
    if (!trusted) {
        fmt::print(stderr, "sdm jit: {}\n", trusted.error().message);
        return 1;
    }
    if (!o.sign.empty() && !*trusted && !o.quiet)
        fmt::print(stderr, "sdm jit: note: {} is not signed; the output signed with {} vouches for it as it is\n", o.input, o.sign);
    runtime::Logger log({}, std::nullopt);
    runtime::JitIsolationOptions isolation_options;
    isolation_options.helper = {o.self, "--jit-helper"};
    const runtime::JitIsolationSettings isolation = runtime::JitIsolationSettings::resolve(isolation_options, log);
    auto located = runtime::locate_nvjitlink(o.nvjitlink);
    auto jit = runtime::NvJitLink::load(located ? located->file : o.nvjitlink);
    if (!jit) {
        fmt::print(stderr, "sdm jit: {}\n", jit.error().message);
        return 1;
    }
    const std::string linker_file = jit->file();
    const auto targets = parse_targets(o.archs);
    if (!targets) {
        fmt::print(stderr, "sdm jit: {}\n", targets.error().message);
        return 2;
    }
    const JobPlan plan = plan_jobs(*input, *targets, o);
    const std::vector<Job>& jobs = plan.jobs;
    if (jobs.empty()) {  // an empty output would mount and serve nothing: say so, write nothing
        fmt::print(stderr, "sdm jit: nothing to link in {}: {}; no output written\n", o.input,
                   plan.skipped.empty() ? std::string("every module already has a cubin for every SM asked for, or the archive has no PTX or LTO-IR")
                                        : fmt::format("{}", fmt::join(plan.skipped, "; ")));
        return 1;
    }
    archive::WriterOptions writing;
    writing.min_saving = archive::kDefaultMinSaving;  // as pack and import write them
    // Frames where the input has them: an overlay is read by whatever reads its base.
    writing.frame_bytes = (input->header().required_features & archive::kFeatureFrames) != 0 ? archive::kDefaultFrameBytes : 0;
    // The output carries the input's version (a host's rollback check reads it); an overlay also
    // names its base, so a host serves it only above that archive (docs/FORMAT.md, section 20).
    writing.archive_version = input->header().archive_version;
    writing.release_line = input->header().release_line;
    if (!o.full) writing.base = archive::identity(*input);
    archive::ArchiveWriter writer(writing);
    const std::string built_by = fmt::format("nvJitLink {}", jit->version());
    const auto inputs = copy_entries(*input, jobs, built_by, o, writer);
    if (!inputs) {
        fmt::print(stderr, "sdm jit: {}\n", inputs.error().message);
        return 1;
    }
    const unsigned threads = std::max(1u, std::min<unsigned>(o.threads ? o.threads : std::thread::hardware_concurrency(),
                                                             static_cast<unsigned>(std::max<size_t>(jobs.size(), 1))));
    auto cubins = link_all(Linker{isolation, *jit, linker_file, *trusted}, *input, jobs, *inputs, threads, o.quiet);
    if (!cubins) {
        fmt::print(stderr, "sdm jit: {}\n", cubins.error().message);
        return 1;
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
        auto added = writer.add({jobs[i].module, archive::Kind::cubin, jobs[i].sm, jobs[i].variant, std::move(*(*cubins)[i])});
        if (!added) {
            fmt::print(stderr, "sdm jit: {}\n", added.error().message);
            return 1;
        }
    }
    archive::WriterReport report;
    auto written = write_verified_archive(writer, o.output, &report, o.sign);
    if (!written) {
        fmt::print(stderr, "sdm jit: {}\n", written.error().message);
        return 1;
    }
    if (!o.quiet)
        fmt::print("{}: {} of {} ({} x {}) linked with {} on {}; {}, {}\n", o.output, o.full ? "the original's entries and" : "an overlay",
                   plural(jobs.size(), "cubin"), plural(plan.modules.size(), "module"), plural(targets->size(), "SM"), built_by,
                   plural(threads, "thread"), plural(report.entries, "entry", "entries"), plural(*written, "byte"));
    return 0;
}

}  // namespace sdm::tools
