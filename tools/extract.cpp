// sdm extract: entries back to files (MODULE.TARGET.cubin|ptx|ltoir|fatbin; the manifest as TOML).
#include <fmt/format.h>

#include <sys/stat.h>

#include "commands.hpp"
#include "file_map.hpp"
#include "manifest.hpp"
#include "manifest_source.hpp"
#include "reader.hpp"

namespace sdm::tools {
namespace {

std::string file_name(const archive::Entry& e, bool raw_manifest) {
    switch (e.kind) {
    case archive::Kind::cubin: return fmt::format("{}.{}.cubin", e.name, e.target());
    case archive::Kind::ptx: return fmt::format("{}.{}.ptx", e.name, e.target());
    case archive::Kind::ltoir: return fmt::format("{}.{}.ltoir", e.name, e.target());
    case archive::Kind::fatbin: return fmt::format("{}.fatbin", e.name);
    case archive::Kind::manifest: return raw_manifest ? "manifest.bin" : "manifest.toml";
    case archive::Kind::dictionary: return fmt::format("{}.zdict", e.name);
    }
    return std::string(e.name);
}

// "module:target", "module:fatbin", "manifest" or an entry number.
bool selected(const archive::Entry& e, size_t index, const std::vector<std::string>& wanted) {
    if (wanted.empty()) return true;
    for (const auto& w : wanted) {
        if (w == std::to_string(index)) return true;
        if (e.kind == archive::Kind::manifest && w == "manifest") return true;
        if (w == fmt::format("{}:{}", e.name, archive::kind_has_arch(e.kind) ? e.target() : archive::kind_name(e.kind))) return true;
    }
    return false;
}

}  // namespace

int run_extract(const std::string& path, const std::string& directory, const std::vector<std::string>& wanted, bool raw_manifest) {
    auto a = archive::Archive::open_file(path);
    if (!a) {
        fmt::print(stderr, "sdm extract: {}\n", a.error().message);
        return 1;
    }
    if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
        fmt::print(stderr, "sdm extract: cannot create directory {}\n", directory);
        return 1;
    }
    size_t written = 0;
    for (size_t i = 0; i < a->entries().size(); ++i) {
        const auto& e = a->entries()[i];
        if (!selected(e, i, wanted)) continue;
        auto raw = a->read(i);
        if (!raw) {
            fmt::print(stderr, "sdm extract: {}\n", raw.error().message);
            return 1;
        }
        archive::ByteVector out = std::move(*raw);
        if (e.kind == archive::Kind::manifest && !raw_manifest) {
            auto m = archive::decode_manifest(out);
            if (!m) {
                fmt::print(stderr, "sdm extract: {}: {}\n", a->describe(i), m.error().message);
                return 1;
            }
            const std::string text = format_manifest_source(*m);
            out.assign(reinterpret_cast<const std::byte*>(text.data()), reinterpret_cast<const std::byte*>(text.data()) + text.size());
        }
        const std::string target = directory + "/" + file_name(e, raw_manifest);
        auto w = archive::write_file_atomic(target, out);
        if (!w) {
            fmt::print(stderr, "sdm extract: {}\n", w.error().message);
            return 1;
        }
        fmt::print("{}\n", target);
        ++written;
    }
    if (written == 0 && !wanted.empty()) {
        fmt::print(stderr, "sdm extract: {} holds no entry matching the selection (use MODULE:TARGET, 'manifest' or an index; see sdm ls)\n", path);
        return 1;
    }
    return 0;
}

}  // namespace sdm::tools
