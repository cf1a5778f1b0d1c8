// sdm info: the driver, every visible GPU with its class, nvJitLink, the mounted archives, and
// which archive serves each kernel on each device and why.
// A machine without a driver still gets the archive part and a clear line saying why not the rest.
// It mounts what a host's libsdm mounts: the archive embedded in that libsdm (read out of its ELF
// section, since the tool is built before the kernels it packs), then $SDM_ARCHIVE_PATH.
#include <filesystem>
#include <set>

#include <dlfcn.h>
#include <link.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "runtime/platform/embedded_archive.hpp"
#include "archive/signature_block.hpp"
#include "archive/signature_check.hpp"
#include "archive/file_map.hpp"
#include "archive/host_binary.hpp"
#include "runtime/load/image_source.hpp"
#include "common/hardware_matrix.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "runtime/jit/jit_ptxcompiler.hpp"
#include "runtime/kernel/kernel_names.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/load/library.hpp"
#include "runtime/registry/preload.hpp"
#include "runtime/runtime.hpp"
#include "kernel_filter.hpp"
#include "wording.hpp"

namespace sdm::tools {

namespace {

// The libsdm beside this tool when the dynamic loader finds none: a build tree's capi/libsdm.so.1,
// or an install tree's lib/ (any multiarch folder of it). Empty when there is none.
std::string libsdm_beside_tool() {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const std::filesystem::path up = exe.parent_path().parent_path();
    std::vector<std::filesystem::path> candidates{up / "capi" / "libsdm.so.1", up / "lib" / "libsdm.so.1", up / "lib64" / "libsdm.so.1"};
    for (const auto& entry : std::filesystem::directory_iterator(up / "lib", ec))
        if (entry.is_directory(ec)) candidates.push_back(entry.path() / "libsdm.so.1");
    for (const auto& c : candidates)
        if (std::filesystem::is_regular_file(c, ec)) return c.string();  // the soname link to the library, as the loader would follow it
    return {};
}

// The libsdm a host would load: `given`, else the libsdm.so.1 the dynamic loader finds, else the
// one beside this tool (a build or install tree). Empty with `why` set when there is none.
std::string locate_libsdm(const std::string& given, std::string& why) {
    if (!given.empty()) return given;
    void* handle = dlopen("libsdm.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* e = dlerror();
        const std::string reason = e != nullptr ? e : "no reason given";
        if (std::string beside = libsdm_beside_tool(); !beside.empty()) {
            why = "the dynamic loader finds no libsdm.so.1 (" + reason + "); read the one beside this tool, " + beside;
            return beside;
        }
        why = "the dynamic loader finds no libsdm.so.1 (" + reason + "), nor is there one beside this tool; pass --libsdm PATH";
        return {};
    }
    std::string path;
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) path = map->l_name;
    dlclose(handle);
    if (path.empty()) why = "the dynamic loader found libsdm.so.1 but not its path; pass --libsdm PATH";
    return path;
}

struct EmbeddedSource {
    std::string libsdm;                          // the file read
    std::shared_ptr<const archive::FileMap> map;  // alive as long as the runtime mounting it
    std::optional<Bytes> bytes;                  // its archive section
    std::optional<std::string> key;              // the public key its build signed the archive with
    std::string note;                            // what was found or why not, naming the file
};

EmbeddedSource embedded_source(const std::string& given) {
    EmbeddedSource out;
    out.libsdm = locate_libsdm(given, out.note);
    if (out.libsdm.empty()) return out;
    auto map = archive::FileMap::open(out.libsdm);
    if (!map) {
        out.note = map.error().message;
        return out;
    }
    auto section = archive::elf_section((*map)->bytes(), runtime::kEmbeddedArchiveSection, "libsdm " + out.libsdm);
    if (!section) out.note = section.error().message;
    else if (!*section) out.note = out.libsdm + " embeds no archive (built without nvcc, or with -Dkernels=disabled)";
    else {
        if (auto key = archive::elf_section((*map)->bytes(), runtime::kEmbeddedKeySection, "libsdm " + out.libsdm); key && *key) {
            std::string text(as_text(**key));
            while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
            out.key = std::move(text);
        }
        out.map = std::move(*map);
        out.bytes = *section;
        out.note = out.libsdm + " embeds " + std::to_string((*section)->size()) + " bytes of archive";
    }
    return out;
}

// The driver, and the load path a host's runtime on it chooses.
void add_driver(runtime::Runtime& rt, const Result<std::shared_ptr<runtime::Driver>>& driver, nlohmann::json& out) {
    if (driver) {
        out["driver"] = {{"path", (*driver)->path()}, {"version", (*driver)->version()},
                         {"version_text", fmt::format("{}.{}", (*driver)->version() / 1000, (*driver)->version() % 1000 / 10)}};
    } else {
        out["driver"] = {{"error", driver.error().message}};
    }
    if (driver) {
        // What a host's runtime on this driver chooses (with one context per device; a host
        // following the calling thread's context gets the library path): the log says it too.
        const auto path = runtime::load_path_for(**driver, false, rt.log());
        out["load_path"] = {{"path", path.path == runtime::LoadPath::library ? "library" : "module"}, {"why", path.why}};
    }
}

// Device `i`'s properties and class.
nlohmann::json device_json(runtime::Runtime& rt, int32_t i, const runtime::DeviceProperties& p) {
    nlohmann::json d{{"ordinal", i},
                     {"name", p.name},
                     {"capability", fmt::format("{}.{}", p.capability.major, p.capability.minor)},
                     {"sm_count", p.sm_count},
                     {"l2_bytes", p.l2_bytes},
                     {"smem_optin_bytes", p.smem_optin_bytes}};
    auto c = rt.devices().device_class(i);
    if (c) {
        d["class"] = device_class_name(*c);
        d["smem_cap_bytes"] = class_smem_cap(*c);
        d["smem_per_sm_bytes"] = class_smem_per_sm(*c);
        d["pdl"] = class_allows_pdl(*c);
        d["clusters"] = class_allows_clusters(*c);
    } else if (c.error().code == ErrorCode::unsupported_device) {
        // Outside the SDM kernels' matrix: a user's archive is still served here, by capability.
        d["class"] = "unclassified";
        d["matrix"] = c.error().message;
    } else {
        d["class"] = "unknown";
        d["error_class"] = c.error().message;
    }
    return d;
}

// Every visible device (none without a driver); 1 where one could not be read, else 0.
int add_devices(runtime::Runtime& rt, bool have_driver, nlohmann::json& out) {
    int status = 0;
    out["devices"] = nlohmann::json::array();
    if (!have_driver) return status;
    auto count = rt.devices().count();
    if (!count) {
        out["devices_error"] = count.error().message;
        status = 1;
    }
    for (int32_t i = 0; count && i < *count; ++i) {
        auto p = rt.devices().properties(i);
        if (!p) {
            out["devices"].push_back({{"ordinal", i}, {"error", p.error().message}});
            status = 1;
            continue;
        }
        out["devices"].push_back(device_json(rt, i, *p));
    }
    return status;
}

// Which archive serves each kernel on each device, and why (the layering rule, loading nothing):
// the kernels whose name matches `pattern` (all when empty). Returns how many those are.
size_t add_kernels(runtime::Runtime& rt, const Result<std::shared_ptr<runtime::Driver>>& driver, const std::string& pattern, nlohmann::json& out) {
    std::set<std::string> names;
    for (const auto& m : rt.archives()) {
        if (!m->manifest) continue;
        const auto kernels = m->manifest->kernels();
        // (demangled only to be matched: in the JIT helper, as sdm ls does, kernel_names.hpp)
        const auto demangled = pattern.empty() ? std::vector<std::string>(kernels.size()) : runtime::demangled_names(rt.jit(), *m);
        for (size_t i = 0; i < kernels.size(); ++i)
            if (kernel_matches(pattern, std::string(kernels[i].name), demangled[i])) names.emplace(kernels[i].name);
    }
    for (auto& d : out["devices"]) {
        if (d.contains("error")) continue;
        d["kernels"] = nlohmann::json::array();
        for (const auto& name : names) {
            auto served = sdm::runtime::served_by(rt.archive_set(), rt.devices(), d["ordinal"].get<int32_t>(), name);
            if (!served) {
                d["kernels"].push_back({{"name", name}, {"error", served.error().message}});
                continue;
            }
            const auto& e = served->archive->archive.entries()[served->selection.image.index];
            nlohmann::json k{{"name", name},
                             {"archive", served->archive->archive.label()},
                             {"module", served->module},
                             {"image", e.target()},
                             {"why", served->selection.reason},
                             {"passed_over", served->passed_over}};
            if (served->selection.path == runtime::SelectionPath::jit) {  // which backend would build it, asked, not built
                auto plan = runtime::jit_plan(rt.image_rooms(), **driver, *served);
                if (!plan) k["jit_error"] = plan.error().message;
                else k["jit"] = {{"backend", plan->backend}, {"passed_over", plan->passed_over}};
            }
            d["kernels"].push_back(std::move(k));
        }
    }
    return names.size();
}

// The skipped and mounted archives, the libsdm read, and the signature policy.
void add_archives(runtime::Runtime& rt, const EmbeddedSource& embedded, nlohmann::json& out) {
    out["skipped_archives"] = rt.skipped_archives();
    out["libsdm"] = {{"path", embedded.libsdm}, {"embedded", embedded.note}};
    out["archives"] = nlohmann::json::array();
    for (const auto& m : rt.archives()) {
        const auto& h = m->archive.header();
        out["archives"].push_back({{"label", m->archive.label()},
                                   {"embedded", m->embedded},
                                   {"entries", m->archive.entries().size()},
                                   {"kernels", m->manifest ? m->manifest->size() : 0},
                                   {"kernel_abi", fmt::format("{}.{}", h.kernel_abi_major, h.kernel_abi_minor)},
                                   {"content_version", m->manifest ? m->manifest->content_version : ""},
                                   {"signers", archive::signer_ids(m->archive)},
                                   {"signature_verified", m->archive.enforces_digests()},
                                   // The embedded archive's signature is checked against the key embedded beside
                                   // it in the same file: whoever could change one could change both.
                                   {"verified_against", !m->archive.enforces_digests() ? ""
                                                        : m->embedded                   ? "the key embedded in the same libsdm"
                                                                                        : "a trusted key"}});
    }
    nlohmann::json trusted = nlohmann::json::array();
    for (const auto& id : rt.provenance().trusted_ids()) trusted.push_back(archive::key_id_text(id));
    out["signature_policy"] = {{"policy", runtime::policy_name(rt.provenance().policy())}, {"trusted_keys", trusted}};
}

// What the details below say, counted: each archive's kernels, each device's class and how many
// of the kernels listed (those --kernel keeps) it is served and not served.
void add_summary(size_t kernels, const std::string& pattern, nlohmann::json& out) {
    nlohmann::json summary{{"kernels", kernels}, {"kernel_filter", pattern}, {"archives", nlohmann::json::array()},
                           {"devices", nlohmann::json::array()}};
    for (const auto& a : out["archives"]) summary["archives"].push_back({{"label", a["label"]}, {"kernels", a["kernels"]}});
    for (const auto& d : out["devices"]) {
        nlohmann::json row{{"ordinal", d["ordinal"]}};
        if (d.contains("error")) {
            row["error"] = d["error"];
        } else {
            size_t served = 0;
            for (const auto& k : d["kernels"]) served += k.contains("error") ? 0 : 1;
            row.update({{"name", d["name"]}, {"capability", d["capability"]}, {"class", d["class"]}, {"served", served},
                        {"not_served", d["kernels"].size() - served}});
        }
        summary["devices"].push_back(std::move(row));
    }
    out["summary"] = std::move(summary);
}

void print_summary(const nlohmann::json& out) {
    const auto& s = out["summary"];
    const std::string filter = s["kernel_filter"].get<std::string>().empty() ? "" : " matching '" + s["kernel_filter"].get<std::string>() + "'";
    fmt::print("summary: {} mounted, {}, {}{}\n", plural(s["archives"].size(), "archive"), plural(s["devices"].size(), "device"),
               plural(s["kernels"].get<size_t>(), "kernel"), filter);
    if (out["driver"].contains("error")) fmt::print("  no driver, so no devices: {}\n", out["driver"]["error"].get<std::string>());
    for (const auto& a : s["archives"]) fmt::print("  archive {}: {}\n", a["label"].get<std::string>(), plural(a["kernels"].get<size_t>(), "kernel"));
    for (const auto& d : s["devices"]) {
        if (d.contains("error")) {
            fmt::print("  device {}: {}\n", d["ordinal"].get<int>(), d["error"].get<std::string>());
            continue;
        }
        fmt::print("  device {}: {} ({}, class {}): {} served, {} not served\n", d["ordinal"].get<int>(), d["name"].get<std::string>(),
                   d["capability"].get<std::string>(), d["class"].get<std::string>(), plural(d["served"].get<size_t>(), "kernel"),
                   d["not_served"].get<size_t>());
    }
}

// One kernel's line under its device: what serves it, what was passed over, and the JIT's plan.
void print_kernel(const nlohmann::json& k) {
    if (k.contains("error")) {
        fmt::print("  kernel {}: not served: {}\n", k["name"].get<std::string>(), k["error"].get<std::string>());
        return;
    }
    fmt::print("  kernel {}: archive {}, module {}, {} ({})\n", k["name"].get<std::string>(), k["archive"].get<std::string>(),
               k["module"].get<std::string>(), k["image"].get<std::string>(), k["why"].get<std::string>());
    for (const auto& p : k["passed_over"]) fmt::print("    passed over {}\n", p.get<std::string>());
    if (k.contains("jit")) {
        const auto& j = k["jit"];
        if (j["backend"].get<std::string>().empty()) fmt::print("    JIT: no backend may build it now\n");
        else fmt::print("    JIT: {} would build it\n", j["backend"].get<std::string>());
        for (const auto& p : j["passed_over"]) fmt::print("      passed over: {}\n", p.get<std::string>());
    } else if (k.contains("jit_error")) {
        fmt::print("    JIT: {}\n", k["jit_error"].get<std::string>());
    }
}

// What the runtime holds (sdm_footprint_get, sdm_module_list_*): with `load`, after loading every
// module each device is served.
void add_footprint(runtime::Runtime& rt, bool load, bool have_driver, nlohmann::json& out) {
    nlohmann::json f{{"loaded", load}, {"errors", nlohmann::json::array()}};
    if (load && have_driver)
        for (const auto& d : out["devices"]) {
            if (d.contains("error")) continue;
            const int32_t ordinal = d["ordinal"].get<int32_t>();
            if (auto loaded = runtime::preload(rt.modules(), rt.archive_set(), rt.load_context(), ordinal, {}); !loaded)
                f["errors"].push_back("device " + std::to_string(ordinal) + ": " + loaded.error().message);
        }
    const runtime::Footprint fp = rt.footprint();
    f["device_bytes"] = fp.device_bytes;
    f["unknown_device_modules"] = fp.unknown_device_modules;
    f["host_bytes"] = fp.host_bytes;
    f["readahead_bytes"] = fp.readahead_bytes;
    f["reference_bytes"] = fp.reference_bytes;
    f["archive_memory_bytes"] = fp.archive_memory_bytes;
    f["archive_mapped_bytes"] = fp.archive_mapped_bytes;
    f["cache_bytes"] = fp.cache_bytes;
    f["modules"] = nlohmann::json::array();
    for (const auto& m : fp.modules)
        f["modules"].push_back({{"ordinal", m.ordinal}, {"module", m.module}, {"archive", m.archive}, {"device_bytes", m.device_bytes},
                                {"host_bytes", m.host_bytes}, {"kernels", m.kernels}, {"references", m.references},
                                {"state", m.draining ? "draining" : m.evicted ? "evicted" : m.retired ? "retired" : "serving"}});
    out["footprint"] = std::move(f);
}

void print_footprint(const nlohmann::json& out) {
    const auto& f = out["footprint"];
    fmt::print("footprint: {} loaded, {} B of device memory{}, {} B of host memory for libraries; archives: {} B copied, {} B mapped; "
               "{} B decoded ahead, {} B of references; kernel cache: {} B on disk{}\n",
               plural(f["modules"].size(), "module"), f["device_bytes"].get<uint64_t>(),
               f["unknown_device_modules"].get<uint32_t>() == 0 ? "" : fmt::format(" ({} by the driver's JIT: unknown)", f["unknown_device_modules"].get<uint32_t>()),
               f["host_bytes"].get<uint64_t>(), f["archive_memory_bytes"].get<uint64_t>(), f["archive_mapped_bytes"].get<uint64_t>(),
               f["readahead_bytes"].get<uint64_t>(), f["reference_bytes"].get<uint64_t>(), f["cache_bytes"].get<uint64_t>(),
               f["loaded"].get<bool>() ? "" : " (nothing loaded: pass --load to load every module first)");
    for (const auto& m : f["modules"])
        fmt::print("  module {} of {} on device {}: {} B device, {} B host, {}, {}\n", m["module"].get<std::string>(), m["archive"].get<std::string>(),
                   m["ordinal"].get<int32_t>(), m["device_bytes"].get<uint64_t>(), m["host_bytes"].get<uint64_t>(),
                   plural(m["kernels"].get<uint32_t>(), "kernel"), m["state"].get<std::string>());
    for (const auto& e : f["errors"]) fmt::print("  not loaded: {}\n", e.get<std::string>());
}

// Each device: its properties and class, then its kernels.
void print_devices(const nlohmann::json& out) {
    for (const auto& d : out["devices"]) {
        if (d.contains("error")) {
            fmt::print("device {}: {}\n", d["ordinal"].get<int>(), d["error"].get<std::string>());
            continue;
        }
        fmt::print("device {}: {}, compute capability {}, class {}, {} SMs, {} B L2, {} B opt-in shared memory per block",
                   d["ordinal"].get<int>(), d["name"].get<std::string>(), d["capability"].get<std::string>(), d["class"].get<std::string>(),
                   d["sm_count"].get<int>(), d["l2_bytes"].get<uint64_t>(), d["smem_optin_bytes"].get<int>());
        if (d.contains("smem_cap_bytes"))
            fmt::print(", plans assume {} B (per SM {} B), PDL {}, clusters {}\n", d["smem_cap_bytes"].get<int>(), d["smem_per_sm_bytes"].get<int>(),
                       d["pdl"].get<bool>() ? "yes" : "no", d["clusters"].get<bool>() ? "yes" : "no");
        else if (d.contains("matrix"))
            fmt::print("\n  unclassified: outside the SDM kernels' hardware matrix, which archives declaring it follow ({}); any other "
                       "archive is served here by compute capability\n",
                       d["matrix"].get<std::string>());
        else
            fmt::print("\n  class unknown: {}\n", d["error_class"].get<std::string>());
        for (const auto& k : d["kernels"]) print_kernel(k);
    }
}

// The signature policy, then one line per mounted archive.
void print_archives(const nlohmann::json& out) {
    if (out["archives"].empty()) fmt::print("archives: none mounted (pass --archive FILE, or --libsdm a libsdm that embeds the SDM kernels)\n");
    const auto& policy = out["signature_policy"];
    fmt::print("signature policy: {}{}\n", policy["policy"].get<std::string>(),
               policy["policy"] == "off" ? " (SDM_REQUIRE_SIGNED, sdm_runtime_params.signature_policy)"
                                         : fmt::format(", trusting {} {}", plural(policy["trusted_keys"].size(), "key"), policy["trusted_keys"].dump()));
    for (const auto& a : out["archives"]) {
        std::string signers;
        for (const auto& id : a["signers"]) signers += (signers.empty() ? "" : ", ") + id.get<std::string>();
        const auto abi = a["kernel_abi"].get<std::string>();
        const auto content = a["content_version"].get<std::string>();
        fmt::print("archive: {}{}, {}, {}, {}{}, {}{}\n", a["label"].get<std::string>(), a["embedded"].get<bool>() ? " (embedded)" : "",
                   plural(a["entries"].get<size_t>(), "entry", "entries"), plural(a["kernels"].get<size_t>(), "kernel"),
                   abi == "0.0" ? "no kernel ABI" : "kernel ABI " + abi, content.empty() ? "" : ", content " + content,
                   signers.empty() ? "unsigned" : "signed by " + signers,
                   !a["signature_verified"].get<bool>() ? ""
                   : a["embedded"].get<bool>()
                       ? " (consistent with the key embedded beside it in the same file: the archive was not changed alone, which says nothing of who "
                         "built the file; compare the key id with its builder's)"
                       : " (verified by a trusted key)");
    }
}

}  // namespace

// Gathers everything into one JSON document, then prints it as JSON or as text.
int run_info(const InfoOptions& o) {
    const EmbeddedSource embedded = embedded_source(o.libsdm);
    runtime::RuntimeOptions options;
    options.embedded_bytes = embedded.bytes;
    options.embedded_key = embedded.key;
    options.cuda_driver = o.driver;
    options.log_level = runtime::LogLevel::error;
    options.isolation.helper = {o.self, "--jit-helper"};  // where --kernel's demangling runs (kernel_names.hpp)
    runtime::Runtime rt(std::move(options));
    int status = 0;
    for (const auto& path : o.archives) {
        auto mounted = rt.mount_file(path);
        if (!mounted) {
            fmt::print(stderr, "sdm info: {}\n", mounted.error().message);
            status = 1;
        }
    }

    nlohmann::json out;
    auto driver = rt.driver();
    add_driver(rt, driver, out);
    if (add_devices(rt, driver.ok(), out) != 0) status = 1;
    auto jit = runtime::NvJitLink::load(o.nvjitlink);
    if (jit) out["nvjitlink"] = {{"path", jit->file()}, {"version", jit->version()}};
    else out["nvjitlink"] = {{"error", jit.error().message}};
    const auto ptxc = runtime::ptx_compiler_version();
    if (ptxc) out["nvptxcompiler"] = {{"version", *ptxc}};
    else out["nvptxcompiler"] = {{"error", ptxc.error().message}};
    const size_t kernels = add_kernels(rt, driver, o.kernel, out);
    add_archives(rt, embedded, out);
    add_summary(kernels, o.kernel, out);
    add_footprint(rt, o.load, driver.ok(), out);

    if (o.json) {
        fmt::print("{}\n", out.dump(2));
        return status;
    }
    print_summary(out);
    if (o.summary) return status;
    fmt::print("\n");
    if (driver)
        fmt::print("driver: {} (CUDA {})\n", out["driver"]["path"].get<std::string>(), out["driver"]["version_text"].get<std::string>());
    else
        fmt::print("driver: none: {}\n", driver.error().message);
    if (out.contains("load_path")) fmt::print("load path: {} ({})\n", out["load_path"]["path"].get<std::string>(), out["load_path"]["why"].get<std::string>());
    if (driver && out["devices"].empty()) fmt::print("devices: none visible\n");
    print_devices(out);
    if (jit) fmt::print("nvJitLink: {} (version {})\n", jit->file(), jit->version());
    else fmt::print("nvJitLink: not found ({})\n", jit.error().message);  // with every file tried, one per line
    if (ptxc) fmt::print("nvPTXCompiler: linked in (version {})\n", *ptxc);
    else fmt::print("nvPTXCompiler: not built into this libsdm\n");
    fmt::print("libsdm: {}\n", embedded.note);
    for (const auto& skipped : out["skipped_archives"]) fmt::print("{}\n", skipped.get<std::string>());
    print_archives(out);
    print_footprint(out);
    return status;
}

}  // namespace sdm::tools
