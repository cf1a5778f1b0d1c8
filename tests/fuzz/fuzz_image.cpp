// libFuzzer target: the image header parsers (inspect_image) for cubins (ELF64: the header, the
// section table, .note.nv.cuinfo's virtual arch), PTX (.version / .target), LTO-IR and fatbinaries.
// The first byte picks the kind.
#include <cstddef>
#include <cstdint>

#include "archive/format.hpp"
#include "archive/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm;
    using namespace sdm::archive;
    if (size == 0) return 0;
    static constexpr Kind kKinds[] = {Kind::cubin, Kind::ptx, Kind::ltoir, Kind::fatbin};
    const Kind kind = kKinds[data[0] % 4];
    (void)inspect_image(kind, {reinterpret_cast<const std::byte*>(data + 1), size - 1});
    return 0;
}
