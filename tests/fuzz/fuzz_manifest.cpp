// libFuzzer target: the binary manifest an archive carries (decode_manifest), then encoded again
// and decoded again, which must agree. The TOML source has its own target (fuzz_manifest_toml).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "archive/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm;
    using namespace sdm::archive;
    auto manifest = decode_manifest({reinterpret_cast<const std::byte*>(data), size});
    if (!manifest) return 0;
    auto again = encode_manifest(*manifest);
    if (!again) return 0;  // a decoded manifest may still break the encoder's limits
    if (!decode_manifest(*again)) std::abort();  // what sdm writes it must read
    return 0;
}
