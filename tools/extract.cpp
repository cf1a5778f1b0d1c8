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
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "manifest_source.hpp"
#include "archive/archive.hpp"
#include "common/text.hpp"

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
    // One walk: each entry decoded once, a shared reference once for all that use it.
    auto walked = a->for_each_entry([&](size_t i, Bytes raw) -> Result<void> {
        const auto& e = a->entries()[i];
        if (!selected(e, i, wanted)) return {};
        ByteVector converted;
        Bytes out = raw;
        if (e.kind == archive::Kind::manifest && !raw_manifest) {
            auto m = archive::decode_manifest(raw);
            if (!m) return make_error(m.error().code, a->describe(i) + ": " + m.error().message);
            const std::string text = format_manifest_source(*m);
            converted.assign(reinterpret_cast<const std::byte*>(text.data()), reinterpret_cast<const std::byte*>(text.data()) + text.size());
            out = converted;
        }
        const std::string name = file_name(e, raw_manifest);
        const std::string target = directory + "/" + name;
        // The reader refused any name that is not one plain path component; check again here,
        // where it matters, whatever produced the archive object.
        if (name.find('/') != std::string::npos || name.starts_with(".") || !created.insert(name).second)
            return make_error(ErrorCode::archive_corrupt, a->describe(i) + ": the file name '" + printable(name) +
                                                      "' is not one plain file name; nothing was written for it");
        if (force) {
            struct stat st {};
            if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISREG(st.st_mode))
                    return make_error(ErrorCode::invalid_argument, target + " exists and is not a regular file (a link, a directory, a device); it "
                                                                            "was left alone. Remove it, or extract into another directory");
                if (::unlinkat(dir, name.c_str(), 0) != 0)
                    return make_error(ErrorCode::io, "cannot replace " + target + ": " + std::strerror(errno));
            }
        }
        const int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST)
                return make_error(ErrorCode::invalid_argument, target + " already exists; it was left alone. Remove it, pass --force to replace "
                                                                        "regular files, or extract into another directory");
            return make_error(ErrorCode::io, "cannot create " + target + ": " + std::strerror(errno));
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
            return make_error(ErrorCode::io, "cannot write " + target + ": " + std::strerror(err));
        }
        fmt::print("{}\n", target);
        ++written;
        return {};
    });
    if (!walked) {
        fmt::print(stderr, "sdm extract: {}\n", walked.error().message);
        return 1;
    }
    if (written == 0 && !wanted.empty()) {
        fmt::print(stderr, "sdm extract: {} holds no entry matching the selection (use MODULE:TARGET, 'manifest' or an index; see sdm ls)\n", path);
        return 1;
    }
    return 0;
}

}  // namespace sdm::tools
