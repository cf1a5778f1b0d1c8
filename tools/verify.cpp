// sdm verify: every checksum, every parse; a non-zero exit naming the first bad entry.
#include <fmt/format.h>

#include "commands.hpp"
#include "archive.hpp"
#include "verify.hpp"

namespace sdm::tools {
namespace {

Result<size_t> verify_one(const std::string& path) {
    SDM_TRY_GET(a, archive::Archive::open_file(path));
    SDM_TRY(archive::verify_archive(*a));
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
