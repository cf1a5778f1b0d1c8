// sdm pack: images named on the command line (MODULE:TARGET=PATH), and optionally a manifest
// source, -> archive (packer.hpp does the rest).
#include <fmt/format.h>

#include "commands.hpp"
#include "archive/file_map.hpp"
#include "archive/image.hpp"
#include "packer.hpp"

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
    std::vector<PackInput> inputs;
    for (const std::string& arg : o.images) {
        auto image = parse_image_arg(arg);
        if (!image) {
            fmt::print(stderr, "sdm pack: {}\n", image.error().message);
            return 1;
        }
        inputs.push_back({std::move(image->input), image->path + " (" +
                                                       (image->input.kind == archive::Kind::fatbin
                                                            ? std::string("fatbin")
                                                            : archive::target_name(image->input.kind, image->input.sm, image->input.variant)) +
                                                       ")"});
    }
    return pack_inputs("pack", o.write, std::move(inputs));
}

}  // namespace sdm::tools
