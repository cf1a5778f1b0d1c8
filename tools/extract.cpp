// sdm extract: entries back to files (MODULE.TARGET.cubin|ptx|ltoir|fatbin; the manifest as TOML).
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.hpp"
#include "file_map.hpp"
#include "manifest.hpp"
#include "manifest_source.hpp"
#include "reader.hpp"
#include "text.hpp"

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

int run_extract(const std::string& path, const std::string& directory, const std::vector<std::string>& wanted, bool raw_manifest, bool force) {
    auto a = archive::Archive::open_file(path);
    if (!a) {
        fmt::print(stderr, "sdm extract: {}\n", a.error().message);
        return 1;
    }
    // Every file is created relative to the directory's descriptor, under a name that is one
    // path component (names are never paths: format.hpp), without following a link, and without
    // replacing anything this run did not create unless --force is given (and then only a regular
    // file, never what a link points to).
    if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
        fmt::print(stderr, "sdm extract: cannot create directory {}: {}\n", directory, std::strerror(errno));
        return 1;
    }
    const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        fmt::print(stderr, "sdm extract: cannot open directory {}: {}\n", directory, std::strerror(errno));
        return 1;
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{dir};
    std::set<std::string> created;
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
        const std::string name = file_name(e, raw_manifest);
        const std::string target = directory + "/" + name;
        // The reader refused any name that is not one plain path component; check again here,
        // where it matters, whatever produced the archive object.
        if (name.find('/') != std::string::npos || name.starts_with(".") || !created.insert(name).second) {
            fmt::print(stderr, "sdm extract: {}: the file name '{}' is not one plain file name; nothing was written for it\n", a->describe(i),
                       archive::printable(name));
            return 1;
        }
        if (force) {
            const auto st = [&]() -> std::optional<struct stat> {
                struct stat s {};
                if (::fstatat(dir, name.c_str(), &s, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
                return s;
            }();
            if (st && !S_ISREG(st->st_mode)) {
                fmt::print(stderr, "sdm extract: {} exists and is not a regular file (a link, a directory, a device); it was left alone. Remove it, "
                                   "or extract into another directory\n", target);
                return 1;
            }
            if (st && ::unlinkat(dir, name.c_str(), 0) != 0) {
                fmt::print(stderr, "sdm extract: cannot replace {}: {}\n", target, std::strerror(errno));
                return 1;
            }
        }
        const int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST)
                fmt::print(stderr, "sdm extract: {} already exists; it was left alone. Remove it, pass --force to replace regular files, "
                                   "or extract into another directory\n", target);
            else
                fmt::print(stderr, "sdm extract: cannot create {}: {}\n", target, std::strerror(errno));
            return 1;
        }
        size_t done = 0;
        while (done < out.size()) {
            const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) break;
            done += static_cast<size_t>(n);
        }
        const bool ok = done == out.size() && ::fsync(fd) == 0;
        const int err = errno;
        ::close(fd);
        if (!ok) {
            ::unlinkat(dir, name.c_str(), 0);
            fmt::print(stderr, "sdm extract: cannot write {}: {}\n", target, std::strerror(err));
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
