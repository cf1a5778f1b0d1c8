// sdm pack: manifest source + compiled images -> archive.
#include <fmt/format.h>

#include <map>
#include <set>

#include "commands.hpp"
#include "file_map.hpp"
#include "image.hpp"
#include "manifest_source.hpp"
#include "writer.hpp"

namespace sdm::tools {
namespace {

struct ImageArg {
    archive::WriterInput input;
    std::string path;
};

Result<ImageArg> parse_image_arg(const std::string& arg) {
    const auto colon = arg.find(':');
    const auto equals = arg.find('=', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || equals == std::string::npos)
        return make_error(ErrorCode::invalid_argument, "image '" + arg + "' must be MODULE:TARGET=PATH (gather:sm_90a=gather.sm_90a.cubin)");
    ImageArg out;
    out.input.name = arg.substr(0, colon);
    const std::string target = arg.substr(colon + 1, equals - colon - 1);
    out.path = arg.substr(equals + 1);
    if (target == "fatbin") {
        out.input.kind = archive::Kind::fatbin;
    } else {
        const auto t = archive::parse_target(target);
        if (!t)
            return make_error(ErrorCode::invalid_argument, "image '" + arg + "': target '" + target +
                                                               "' must be sm_XY[a|f] (cubin), compute_XY[a|f] (PTX), lto_XY[a|f] (LTO-IR) or fatbin");
        out.input.kind = t->kind;
        out.input.sm = t->sm;
        out.input.variant = t->variant;
    }
    auto bytes = archive::read_file(out.path);
    if (!bytes) return make_error(bytes.error().code, "image '" + arg + "': " + bytes.error().message);
    out.input.bytes = std::move(*bytes);
    return out;
}

}  // namespace

int run_pack(const PackOptions& o) {
    if (o.dict != "auto" && o.dict != "off") {
        fmt::print(stderr, "sdm pack: --dict must be auto or off, not '{}'\n", o.dict);
        return 2;
    }
    if (o.prefix != "auto" && o.prefix != "off") {
        fmt::print(stderr, "sdm pack: --prefix must be auto or off, not '{}'\n", o.prefix);
        return 2;
    }
    if (o.level < 1 || o.level > 22) {
        fmt::print(stderr, "sdm pack: --level must be between 1 and 22\n");
        return 2;
    }
    Progress progress("pack", !o.quiet);
    archive::WriterOptions wo;
    wo.level = o.level;
    wo.dictionary = o.dict == "auto";
    wo.prefix = o.prefix == "auto";
    wo.store_cubins = o.store_cubins;
    wo.compress = !o.store;
    wo.progress = [&](size_t done, size_t total) { progress.update(done, total); };
    archive::ArchiveWriter writer(wo);

    std::optional<archive::Manifest> manifest;
    if (!o.manifest.empty()) {
        auto source = archive::read_file(o.manifest);
        if (!source) {
            fmt::print(stderr, "sdm pack: manifest {}\n", source.error().message);
            return 1;
        }
        auto parsed = parse_manifest_source(std::string(as_text(*source)), o.manifest);
        if (!parsed) {
            fmt::print(stderr, "sdm pack: {}\n", parsed.error().message);
            return 1;
        }
        manifest = std::move(*parsed);
        auto encoded = archive::encode_manifest(*manifest);
        if (!encoded) {
            fmt::print(stderr, "sdm pack: {}: {}\n", o.manifest, encoded.error().message);
            return 1;
        }
        auto added = writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, std::move(*encoded)});
        if (!added) {
            fmt::print(stderr, "sdm pack: {}\n", added.error().message);
            return 1;
        }
    }

    // Every kernel the manifest lists must be defined by every cubin and PTX image of its module.
    std::map<std::string, std::set<std::string>> module_kernels;
    if (manifest)
        for (const auto& k : manifest->kernels) module_kernels[k.module].insert(k.name);
    std::set<std::string> modules_with_images;
    for (const std::string& arg : o.images) {
        auto image = parse_image_arg(arg);
        if (!image) {
            fmt::print(stderr, "sdm pack: {}\n", image.error().message);
            return 1;
        }
        modules_with_images.insert(image->input.name);
        if (manifest && (image->input.kind == archive::Kind::cubin || image->input.kind == archive::Kind::ptx)) {
            auto info = archive::inspect_image(image->input.kind, image->input.bytes);
            if (info) {
                std::string missing;
                for (const auto& name : module_kernels[image->input.name])
                    if (!std::binary_search(info->kernels.begin(), info->kernels.end(), name)) missing += (missing.empty() ? "" : ", ") + name;
                if (!missing.empty()) {
                    fmt::print(stderr, "sdm pack: {} ({}) does not define kernel(s) {} that the manifest lists for module {}; "
                                       "rebuild the image or fix the manifest\n",
                               image->path, archive::target_name(image->input.kind, image->input.sm, image->input.variant), missing,
                               image->input.name);
                    return 1;
                }
            }
        }
        auto added = writer.add(std::move(image->input));
        if (!added) {
            fmt::print(stderr, "sdm pack: {}: {}\n", image->path, added.error().message);
            return 1;
        }
    }
    for (const auto& [module, kernels] : module_kernels)
        if (!modules_with_images.count(module)) {
            fmt::print(stderr, "sdm pack: the manifest lists kernels of module {} ({}), but no image of it was given\n", module,
                       *kernels.begin());
            return 1;
        }

    archive::WriterReport report;
    auto written = write_verified_archive(writer, o.output, &report);
    progress.finish();
    if (!written) {
        fmt::print(stderr, "sdm pack: {}\n", written.error().message);
        return 1;
    }
    if (!o.quiet)
        fmt::print("{}: {} entries, {} raw bytes -> {} bytes ({:.3f}x); {} prefix-coded, {} dictionary-coded ({} bytes of dictionary), {} stored\n",
                   o.output, report.entries, report.raw_bytes, report.archive_bytes,
                   report.raw_bytes ? static_cast<double>(report.archive_bytes) / static_cast<double>(report.raw_bytes) : 0.0,
                   report.prefix_coded, report.dictionary_coded, report.dictionary_bytes, report.stored);
    return 0;
}

}  // namespace sdm::tools
