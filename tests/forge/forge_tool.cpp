// Writes one hostile archive for the command-line tests (tests/tool/hostile.sh), with tests/forge:
//   forge_tool KIND OUT [CUBIN]
//   traversal     a module named "x/../../escape" (the reader must refuse it)
//   bad-manifest  a cubin and a manifest whose kernel item is truncated (valid checksums)
//   created-by    a writer name that holds terminal escapes and a newline
//   good          a cubin and a manifest listing "scale" (the same layout, nothing hostile)
#include <cstdio>
#include <string>

#include "forge.hpp"

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: forge_tool traversal|bad-manifest|created-by|good OUT CUBIN\n");
        return 2;
    }
    const std::string what = argv[1];
    const forge::Bytes cubin = forge::read_file(argv[3]);
    forge::Archive a;
    a.kernel_abi_major = 1;
    std::string module = "kernels";
    forge::Bytes body = forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")});
    if (what == "traversal") module = "x/../../escape";
    if (what == "bad-manifest") body.resize(body.size() - 3);
    if (what == "created-by") a.created_by = "\x1b[2J\x1b[31mok\n";
    forge::Bytes m = forge::manifest(body);
    if (what == "bad-manifest") {  // the preamble's body size agrees with the truncated body: only the item is short
        const uint32_t size = static_cast<uint32_t>(body.size());
        for (int i = 0; i < 4; ++i) m[8 + static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (8 * i));
    }
    a.records.push_back({module, forge::kind::cubin, forge::codec::zstd, 90, 0, 0, forge::kNoRef, cubin, {}, {}, {}, {}});
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    if (module > "manifest") std::swap(a.records[0], a.records[1]);  // the index is sorted by name
    forge::write_file(argv[2], forge::write(a));
    return 0;
}
