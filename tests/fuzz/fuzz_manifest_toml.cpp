// libFuzzer target: the TOML manifest source `sdm pack -m` reads (parse_manifest_source: the shape
// bounds, then toml++, then sdm's own checks). What parses is formatted and must parse again. A
// crash here is a crash of `sdm pack` on a hostile source (toml++ recurses: docs/RELIABILITY.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tools/manifest_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto manifest = sdm::tools::parse_manifest_source(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml");
    if (!manifest) return 0;
    if (!sdm::tools::parse_manifest_source(sdm::tools::format_manifest_source(*manifest), "formatted.toml")) std::abort();
    return 0;
}
