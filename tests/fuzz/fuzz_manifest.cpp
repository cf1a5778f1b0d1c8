// libFuzzer target: the two manifest parsers. The first byte picks one: even, the binary manifest
// an archive carries (decode_manifest, then encode it again and decode that, which must agree);
// odd, the TOML source `sdm pack` reads (parse_manifest_source, then format and parse it again).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "manifest.hpp"
#include "manifest_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm::archive;
    if (size == 0) return 0;
    const bool toml = (data[0] & 1) != 0;
    ++data, --size;
    if (!toml) {
        auto manifest = decode_manifest({reinterpret_cast<const std::byte*>(data), size});
        if (!manifest) return 0;
        auto again = encode_manifest(*manifest);
        if (!again) return 0;  // a decoded manifest may still break the encoder's limits
        if (!decode_manifest(*again)) std::abort();  // what sdm writes it must read
        return 0;
    }
    auto manifest = sdm::tools::parse_manifest_source(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml");
    if (!manifest) return 0;
    if (!sdm::tools::parse_manifest_source(sdm::tools::format_manifest_source(*manifest), "formatted.toml")) std::abort();
    return 0;
}
