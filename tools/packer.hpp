// What `sdm pack` and `sdm import` share once they know their images: the manifest (the TOML
// source when one is given, completed with every kernel the images define and it does not
// declare, each with the signature derived from the image), the checks of a declared signature
// against the images, the writer, the read-back verification and the summary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "archive/writer.hpp"
#include "name_expressions.hpp"

namespace sdm::tools {

// The options of both commands that decide how the archive is written.
struct WriteOptions {
    std::string manifest;             // TOML source; empty: the manifest holds the derived kernels only
    std::string output;
    int level{19};
    std::string dict{"auto"};         // auto | off
    std::string prefix{"auto"};       // auto | off
    bool store_cubins{false};
    size_t min_saving{archive::kDefaultMinSaving};  // a cubin or fatbin compression saves less of is stored
    size_t frame_bytes{0};  // an image larger is coded in frames of about this size; 0: one frame per image
    bool store{false};
    bool quiet{false};
    unsigned jobs{0};                 // 0: one per core
    std::string sign;                 // a secret key file: the archive is signed before it is written
    std::optional<uint64_t> archive_version;  // format 1.2: the version a host's rollback check reads (docs/SIGNING.md)
    std::optional<std::string> release_line;  // the line that version belongs to: its rollback mark, whichever key signs
    NameExpressionOptions names;      // name expressions lowered with NVRTC into the manifest (name_expressions.hpp)
};

struct PackInput {
    archive::WriterInput input;
    std::string origin;  // names the image in messages: "kernels.sm_90.cubin", "libk.so container 3 entry 1 (sm_90 cubin)"
};

// Writes `inputs` and the manifest to options.output. `command` ("pack", "import") prefixes the
// messages. Every kernel of every cubin and PTX image (fatbin inputs: of every cubin and PTX entry
// in them) goes into the manifest; a kernel the manifest declares must be defined, with a signature
// of the same layout, by every such image of its module, and its module must have an image. A
// kernel the manifest does not declare is served from the first module that defines it; one whose
// signature a manifest cannot hold (more than 64 parameters) is left out with a warning. Returns
// the exit status (0, 1, or 2 for bad options) and prints its errors.
int pack_inputs(const char* command, const WriteOptions& options, std::vector<PackInput> inputs);

}  // namespace sdm::tools
