#include "packer.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>
#include <set>
#include <optional>

#include "progress.hpp"
#include "wording.hpp"
#include "write_archive.hpp"
#include "archive/fatbin.hpp"
#include "archive/image.hpp"
#include "archive/file_map.hpp"
#include "archive/kernel_params.hpp"
#include "manifest_source.hpp"

namespace sdm::tools {
namespace {

// The kernels one image defines, with their derived signatures.
struct ImageKernels {
    std::string origin;
    archive::Kind kind;
    std::vector<archive::KernelParams> kernels;
};

// Cubin and PTX images yield their kernels; a fatbin input yields those of each cubin and PTX entry
// (LTO-IR, encoded or not, says nothing: it is skipped).
Result<std::vector<ImageKernels>> kernels_of(const PackInput& in) {
    std::vector<ImageKernels> out;
    ByteVector scratch;
    SDM_TRY_GET(bytes, in.input.raw(scratch));
    if (in.input.kind == archive::Kind::cubin || in.input.kind == archive::Kind::ptx) {
        if (in.input.kind == archive::Kind::cubin)  // a device link's input would make a module no driver loads
            if (auto info = archive::inspect_cubin(*bytes))
                if (auto refused = archive::link_input_error(*info, in.origin)) return *refused;
        auto kernels = archive::image_kernel_params(in.input.kind, *bytes);
        if (!kernels) return make_error(kernels.error().code, in.origin + ": " + kernels.error().message);
        out.push_back({in.origin, in.input.kind, std::move(*kernels)});
    } else if (in.input.kind == archive::Kind::fatbin) {
        auto container = archive::parse_fatbin(*bytes);
        if (!container) return make_error(container.error().code, in.origin + ": " + container.error().message);
        for (const auto& entry : container->entries) {
            if (entry.image_kind != archive::Kind::cubin && entry.image_kind != archive::Kind::ptx) continue;
            const std::string origin = in.origin + " " + archive::fatbin_entry_label(entry);
            auto payload = archive::fatbin_entry_payload(entry);
            if (!payload) return make_error(payload.error().code, origin + ": " + payload.error().message);
            if (entry.image_kind == archive::Kind::cubin)
                if (auto info = archive::inspect_cubin(*payload))
                    if (auto refused = archive::link_input_error(*info, origin)) return *refused;
            auto kernels = archive::image_kernel_params(*entry.image_kind, *payload);
            if (!kernels) return make_error(kernels.error().code, origin + ": " + kernels.error().message);
            out.push_back({origin, *entry.image_kind, std::move(*kernels)});
        }
    }
    return out;
}

const archive::KernelParams* find_params(const ImageKernels& image, const std::string& name) {
    const auto it = std::lower_bound(image.kernels.begin(), image.kernels.end(), name,
                                     [](const archive::KernelParams& p, const std::string& n) { return p.name < n; });
    return it != image.kernels.end() && it->name == name ? &*it : nullptr;
}

// Whether two signatures of one kernel put parameters of the same sizes at the same offsets.
bool same_layout(const archive::Signature& a, const archive::Signature& b) {
    if (a.size() != b.size()) return false;
    const auto oa = archive::param_offsets(a), ob = archive::param_offsets(b);
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].size != b[i].size || oa[i] != ob[i]) return false;
    return true;
}

// At most a few lines of each kind of warning, then a count.
class Warnings {
public:
    explicit Warnings(const char* command) : command_(command) {}
    void add(const std::string& kind, const std::string& text) {
        if (++counts_[kind] <= 3) fmt::print(stderr, "sdm {}: warning: {}\n", command_, text);
    }
    ~Warnings() {
        for (const auto& [kind, count] : counts_)
            if (count > 3) fmt::print(stderr, "sdm {}: warning: ... and {} more {}\n", command_, count - 3, kind);
    }

private:
    const char* command_;
    std::map<std::string, size_t> counts_;
};

// The manifest --manifest names, parsed (none without it).
Result<std::optional<archive::Manifest>> read_declared(const std::string& path) {
    if (path.empty()) return std::optional<archive::Manifest>();
    auto source = archive::read_file(path);
    if (!source) return make_error(source.error().code, "manifest " + source.error().message);
    SDM_TRY_GET(parsed, parse_manifest_source(std::string(as_text(*source)), path));
    return std::optional<archive::Manifest>(std::move(*parsed));
}

// The kernels of every image, by module in input order.
struct ModuleImages {
    std::vector<std::string> order;
    std::map<std::string, std::vector<ImageKernels>> images;
};

Result<ModuleImages> images_by_module(const std::vector<PackInput>& inputs) {
    ModuleImages modules;
    for (const PackInput& in : inputs) {
        if (!modules.images.count(in.input.name)) modules.order.push_back(in.input.name);
        auto& images = modules.images[in.input.name];
        SDM_TRY_GET(kernels, kernels_of(in));
        for (auto& image : *kernels) images.push_back(std::move(image));
    }
    return modules;
}

// Declared kernels: their module has images, every cubin and PTX image of it defines them,
// with a signature of the declared layout.
Result<void> check_declared(const archive::Manifest& manifest, const ModuleImages& modules) {
    std::map<std::string, std::vector<const archive::KernelSpec*>> declared_by_module;
    for (const auto& k : manifest.kernels) declared_by_module[k.module].push_back(&k);
    for (const auto& [module, kernels] : declared_by_module) {
        const auto images = modules.images.find(module);
        if (images == modules.images.end())
            return make_error(ErrorCode::invalid_argument,
                              "the manifest lists kernels of module " + module + " (" + kernels.front()->name + "), but no image of it was given");
        for (const auto& image : images->second) {
            std::string missing;
            size_t missing_count = 0;
            for (const auto* k : kernels)
                if (!find_params(image, k->name)) {
                    missing += (missing.empty() ? "" : ", ") + k->name;
                    ++missing_count;
                }
            if (!missing.empty())
                return make_error(ErrorCode::invalid_argument, image.origin + " does not define " + (missing_count == 1 ? "kernel " : "kernels ") + missing +
                                                                   " that the manifest lists for module " + module + "; rebuild the image or fix the manifest");
            for (const auto* k : kernels) {
                const archive::KernelParams* params = find_params(image, k->name);
                if (!params->offsets_exact)
                    return make_error(ErrorCode::invalid_argument, "kernel " + k->name + ": no signature describes the parameters of " + image.origin +
                                                                       " (" + params->unrepresentable +
                                                                       "), so the manifest's cannot be checked; leave the kernel out of the manifest");
                SDM_TRY(archive::check_signature_layout(k->name, k->signature, params->signature, image.origin));
            }
        }
    }
    return {};
}

// Every other kernel, with its derived signature: PTX's where the module has PTX (it records
// alignments; a cubin only sizes and offsets). A kernel that several modules define is listed once
// per module (manifest 1.2): each is fetched by its module-qualified name, MODULE!NAME, and its
// plain name is ambiguous; a warning says so. Added to `manifest`, which ends sorted by (name,
// module); returns how many were derived.
Result<size_t> derive_kernels(archive::Manifest& manifest, ModuleImages& modules, Warnings& warnings) {
    using Key = std::pair<std::string, std::string>;  // (name, module)
    std::map<Key, std::pair<archive::KernelSpec, bool /* from PTX */>> derived;
    std::map<Key, std::string> first_origin;
    std::map<std::string, std::vector<std::string>> modules_of;  // name -> the modules defining it, in order
    for (const auto& k : manifest.kernels) modules_of[k.name].push_back(k.module);
    for (const std::string& module : modules.order) {
        for (const auto& image : modules.images[module]) {
            for (const auto& kernel : image.kernels) {
                if (manifest.find_kernel(kernel.name, module)) continue;
                const bool ptx = image.kind == archive::Kind::ptx;
                const Key key{kernel.name, module};
                auto existing = derived.find(key);
                if (!kernel.unrepresentable.empty()) {
                    warnings.add("kernels left out", "kernel " + kernel.name + " of " + image.origin + " is left out of the manifest: " +
                                                         kernel.unrepresentable);
                    continue;
                }
                archive::KernelSpec spec{kernel.name, module, kernel.signature, {}, {}};
                if (auto valid = archive::validate_kernel(spec, archive::limits::max_long_name_length); !valid) {
                    warnings.add("kernels left out", "a kernel of " + image.origin + " is left out of the manifest: " + valid.error().message);
                    continue;
                }
                if (existing == derived.end()) {
                    derived.emplace(key, std::pair{std::move(spec), ptx});
                    first_origin.emplace(key, image.origin);
                    modules_of[kernel.name].push_back(module);
                    continue;
                }
                if (!same_layout(existing->second.first.signature, kernel.signature))
                    return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + " of module " + module + ": " + first_origin[key] +
                                                                       " has parameters (" + archive::signature_text(existing->second.first.signature) +
                                                                       "), " + image.origin + " has (" + archive::signature_text(kernel.signature) +
                                                                       "); rebuild the module's images from one source");
                if (ptx && !existing->second.second) existing->second = {std::move(spec), true};
            }
        }
    }
    for (const auto& [name, in] : modules_of) {
        if (in.size() < 2) continue;
        std::string list, spellings;
        for (size_t i = 0; i < in.size(); ++i) {
            list += (i == 0 ? "" : i + 1 == in.size() ? " and " : ", ") + in[i];
            spellings += (i == 0 ? "" : ", ") + archive::qualified_name(in[i], name);
        }
        warnings.add("kernels defined in more than one module", "kernel " + name + " is defined in modules " + list + ": each is kept, fetched by its module-qualified name (" +
                                                                    spellings + "); the plain name " + name + " is ambiguous (SDM_ERROR_AMBIGUOUS)");
    }
    size_t derived_count = 0;
    for (auto& [key, spec] : derived) {
        manifest.kernels.push_back(std::move(spec.first));
        ++derived_count;
    }
    std::sort(manifest.kernels.begin(), manifest.kernels.end(), [](const auto& a, const auto& b) { return std::tie(a.name, a.module) < std::tie(b.name, b.module); });
    return derived_count;
}

// The writer's options from the command line's, its progress drawn on `progress`.
archive::WriterOptions writer_options(const WriteOptions& o, Progress& progress) {
    archive::WriterOptions wo;
    wo.level = o.level;
    wo.dictionary = o.dict == "auto";
    wo.prefix = o.prefix == "auto";
    wo.store_cubins = o.store_cubins;
    wo.min_saving = o.min_saving;
    wo.frame_bytes = o.frame_bytes;
    wo.compress = !o.store;
    wo.threads = o.jobs;
    wo.archive_version = o.archive_version;
    wo.release_line = o.release_line;
    wo.progress = [&progress](const char* phase, size_t done, size_t total) { progress.update(phase, done, total); };
    return wo;
}

// The manifest (where one was declared or kernels were found), then every input, into the writer.
Result<void> add_entries(archive::ArchiveWriter& writer, const archive::Manifest& manifest, bool declared, const WriteOptions& o,
                         std::vector<PackInput>& inputs) {
    if (declared || !manifest.kernels.empty()) {
        auto valid = archive::validate_manifest(manifest);
        if (!valid) return make_error(valid.error().code, "the manifest of " + o.output + ": " + valid.error().message);
        auto encoded = archive::encode_manifest(manifest);
        if (!encoded) return make_error(encoded.error().code, (declared ? o.manifest : o.output) + ": " + encoded.error().message);
        SDM_TRY(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, std::move(*encoded)}));
    }
    for (PackInput& in : inputs) {
        auto added = writer.add(std::move(in.input));
        if (!added) return make_error(added.error().code, in.origin + ": " + added.error().message);
    }
    inputs.clear();
    return {};
}

}  // namespace

int pack_inputs(const char* command, const WriteOptions& o, std::vector<PackInput> inputs) {
    if (o.dict != "auto" && o.dict != "off") {
        fmt::print(stderr, "sdm {}: --dict must be auto or off, not '{}'\n", command, o.dict);
        return 2;
    }
    if (o.prefix != "auto" && o.prefix != "off") {
        fmt::print(stderr, "sdm {}: --prefix must be auto or off, not '{}'\n", command, o.prefix);
        return 2;
    }
    if (o.level < 1 || o.level > 22) {
        fmt::print(stderr, "sdm {}: --level must be between 1 and 22\n", command);
        return 2;
    }
    const auto fail = [&](const std::string& message) {
        fmt::print(stderr, "sdm {}: {}\n", command, message);
        return 1;
    };
    Warnings warnings(command);

    auto declared = read_declared(o.manifest);
    if (!declared) return fail(declared.error().message);
    auto modules = images_by_module(inputs);
    if (!modules) return fail(modules.error().message);
    archive::Manifest manifest = *declared ? **declared : archive::Manifest{};
    if (auto checked = check_declared(manifest, *modules); !checked) return fail(checked.error().message);
    const auto derived_count = derive_kernels(manifest, *modules, warnings);
    if (!derived_count) return fail(derived_count.error().message);
    if (auto lowered = lower_name_expressions(o.names, manifest); !lowered) return fail(lowered.error().message);

    Progress progress(command, !o.quiet);
    archive::ArchiveWriter writer(writer_options(o, progress));
    if (auto added = add_entries(writer, manifest, declared->has_value(), o, inputs); !added) return fail(added.error().message);

    archive::WriterReport report;
    auto written = write_verified_archive(writer, o.output, &report, o.sign);
    progress.finish();
    if (!written) return fail(written.error().message);
    if (!o.quiet)
        fmt::print("{}: {}, {} ({} with derived signatures), {} raw -> {} ({:.3f}x); {} prefix-coded, "
                   "{} dictionary-coded ({} of dictionary), {} stored\n",
                   o.output, plural(report.entries, "entry", "entries"), plural(manifest.kernels.size(), "kernel"), *derived_count,
                   plural(report.raw_bytes, "byte"), plural(report.archive_bytes, "byte"),
                   report.raw_bytes ? static_cast<double>(report.archive_bytes) / static_cast<double>(report.raw_bytes) : 0.0,
                   report.prefix_coded, report.dictionary_coded, plural(report.dictionary_bytes, "byte"), report.stored);
    return 0;
}

}  // namespace sdm::tools
