// sdm: the command-line tool over the archive format (and, as they land, the runtime).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <string_view>

#include <unistd.h>

#include "archive/format.hpp"
#include "commands.hpp"
#include "common/edit_distance.hpp"
#include "completion.hpp"
#include "runtime/jit/jit_isolation.hpp"
#include "sdm_version.h"
#include "table.hpp"

namespace {

// This program's own path, for the JIT helper it starts (itself again, with --jit-helper).
std::string self_path(const char* argv0) {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(argv0);
}

// Every command's options, as CLI11 fills them in, and the commands, to ask which one was given.
// CLI11 keeps pointers into it: it stays where main() made it.
struct Commands {
    sdm::tools::PackOptions pack;
    sdm::tools::ImportOptions import;
    sdm::tools::LsOptions ls;
    std::vector<std::string> verify_paths, verify_trust;
    bool verify_quiet = false;
    sdm::tools::KeygenOptions keygen;
    sdm::tools::SignOptions sign;
    std::string extract_path, extract_dir = ".";
    std::vector<std::string> extract_entries;
    bool extract_raw = false, extract_force = false;
    std::string diff_left, diff_right;
    bool diff_json = false;
    sdm::tools::InfoOptions info;
    sdm::tools::CacheCommand cache;
    sdm::tools::JitOptions jit;
    sdm::tools::PlanOptions plan;
    sdm::tools::PushOptions push;
    sdm::tools::PullOptions pull;
    sdm::tools::LockOptions lock;
    std::string completion_shell;
    std::vector<std::string> help_command;  // never read: main() answers `sdm help` before parsing

    CLI::App *pack_cmd = nullptr, *import_cmd = nullptr, *ls_cmd = nullptr, *verify_cmd = nullptr, *keygen_cmd = nullptr, *sign_cmd = nullptr,
             *extract_cmd = nullptr, *diff_cmd = nullptr, *info_cmd = nullptr, *cache_cmd = nullptr, *jit_cmd = nullptr, *plan_cmd = nullptr,
             *push_cmd = nullptr, *pull_cmd = nullptr, *lock_cmd = nullptr, *completion_cmd = nullptr;
};

// The options of pack and import that decide how the archive is written.
void add_write_options(CLI::App* cmd, sdm::tools::WriteOptions& w) {
    cmd->add_option("-m,--manifest", w.manifest, "Manifest source (TOML; see docs/FORMAT.md); kernels it does not declare get signatures derived from the images")
        ->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", w.output, "Archive to write (replaced atomically)")->required();
    cmd->add_option("--level", w.level, "zstd level, 1-22")->capture_default_str();
    cmd->add_option("--dict", w.dict, "auto: add a trained zstd dictionary only where it pays including its own size; off")->capture_default_str();
    cmd->add_option("--prefix", w.prefix, "auto: code entries against similar entries where it pays; off")->capture_default_str();
    cmd->add_flag("--store-cubins", w.store_cubins, "Keep cubins uncompressed and page-aligned (mappable straight to the driver)");
    cmd->add_option("--min-saving", w.min_saving,
                    "Store a cubin or fatbin uncompressed when zstd saves fewer bytes than this (a load then skips its decode)")
        ->capture_default_str();
    cmd->add_option("--frame-size", w.frame_bytes,
                    "Code an image larger than this many bytes in zstd frames of about this size, which a load decodes on several cores "
                    "(0: one frame per image, readable by sdm releases before frames; on the H200 frames cost bytes and did not pay at "
                    "the default level)")
        ->capture_default_str();
    cmd->add_flag("--store", w.store, "Keep every entry uncompressed");
    cmd->add_option("-j,--jobs", w.jobs, "Compression threads (default: one per core; the archive is the same for any number)");
    cmd->add_flag("-q,--quiet", w.quiet, "No progress bar, no summary");
    cmd->add_option("--source", w.names.sources, "MODULE=FILE.cu: the CUDA source module MODULE was compiled from, for --name-expression");
    cmd->add_option("--name-expression", w.names.expressions,
                    "MODULE=EXPRESSION: a name a host will fetch the kernel by (\"fill<float, 256>\", \"f<size_t>\"), lowered with NVRTC from "
                    "the module's --source and recorded in the manifest")
        ->allow_extra_args(false);
    cmd->add_option("--nvrtc-option", w.names.nvrtc_options, "An option for NVRTC when it lowers name expressions (-std=c++17, -I DIR)")
        ->allow_extra_args(false);
    cmd->add_option("--sign", w.sign, "Sign the archive with this secret key (from sdm keygen) before it is written")->check(CLI::ExistingFile);
    cmd->add_option("--archive-version", w.archive_version,
                    "The archive's version, 1 or more: a host that requires signatures refuses a signed archive older than one it "
                    "has mounted by the same key (a rollback; docs/SIGNING.md)")
        ->check(CLI::Validator(
            [](const std::string& text) -> std::string {  // digits only: CLI11 would wrap "-1" to 2^64 - 1
                uint64_t value = 0;
                const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
                if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || ec != std::errc() ||
                    end != text.data() + text.size() || value == 0)
                    return "--archive-version takes a whole number from 1 to 18446744073709551615, not '" + text + "'";
                return {};
            },
            "VERSION"))
        ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
    cmd->add_option("--release-line", w.release_line,
                    "The line of releases that version belongs to (\"example.com/fleet-kernels\": 1-32 of [a-z0-9._/-]): a host keeps "
                    "its rollback mark per line, whichever trusted key signed, so a key rotation or a second key cannot bring an "
                    "older release back (docs/SIGNING.md)")
        ->check(CLI::Validator(
            [](const std::string& text) -> std::string {
                const auto why = sdm::archive::release_line_problem(text);
                return why.empty() ? std::string() : "--release-line '" + text + "' " + why;
            },
            "LINE"));
}

// The commands over archives on disk: pack, import, ls, verify, keygen, sign, extract, diff (in
// this order: --help and the completion scripts list them so).
void add_archive_commands(CLI::App& app, Commands& c) {
    c.pack_cmd = app.add_subcommand("pack", "Pack compiled images (and a manifest) into an archive");
    add_write_options(c.pack_cmd, c.pack.write);
    c.pack_cmd->add_option("images", c.pack.images, "Images as MODULE:TARGET=PATH, TARGET one of sm_XY[a|f], compute_XY[a|f], lto_XY[a|f], fatbin");

    c.import_cmd = app.add_subcommand("import", "Import cubins, PTX, LTO-IR, fatbins and the device code of shared libraries, "
                                                "executables and static archives into an archive: a module per fatbin container");
    add_write_options(c.import_cmd, c.import.write);
    c.import_cmd->add_option("inputs", c.import.inputs, "Files: cubin, PTX, LTO-IR, .fatbin, ELF (.so, executable, .o) or ar (.a)")
        ->required()->check(CLI::ExistingFile);
    c.import_cmd->add_option("--arch", c.import.archs, "Keep only these cubin (and LTO-IR) targets, comma-separated: sm_80,sm_90a,lto_90")->delimiter(',')->allow_extra_args(false);
    c.import_cmd->add_option("--ptx", c.import.ptx, "Keep only these PTX targets, comma-separated: compute_90; none: no PTX (a cubin-only archive)")->delimiter(',')->allow_extra_args(false);

    c.ls_cmd = app.add_subcommand("ls", "List an archive's entries and kernels: on a terminal fitted to its width (TIOCGWINSZ, else $COLUMNS, "
                                        "else 100) by cutting names with \u2026, piped or redirected whole; exit 1 when the filters keep no kernel");
    c.ls_cmd->add_option("archive", c.ls.archive, "Archive file")->required();
    c.ls_cmd->add_flag("--json", c.ls.json, "Machine-readable output: every field whole, the filters applied");
    c.ls_cmd->add_flag("--demangle,-C", c.ls.demangle, "Show kernel names as C++ declarations (demangled)");
    c.ls_cmd->add_option("--kernel", c.ls.kernel, "Only kernels whose name or demangled name matches this glob (fnmatch: 'gemm*', '*<float*'); "
                                                  "the entries shown are their modules'");
    c.ls_cmd->add_option("--module", c.ls.module, "Only this module's entries and kernels");
    c.ls_cmd->add_flag("--wide,-w", c.ls.wide, "Never cut a name, on a terminal too");
    // At least the columns a cut name keeps (TextTable::kMinCut): a narrower line cannot be kept;
    // at most kMaxListingWidth: wider is no terminal's, and --wide says never cut.
    c.ls_cmd->add_option("--width", c.ls.width, "Fit lines to N columns, cutting names, whether or not stdout is a terminal")
        ->check(CLI::Range(sdm::tools::TextTable::kMinCut, sdm::tools::kMaxListingWidth))->excludes("--wide");

    c.verify_cmd = app.add_subcommand("verify", "Check every checksum and parse (and with --trust, the signature and every payload's signed digest); "
                                                "exit 1 naming the first bad entry");
    c.verify_cmd->add_option("archives", c.verify_paths, "Archive files")->required();
    c.verify_cmd->add_flag("-q,--quiet", c.verify_quiet, "Print only failures");
    c.verify_cmd->add_option("--trust", c.verify_trust, "Public key files (.pub): the archive must carry a valid signature by one of them")
        ->check(CLI::ExistingFile);

    c.keygen_cmd = app.add_subcommand("keygen", "Make an Ed25519 signing key: NAME.key (secret, mode 0600) and NAME.pub");
    c.keygen_cmd->add_option("-o,--output", c.keygen.output, "NAME (with --public: the .pub file to write)")->required();
    c.keygen_cmd->add_option("--public", c.keygen.public_of, "Write only the public half of this secret key")->check(CLI::ExistingFile);
    c.keygen_cmd->add_flag("--force", c.keygen.force, "Replace key files that exist");
    c.keygen_cmd->add_flag("-q,--quiet", c.keygen.quiet, "Print nothing");

    c.sign_cmd = app.add_subcommand("sign", "Add a signature to an archive (the payloads do not move; other signatures are kept)");
    c.sign_cmd->add_option("archive", c.sign.archive, "Archive file")->required()->check(CLI::ExistingFile);
    c.sign_cmd->add_option("--key", c.sign.key, "Secret key file (from sdm keygen)")->required()->check(CLI::ExistingFile);
    c.sign_cmd->add_option("-o,--output", c.sign.output, "Write the signed archive here (default: replace the archive atomically)");
    c.sign_cmd->add_flag("-q,--quiet", c.sign.quiet, "Print nothing");

    c.extract_cmd = app.add_subcommand("extract", "Write entries back to files");
    c.extract_cmd->add_option("archive", c.extract_path, "Archive file")->required();
    c.extract_cmd->add_option("entries", c.extract_entries, "MODULE:TARGET, 'manifest' or entry numbers (default: all)");
    c.extract_cmd->add_option("-C,--directory", c.extract_dir, "Directory to write into")->capture_default_str();
    c.extract_cmd->add_flag("--raw-manifest", c.extract_raw, "Write the manifest in its binary form instead of TOML");
    c.extract_cmd->add_flag("--force", c.extract_force, "Replace regular files that exist (never links, directories or devices)");

    c.diff_cmd = app.add_subcommand("diff", "Entries added, removed and changed between two archives (exit 1 when they differ)");
    c.diff_cmd->add_option("old", c.diff_left, "Archive file")->required();
    c.diff_cmd->add_option("new", c.diff_right, "Archive file")->required();
    c.diff_cmd->add_flag("--json", c.diff_json, "Machine-readable output");
}

// The commands over OCI registries (docs/REGISTRY.md): push, pull, lock.
void add_registry_commands(CLI::App& app, Commands& c) {
    const char* ref_help = "REGISTRY[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST] (the distribution spec's grammar; no tag: latest)";
    const char* config_help = "Docker config file with the registry's credentials (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json; "
                              "credential helpers are not run)";
    const char* stall_help = "Seconds an answer may send nothing before it is cut (connecting: 30 s)";
    c.push_cmd = app.add_subcommand("push", "Push an archive, checked as verify checks it, to an OCI registry as an artifact of type "
                                            "application/vnd.sdm.archive.v1 (annotations: content version, kernel ABI, targets, signers); "
                                            "print REGISTRY/REPOSITORY@DIGEST");
    c.push_cmd->add_option("archive", c.push.archive, "Archive file")->required()->check(CLI::ExistingFile);
    c.push_cmd->add_option("reference", c.push.reference, std::string("Where to push: ") + ref_help)->required();
    auto* subject = c.push_cmd->add_option("--subject", c.push.subject, "Digest (sha256:...) of a manifest in the same repository this artifact "
                                                                        "refers to (an overlay's base): listed among its referrers");
    auto* per_target = c.push_cmd->add_flag("--per-target", c.push.per_target,
                                            "Also push a part per GPU target sm_XY of the archive's images (each an archive of what a device of "
                                            "that capability can use, and the manifest), stored by digest, and at the tag an OCI index listing "
                                            "the whole archive and the parts (io.sdm.part-target); print the whole archive's and each part's "
                                            "manifest, then the index's REGISTRY/REPOSITORY@DIGEST. sdm pull --for-devices then fetches only "
                                            "the part for this node's GPUs")
                             ->excludes(subject);
    c.push_cmd->add_flag("--image", c.push.image, "Push, instead of the artifact, an OCI image that a container runtime mounts as a "
                                                  "Kubernetes image volume: an index of linux/amd64 and linux/arm64 image manifests sharing "
                                                  "one uncompressed tar layer with the archive at sdm/NAME.sdma (NAME: the repository's last "
                                                  "component); print the index's digest. sdm pull refuses it: push the artifact under another "
                                                  "tag for hosts that pull")
        ->excludes(subject)
        ->excludes(per_target);
    c.push_cmd->add_option("--sign", c.push.sign, "Secret key file that signed the archive: with --per-target, its parts are signed with it "
                                                  "(required for a signed archive; each part carries the archive's version)")
        ->needs(per_target);
    c.push_cmd->add_flag("--plain-http", c.push.plain_http, "Speak plain HTTP to the registry (default: HTTPS only)");
    c.push_cmd->add_option("--registry-config", c.push.docker_config, config_help);
    c.push_cmd->add_option("--stall-timeout", c.push.stall_timeout_s, stall_help)->capture_default_str()->check(CLI::Range(1, 3600));

    c.pull_cmd = app.add_subcommand("pull", "Pull an archive from an OCI registry: size and digest checked as it arrives, then every checksum and "
                                            "the signature under the host's policy ($SDM_REQUIRE_SIGNED, $SDM_TRUSTED_KEYS, or --trust), "
                                            "before it replaces the target by rename; a failed pull writes nothing");
    c.pull_cmd->add_option("reference", c.pull.reference, std::string("What to pull: ") + ref_help + "; by digest, the manifest's bytes are checked against it")
        ->required();
    c.pull_cmd->add_option("-o,--output", c.pull.output, "Archive file to install (replaced atomically)");
    c.pull_cmd->add_option("--into", c.pull.into, "Directory to install REPOSITORY-NAME.sdma into (one SDM_ARCHIVE_PATH watches)")->excludes("--output");
    c.pull_cmd->add_option("--trust", c.pull.trust, "Public key files (.pub): the archive must carry a valid signature by one of them")
        ->check(CLI::ExistingFile);
    c.pull_cmd->add_flag("--for-devices", c.pull.for_devices,
                         "Pull only the part for this machine's GPUs where REFERENCE is an index of sdm push --per-target and they "
                         "share one target it has a part for (else the whole archive, saying why); then also pull the overlays pushed "
                         "as referrers of the archive (sdm push --subject) that hold a cubin for a GPU of this machine, into the same "
                         "directory as NAME.overlay-DIGEST.sdma: a node of a known GPU then never JITs. Only overlays pinned "
                         "(--overlay, or the lock's with --locked) or signed by a trusted key (--trust), at most one per GPU target");
    c.pull_cmd->add_option("--overlay", c.pull.overlays,
                           "The manifest digest (sha256:...) of an overlay to install with --for-devices: pinned, it needs no signature; "
                           "repeat for each GPU target")
        ->allow_extra_args(false);
    c.pull_cmd->add_option("--driver", c.pull.driver, "libcuda to list this machine's GPUs with, for --for-devices (default: $SDM_CUDA_DRIVER, libcuda.so.1)");
    c.pull_cmd->add_flag("--plain-http", c.pull.plain_http, "Speak plain HTTP to the registry (default: HTTPS only)");
    c.pull_cmd->add_option("--registry-config", c.pull.docker_config, config_help);
    c.pull_cmd->add_option("--stall-timeout", c.pull.stall_timeout_s, stall_help)->capture_default_str()->check(CLI::Range(1, 3600));
    c.pull_cmd->add_flag("-q,--quiet", c.pull.quiet, "Print only failures");
    c.pull_cmd->add_flag("--locked", c.pull.locked, "Pull the digest the lock file records for REFERENCE (a tag), never what the tag names now");
    c.pull_cmd->add_option("--lock-file", c.pull.lock_file, "Lock file of --locked")->capture_default_str();

    c.lock_cmd = app.add_subcommand("lock", "Resolve references (with tags) to their manifests' digests and record them, with their content "
                                            "versions, in the lock file that sdm pull --locked honours");
    c.lock_cmd->add_option("references", c.lock.references, ref_help)->required();
    c.lock_cmd->add_option("--lock-file", c.lock.lock_file, "Lock file to update (replaced atomically; other references' entries are kept)")
        ->capture_default_str();
    c.lock_cmd->add_flag("--overlays", c.lock.overlays,
                         "Also pin the overlays each archive's referrers index lists now (each checked to refer to it; at most one per "
                         "GPU target): sdm pull --locked --for-devices installs those and no other");
    c.lock_cmd->add_flag("--plain-http", c.lock.plain_http, "Speak plain HTTP to the registry (default: HTTPS only)");
    c.lock_cmd->add_option("--registry-config", c.lock.docker_config, config_help);
    c.lock_cmd->add_option("--stall-timeout", c.lock.stall_timeout_s, stall_help)->capture_default_str()->check(CLI::Range(1, 3600));
    c.lock_cmd->add_flag("-q,--quiet", c.lock.quiet, "Print only failures");
}

// The commands over the runtime and the machine: info, cache, jit, plan; then completion and help.
void add_runtime_commands(CLI::App& app, Commands& c) {
    c.info_cmd = app.add_subcommand("info", "The driver, every visible GPU and its class, nvJitLink, and the mounted archives: first a summary "
                                            "(each archive's kernels, each device's class and how many kernels it is served), then each "
                                            "device's kernels, which archive serves each and why");
    c.info_cmd->add_flag("--json", c.info.json, "Machine-readable output (the summary under \"summary\"; --kernel applies, --summary does not)");
    c.info_cmd->add_option("--kernel", c.info.kernel, "Only kernels whose name or demangled name matches this glob (fnmatch: 'gemm*', '*<float*')");
    c.info_cmd->add_flag("--summary", c.info.summary, "Print the summary alone");
    c.info_cmd->add_flag("--load", c.info.load,
                         "Load every module each device is served (as sdm_preload does), then show the footprint per module: device bytes, "
                         "host bytes, kernels");
    c.info_cmd->add_option("-a,--archive", c.info.archives, "Mount these archive files");
    c.info_cmd->add_option("--driver", c.info.driver, "libcuda to load (default: $SDM_CUDA_DRIVER, else libcuda.so.1)");
    c.info_cmd->add_option("--nvjitlink", c.info.nvjitlink, "libnvJitLink to probe (default: $SDM_NVJITLINK, then the usual places)");
    c.info_cmd->add_option("--libsdm", c.info.libsdm,
                           "The libsdm whose embedded archive to mount, as a host using it would (default: the libsdm.so.1 the dynamic loader finds)");

    c.cache_cmd = app.add_subcommand("cache", "The kernel cache: stats, prune, clear");
    c.cache_cmd->require_subcommand(1);
    for (const char* action : {"stats", "prune", "clear"}) {
        auto* sub = c.cache_cmd->add_subcommand(action, std::string(action) == "stats" ? "Entries and bytes on disk"
                                                        : std::string(action) == "prune" ? "Remove least recently used entries down to --max-bytes (default: the cap)"
                                                                                          : "Remove every entry");
        sub->add_option("--dir", c.cache.directory, "Cache directory (default: $SDM_CACHE_DIR, $XDG_CACHE_HOME/sdm, ~/.cache/sdm)");
        sub->add_option("--max-bytes", c.cache.max_bytes, "Byte cap (default: $SDM_CACHE_MAX_BYTES, else 1 GiB)");
        sub->add_flag("--json", c.cache.json, "Machine-readable output");
        sub->callback([&cache = c.cache, action] { cache.action = action; });
    }

    c.jit_cmd = app.add_subcommand("jit", "Link every PTX module of an archive for given SMs into an overlay of cubins that mounts over it");
    c.jit_cmd->add_option("archive", c.jit.input, "Archive with PTX")->required()->check(CLI::ExistingFile);
    c.jit_cmd->add_option("-o,--output", c.jit.output, "Archive of cubins to write")->required();
    c.jit_cmd->add_option("--arch", c.jit.archs, "SMs to link for, comma-separated: 90,100,120 (a variant: 90a)")->required()->delimiter(',')->allow_extra_args(false);
    c.jit_cmd->add_option("--nvjitlink", c.jit.nvjitlink, "libnvJitLink to use (default: $SDM_NVJITLINK, then the usual places)");
    c.jit_cmd->add_option("-j,--jobs", c.jit.threads, "Parallel links (default: one per core)");
    c.jit_cmd->add_flag("-q,--quiet", c.jit.quiet, "No progress bar, no summary");
    c.jit_cmd->add_option("--sign", c.jit.sign, "Sign the output with this secret key (from sdm keygen); a signed input needs --trust")->check(CLI::ExistingFile);
    c.jit_cmd->add_option("--trust", c.jit.trust, "Public keys (.pub) one of which must have signed the input; then its PTX links in this process")
        ->check(CLI::ExistingFile);
    c.jit_cmd->add_flag("--full", c.jit.full, "Write the original's entries too: an archive that replaces it (default: an overlay of the cubins, mounted over it)");
    c.plan_cmd = app.add_subcommand("plan", "A kernel's launch plan for a problem on every row of the hardware matrix");
    c.plan_cmd->add_option("archive", c.plan.archive, "Archive whose manifest has the plan table")->required()->check(CLI::ExistingFile);
    c.plan_cmd->add_option("kernel", c.plan.kernel, "Kernel name")->required();
    c.plan_cmd->add_option("problem", c.plan.problem, "Problem parameters, NAME=VALUE (every one the kernel declares)");
    c.plan_cmd->add_flag("--json", c.plan.json, "Machine-readable output");

    c.completion_cmd = app.add_subcommand("completion", "Print the shell completion script for bash or zsh (installed with sdm)");
    c.completion_cmd->add_option("shell", c.completion_shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));

    // Listed with the others; main() answers it before parsing (print_help).
    auto* help = app.add_subcommand("help", "Print a command's help: sdm help COMMAND [SUBCOMMAND] is sdm COMMAND [SUBCOMMAND] --help");
    help->add_option("command", c.help_command, "A command, and a subcommand of it (cache prune)");
}

// The subcommand of `parent` named `name`, or null; an unknown one is said with the nearest
// name (a typo) and the list, as `sdm CMD:` (CLI11 alone would say that a subcommand is required).
CLI::App* find_command(CLI::App& parent, const std::string& name, const std::string& who) {
    std::vector<std::string> commands;
    for (auto* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_name() == name) return sub;
        commands.push_back(sub->get_name());
    }
    const std::string near = sdm::closest(name, commands);
    std::string list;
    for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c;
    fmt::print(stderr, "{}: '{}' is not {}{}. Commands: {} ({} --help)\n", who, name, who == "sdm" ? "an sdm command" : "a command of " + who,
               near.empty() ? "" : " (did you mean '" + near + "'?)", list, who);
    return nullptr;
}

// `sdm help [COMMAND [SUBCOMMAND]]` prints what `sdm COMMAND [SUBCOMMAND] --help` prints.
int print_help(CLI::App& app, int argc, char** argv) {
    CLI::App* target = &app;
    std::string who = "sdm", prefix = argv[0];  // the usage line's program and parents, as --help prints them
    for (int i = 2; i < argc; ++i) {
        if (target != &app) prefix += " " + target->get_name();
        target = find_command(*target, argv[i], who);
        if (target == nullptr) return 2;
        who += std::string(" ") + argv[i];
    }
    if (target == &app) app.name(argv[0]);
    fmt::print("{}", target == &app ? app.help() : target->help(prefix));
    return 0;
}

// Every message names its command ("sdm jit: ..."); an unknown option gets the nearest one.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App* where = &app;
    std::string who = "sdm";
    for (bool deeper = true; deeper;) {
        deeper = false;
        for (const auto* sub : where->get_subcommands()) {
            where = sub;
            who += " " + sub->get_name();
            deeper = true;
            break;
        }
    }
    std::string near;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        std::vector<std::string> options;
        for (const auto* opt : where->get_options()) {
            for (const auto& n : opt->get_lnames()) options.push_back("--" + n);
            for (const auto& n : opt->get_snames()) options.push_back("-" + n);
        }
        const std::string text = e.what();
        const auto colon = text.rfind(": ");
        const std::string given = colon == std::string::npos ? std::string() : text.substr(colon + 2);
        if (!given.empty() && given[0] == '-') {
            const std::string option = given.substr(0, given.find('='));
            near = sdm::closest(option, options);
        }
    }
    fmt::print(stderr, "{}: {}{} ({} --help)\n", who, e.what(), near.empty() ? "" : " (did you mean '" + near + "'?)", who);
    return 2;
}

// Runs the command that was parsed; an exception that reaches here is said, not a crash.
int run_command(CLI::App& app, Commands& c, const char* argv0) {
    try {
        if (c.pack_cmd->parsed()) return sdm::tools::run_pack(c.pack);
        if (c.import_cmd->parsed()) return sdm::tools::run_import(c.import);
        if (c.ls_cmd->parsed()) {
            c.ls.self = self_path(argv0);
            return sdm::tools::run_ls(c.ls);
        }
        if (c.verify_cmd->parsed()) return sdm::tools::run_verify(c.verify_paths, c.verify_quiet, c.verify_trust);
        if (c.keygen_cmd->parsed()) return sdm::tools::run_keygen(c.keygen);
        if (c.sign_cmd->parsed()) return sdm::tools::run_sign(c.sign);
        if (c.extract_cmd->parsed()) return sdm::tools::run_extract(c.extract_path, c.extract_dir, c.extract_entries, c.extract_raw, c.extract_force);
        if (c.diff_cmd->parsed()) return sdm::tools::run_diff(c.diff_left, c.diff_right, c.diff_json);
        if (c.info_cmd->parsed()) {
            c.info.self = self_path(argv0);
            return sdm::tools::run_info(c.info);
        }
        if (c.cache_cmd->parsed()) return sdm::tools::run_cache(c.cache);
        if (c.jit_cmd->parsed()) {
            c.jit.self = self_path(argv0);
            return sdm::tools::run_jit(c.jit);
        }
        if (c.plan_cmd->parsed()) return sdm::tools::run_plan(c.plan);
        if (c.push_cmd->parsed()) return sdm::tools::run_push(c.push);
        if (c.pull_cmd->parsed()) return sdm::tools::run_pull(c.pull);
        if (c.lock_cmd->parsed()) return sdm::tools::run_lock(c.lock);
        if (c.completion_cmd->parsed()) {
            fmt::print("{}", *sdm::tools::completion_script(app, c.completion_shell));
            return 0;
        }
    } catch (const std::bad_alloc&) {
        fmt::print(stderr, "sdm: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        fmt::print(stderr, "sdm: internal error: {}\n", e.what());
        return 1;
    }
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    // Not a command: the JIT helper's side of an isolated link (runtime/jit/jit_isolation.hpp), which
    // sdm jit and sdm info start as this program again. It reads its request from descriptor 3.
    if (argc == 2 && std::string_view(argv[1]) == "--jit-helper") return sdm::runtime::jit_helper_main();
    CLI::App app{"sdm: pack, import, inspect and verify sdm kernel archives; show what the runtime sees"};
    app.set_version_flag("--version", std::string("sdm ") + SDM_VERSION_STRING);
    app.require_subcommand(1);
    Commands commands;
    add_archive_commands(app, commands);
    add_registry_commands(app, commands);
    add_runtime_commands(app, commands);
    // `sdm help --help` is the help command's own help, which CLI11 prints.
    if (argc > 1 && std::string_view(argv[1]) == "help" && !(argc > 2 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")))
        return print_help(app, argc, argv);
    if (argc > 1 && argv[1][0] != '-' && find_command(app, argv[1], "sdm") == nullptr) return 2;
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: CLI11 prints them
        return report_parse_error(app, e);
    }
    return run_command(app, commands, argv[0]);
}
