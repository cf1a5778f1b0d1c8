// sdm verify: every checksum, every parse; a non-zero exit naming the first bad entry.
#include <fmt/format.h>

#include "commands.hpp"
#include "image.hpp"
#include "manifest.hpp"
#include "reader.hpp"

namespace sdm::tools {
namespace {

Result<size_t> verify_one(const std::string& path) {
    auto a = archive::Archive::open_file(path);
    if (!a) return std::move(a).error();
    SDM_TRY(a->verify());
    // Beyond checksums: each entry must parse as what the index says it is.
    for (size_t i = 0; i < a->entries().size(); ++i) {
        const auto& e = a->entries()[i];
        if (e.kind == archive::Kind::dictionary) continue;
        auto raw = a->read(i);
        if (!raw) return std::move(raw).error();
        if (e.kind == archive::Kind::manifest) {
            auto m = archive::decode_manifest(*raw);
            if (!m) return make_error(m.error().code, a->describe(i) + ": " + m.error().message);
            continue;
        }
        auto info = archive::check_declared_target(e.kind, e.sm, e.variant, *raw, a->describe(i));
        if (!info) return std::move(info).error();
    }
    return a->entries().size();
}

}  // namespace

int run_verify(const std::vector<std::string>& archives, bool quiet) {
    int status = 0;
    for (const auto& path : archives) {
        auto r = verify_one(path);
        if (!r) {
            fmt::print(stderr, "sdm verify: FAILED: {}\n", r.error().message);
            status = 1;
        } else if (!quiet) {
            fmt::print("{}: ok, {} entries, every checksum and parse verified\n", path, *r);
        }
    }
    return status;
}

}  // namespace sdm::tools
