// libFuzzer target: fatbin containers and the host binaries they sit in. The input is searched as
// a host binary (ELF, static archive or .fatbin file, data sections scanned), and parsed as one
// container itself; every container found is parsed and every entry's payload decompressed (LZ4,
// zstd; bounded by the entry and its stream) and handed to the image parser and the signature
// derivation of its kind.
#include <cstddef>
#include <cstdint>

#include "archive/fatbin.hpp"
#include "archive/host_binary.hpp"
#include "archive/image.hpp"
#include "archive/kernel_params.hpp"

namespace {

void check_container(sdm::Bytes bytes) {
    using namespace sdm::archive;
    auto container = parse_fatbin(bytes);
    if (!container) return;
    for (const auto& entry : container->entries) {
        auto payload = fatbin_entry_payload(entry);
        if (payload && entry.image_kind) {
            (void)inspect_image(*entry.image_kind, *payload);
            (void)image_kernel_params(*entry.image_kind, *payload);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const sdm::Bytes input{reinterpret_cast<const std::byte*>(data), size};
    check_container(input);
    auto found = sdm::archive::find_fatbins(input);
    if (found)
        for (const auto& embedded : *found) check_container(embedded.bytes);
    return 0;
}
