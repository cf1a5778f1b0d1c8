// libFuzzer target: kernel signatures derived from an image, the input taken as a cubin (its
// .nv.info parameter tables) and as PTX (its .entry parameter lists).
#include <cstddef>
#include <cstdint>

#include "archive/kernel_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const sdm::Bytes input{reinterpret_cast<const std::byte*>(data), size};
    (void)sdm::archive::cubin_kernel_params(input);
    (void)sdm::archive::ptx_kernel_params(input);
    return 0;
}
