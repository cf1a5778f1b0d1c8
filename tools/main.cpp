// sdm: the command-line tool over the archive format (and, as they land, the runtime).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include <unistd.h>

#include "commands.hpp"
#include "common/edit_distance.hpp"
#include "completion.hpp"
#include "runtime/jit_isolation.hpp"
#include "sdm_version.h"

namespace {

// This program's own path, for the JIT helper it starts (itself again, with --jit-helper).
std::string self_path(const char* argv0) {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(argv0);
}

}  // namespace

int main(int argc, char** argv) {
    // Not a command: the JIT helper's side of an isolated link (runtime/jit_isolation.hpp), which
    // sdm jit and sdm info start as this program again. It reads its request from descriptor 3.
    if (argc == 2 && std::string_view(argv[1]) == "--jit-helper") return sdm::runtime::jit_helper_main();
    CLI::App app{"sdm: pack, import, inspect and verify sdm kernel archives; show what the runtime sees"};
    app.set_version_flag("--version", std::string("sdm ") + SDM_VERSION_STRING);
    app.require_subcommand(1);

    // The options of pack and import that decide how the archive is written.
    const auto write_options = [](CLI::App* cmd, sdm::tools::WriteOptions& w) {
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
        cmd->add_flag("--store", w.store, "Keep every entry uncompressed");
        cmd->add_option("-j,--jobs", w.jobs, "Compression threads (default: one per core; the archive is the same for any number)");
        cmd->add_flag("-q,--quiet", w.quiet, "No progress bar, no summary");
        cmd->add_option("--sign", w.sign, "Sign the archive with this secret key (from sdm keygen) before it is written")->check(CLI::ExistingFile);
    };
    sdm::tools::PackOptions pack;
    auto* pack_cmd = app.add_subcommand("pack", "Pack compiled images (and a manifest) into an archive");
    write_options(pack_cmd, pack.write);
    pack_cmd->add_option("images", pack.images, "Images as MODULE:TARGET=PATH, TARGET one of sm_XY[a|f], compute_XY[a|f], lto_XY[a|f], fatbin");

    sdm::tools::ImportOptions import;
    auto* import_cmd = app.add_subcommand("import", "Import cubins, PTX, LTO-IR, fatbins and the device code of shared libraries, "
                                                    "executables and static archives into an archive: a module per fatbin container");
    write_options(import_cmd, import.write);
    import_cmd->add_option("inputs", import.inputs, "Files: cubin, PTX, LTO-IR, .fatbin, ELF (.so, executable, .o) or ar (.a)")
        ->required()->check(CLI::ExistingFile);
    import_cmd->add_option("--arch", import.archs, "Keep only these cubin (and LTO-IR) targets, comma-separated: sm_80,sm_90a,lto_90")->delimiter(',');
    import_cmd->add_option("--ptx", import.ptx, "Keep only these PTX targets, comma-separated: compute_90; none: no PTX (a cubin-only archive)")->delimiter(',');

    std::string ls_path;
    bool ls_json = false;
    auto* ls_cmd = app.add_subcommand("ls", "List an archive's entries and kernels");
    ls_cmd->add_option("archive", ls_path, "Archive file")->required();
    ls_cmd->add_flag("--json", ls_json, "Machine-readable output");
    bool ls_demangle = false;
    ls_cmd->add_flag("--demangle,-C", ls_demangle, "Show kernel names as C++ declarations (demangled)");

    std::vector<std::string> verify_paths, verify_trust;
    bool verify_quiet = false;
    auto* verify_cmd = app.add_subcommand("verify", "Check every checksum and parse (and with --trust, the signature and every payload's signed digest); "
                                                    "exit 1 naming the first bad entry");
    verify_cmd->add_option("archives", verify_paths, "Archive files")->required();
    verify_cmd->add_flag("-q,--quiet", verify_quiet, "Print only failures");
    verify_cmd->add_option("--trust", verify_trust, "Public key files (.pub): the archive must carry a valid signature by one of them")
        ->check(CLI::ExistingFile);

    sdm::tools::KeygenOptions keygen;
    auto* keygen_cmd = app.add_subcommand("keygen", "Make an Ed25519 signing key: NAME.key (secret, mode 0600) and NAME.pub");
    keygen_cmd->add_option("-o,--output", keygen.output, "NAME (with --public: the .pub file to write)")->required();
    keygen_cmd->add_option("--public", keygen.public_of, "Write only the public half of this secret key")->check(CLI::ExistingFile);
    keygen_cmd->add_flag("--force", keygen.force, "Replace key files that exist");
    keygen_cmd->add_flag("-q,--quiet", keygen.quiet, "Print nothing");

    sdm::tools::SignOptions sign;
    auto* sign_cmd = app.add_subcommand("sign", "Add a signature to an archive (the payloads do not move; other signatures are kept)");
    sign_cmd->add_option("archive", sign.archive, "Archive file")->required()->check(CLI::ExistingFile);
    sign_cmd->add_option("--key", sign.key, "Secret key file (from sdm keygen)")->required()->check(CLI::ExistingFile);
    sign_cmd->add_option("-o,--output", sign.output, "Write the signed archive here (default: replace the archive atomically)");
    sign_cmd->add_flag("-q,--quiet", sign.quiet, "Print nothing");

    std::string extract_path, extract_dir = ".";
    std::vector<std::string> extract_entries;
    bool extract_raw = false, extract_force = false;
    auto* extract_cmd = app.add_subcommand("extract", "Write entries back to files");
    extract_cmd->add_option("archive", extract_path, "Archive file")->required();
    extract_cmd->add_option("entries", extract_entries, "MODULE:TARGET, 'manifest' or entry numbers (default: all)");
    extract_cmd->add_option("-C,--directory", extract_dir, "Directory to write into")->capture_default_str();
    extract_cmd->add_flag("--raw-manifest", extract_raw, "Write the manifest in its binary form instead of TOML");
    extract_cmd->add_flag("--force", extract_force, "Replace regular files that exist (never links, directories or devices)");

    std::string diff_left, diff_right;
    bool diff_json = false;
    auto* diff_cmd = app.add_subcommand("diff", "Entries added, removed and changed between two archives (exit 1 when they differ)");
    diff_cmd->add_option("old", diff_left, "Archive file")->required();
    diff_cmd->add_option("new", diff_right, "Archive file")->required();
    diff_cmd->add_flag("--json", diff_json, "Machine-readable output");

    sdm::tools::InfoOptions info;
    auto* info_cmd = app.add_subcommand("info", "The driver, every visible GPU and its class, nvJitLink, and the mounted archives");
    info_cmd->add_flag("--json", info.json, "Machine-readable output");
    info_cmd->add_option("-a,--archive", info.archives, "Mount these archive files");
    info_cmd->add_option("--driver", info.driver, "libcuda to load (default: $SDM_CUDA_DRIVER, else libcuda.so.1)");
    info_cmd->add_option("--nvjitlink", info.nvjitlink, "libnvJitLink to probe (default: $SDM_NVJITLINK, then the usual places)");
    info_cmd->add_option("--libsdm", info.libsdm,
                         "The libsdm whose embedded archive to mount, as a host using it would (default: the libsdm.so.1 the dynamic loader finds)");

    sdm::tools::CacheCommand cache;
    auto* cache_cmd = app.add_subcommand("cache", "The kernel cache: stats, prune, clear");
    cache_cmd->require_subcommand(1);
    for (const char* action : {"stats", "prune", "clear"}) {
        auto* sub = cache_cmd->add_subcommand(action, std::string(action) == "stats" ? "Entries and bytes on disk"
                                                      : std::string(action) == "prune" ? "Remove least recently used entries down to --max-bytes (default: the cap)"
                                                                                        : "Remove every entry");
        sub->add_option("--dir", cache.directory, "Cache directory (default: $SDM_CACHE_DIR, $XDG_CACHE_HOME/sdm, ~/.cache/sdm)");
        sub->add_option("--max-bytes", cache.max_bytes, "Byte cap (default: $SDM_CACHE_MAX_BYTES, else 1 GiB)");
        sub->add_flag("--json", cache.json, "Machine-readable output");
        sub->callback([&cache, action] { cache.action = action; });
    }

    sdm::tools::JitOptions jit;
    auto* jit_cmd = app.add_subcommand("jit", "Link every PTX module of an archive for given SMs into an overlay of cubins that mounts over it");
    jit_cmd->add_option("archive", jit.input, "Archive with PTX")->required()->check(CLI::ExistingFile);
    jit_cmd->add_option("-o,--output", jit.output, "Archive of cubins to write")->required();
    jit_cmd->add_option("--arch", jit.archs, "SMs to link for, comma-separated: 90,100,120 (a variant: 90a)")->required()->delimiter(',');
    jit_cmd->add_option("--nvjitlink", jit.nvjitlink, "libnvJitLink to use (default: $SDM_NVJITLINK, then the usual places)");
    jit_cmd->add_option("-j,--jobs", jit.threads, "Parallel links (default: one per core)");
    jit_cmd->add_flag("-q,--quiet", jit.quiet, "No progress bar, no summary");
    jit_cmd->add_option("--sign", jit.sign, "Sign the output with this secret key (from sdm keygen); a signed input needs --trust")->check(CLI::ExistingFile);
    jit_cmd->add_option("--trust", jit.trust, "Public keys (.pub) one of which must have signed the input; then its PTX links in this process")
        ->check(CLI::ExistingFile);
    jit_cmd->add_flag("--full", jit.full, "Write the original's entries too: an archive that replaces it (default: an overlay of the cubins, mounted over it)");
    sdm::tools::PlanOptions plan;
    auto* plan_cmd = app.add_subcommand("plan", "A kernel's launch plan for a problem on every row of the hardware matrix");
    plan_cmd->add_option("archive", plan.archive, "Archive whose manifest has the plan table")->required()->check(CLI::ExistingFile);
    plan_cmd->add_option("kernel", plan.kernel, "Kernel name")->required();
    plan_cmd->add_option("problem", plan.problem, "Problem parameters, NAME=VALUE (every one the kernel declares)");
    plan_cmd->add_flag("--json", plan.json, "Machine-readable output");

    std::string completion_shell;
    auto* completion_cmd = app.add_subcommand("completion", "Print the shell completion script for bash or zsh (installed with sdm)");
    completion_cmd->add_option("shell", completion_shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));

    // The subcommand of `parent` named `name`, or null; an unknown one is said with the nearest
    // name (a typo) and the list, as `sdm CMD:` (CLI11 alone would say that a subcommand is required).
    const auto find_command = [](CLI::App& parent, const std::string& name, const std::string& who) -> CLI::App* {
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
    };
    // `sdm help [COMMAND [SUBCOMMAND]]` prints what `sdm COMMAND [SUBCOMMAND] --help` prints.
    if (argc > 1 && std::string_view(argv[1]) == "help") {
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
    if (argc > 1 && argv[1][0] != '-' && find_command(app, argv[1], "sdm") == nullptr) return 2;
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: CLI11 prints them
        // Every message names its command ("sdm jit: ..."); an unknown option gets the nearest one.
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
    try {
        if (pack_cmd->parsed()) return sdm::tools::run_pack(pack);
        if (import_cmd->parsed()) return sdm::tools::run_import(import);
        if (ls_cmd->parsed()) return sdm::tools::run_ls(ls_path, ls_json, ls_demangle, self_path(argv[0]));
        if (verify_cmd->parsed()) return sdm::tools::run_verify(verify_paths, verify_quiet, verify_trust);
        if (keygen_cmd->parsed()) return sdm::tools::run_keygen(keygen);
        if (sign_cmd->parsed()) return sdm::tools::run_sign(sign);
        if (extract_cmd->parsed()) return sdm::tools::run_extract(extract_path, extract_dir, extract_entries, extract_raw, extract_force);
        if (diff_cmd->parsed()) return sdm::tools::run_diff(diff_left, diff_right, diff_json);
        if (info_cmd->parsed()) return sdm::tools::run_info(info);
        if (cache_cmd->parsed()) return sdm::tools::run_cache(cache);
        if (jit_cmd->parsed()) {
            jit.self = self_path(argv[0]);
            return sdm::tools::run_jit(jit);
        }
        if (plan_cmd->parsed()) return sdm::tools::run_plan(plan);
        if (completion_cmd->parsed()) {
            fmt::print("{}", *sdm::tools::completion_script(app, completion_shell));
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
