// sdm keygen, sdm sign, and the signing step of pack, import and jit (docs/SIGNING.md).
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.hpp"
#include "commands.hpp"
#include "write_archive.hpp"
#include "archive/file_map.hpp"
#include "archive/key_files.hpp"
#include "archive/signature_block.hpp"
#include "archive/signing.hpp"

namespace sdm::tools {
namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// A new file with `mode` from the start (a secret key is never readable by others, not even for a
// moment); never through a link. `replace`: an existing file (not a link) is removed first.
Result<void> write_key_file(const std::string& path, const std::string& text, unsigned mode, bool replace) {
    if (replace) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
            return make_error(ErrorCode::invalid_argument, path + " is " + archive::file_type_name(st.st_mode) + ", not a key file; it is left alone");
        ::unlink(path.c_str());
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return make_error(ErrorCode::io, "cannot create " + path + ": " + std::strerror(errno));
    const bool written = ::fchmod(fd, mode) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    if (!written) {
        ::unlink(path.c_str());
        return make_error(ErrorCode::io, "cannot write " + path + ": " + std::strerror(saved));
    }
    return {};
}

}  // namespace

int run_keygen(const KeygenOptions& o) {
    const auto fail = [](const Error& e) {
        fmt::print(stderr, "sdm keygen: {}\n", e.message);
        return 1;
    };
    if (!o.public_of.empty()) {  // the public half of a secret key (the build's signing_key)
        auto secret = archive::read_secret_key(o.public_of);
        if (!secret) return fail(secret.error());
        if (!crypto::available()) return fail(crypto::unsupported("sdm keygen"));
        if (exists(o.output) && !o.force) return fail(make_error(ErrorCode::invalid_argument, o.output + " exists; pass --force to replace it"));
        if (auto w = write_key_file(o.output, archive::public_key_text(crypto::public_half(*secret)), 0644, o.force); !w) return fail(w.error());
        return 0;
    }
    auto pair = crypto::generate_key_pair();
    if (!pair) return fail(crypto::available() ? pair.error() : crypto::unsupported("sdm keygen"));
    const std::string secret_path = o.output + ".key", public_path = o.output + ".pub";
    for (const auto& p : {secret_path, public_path})
        if (exists(p) && !o.force)
            return fail(make_error(ErrorCode::invalid_argument, p + " exists; sdm keygen does not replace a key (pass --force, and re-sign what the old key signed)"));
    if (auto w = write_key_file(secret_path, archive::secret_key_text(pair->secret_key), 0600, o.force); !w) return fail(w.error());
    if (auto w = write_key_file(public_path, archive::public_key_text(pair->public_key), 0644, o.force); !w) return fail(w.error());
    auto id = archive::key_id(pair->public_key);
    if (!id) return fail(id.error());
    if (!o.quiet)
        fmt::print("{}: secret key (mode 0600; keep it where only the signer can read it)\n{}: public key, id {} (give it to hosts: SDM_TRUSTED_KEYS)\n",
                   secret_path, public_path, archive::key_id_text(*id));
    return 0;
}

Result<ByteVector> sign_bytes(Bytes bytes, const std::string& label, const std::string& secret_path) {
    SDM_TRY_GET(key, archive::read_secret_key(secret_path));
    return archive::sign_archive(bytes, label, *key);
}

int run_sign(const SignOptions& o) {
    const auto fail = [](const Error& e) {
        fmt::print(stderr, "sdm sign: {}\n", e.message);
        return 1;
    };
    auto map = archive::FileMap::open(o.archive, {.private_copy = true});
    if (!map) return fail(make_error(map.error().code, "archive " + map.error().message));
    auto signed_bytes = sign_bytes((*map)->bytes(), o.archive, o.key);
    if (!signed_bytes) return fail(signed_bytes.error());
    const std::string output = o.output.empty() ? o.archive : o.output;
    auto check = archive::Archive::open_memory(*signed_bytes, output);
    if (!check) return fail(make_error(ErrorCode::internal, "internal error: the signed archive does not open: " + check.error().message));
    if (auto w = archive::write_file_atomic(output, *signed_bytes); !w) return fail(w.error());
    if (!o.quiet) {
        std::string ids;
        for (const auto& s : check->signature_block()->signatures) ids += (ids.empty() ? "" : ", ") + archive::key_id_text(s.key_id);
        fmt::print("{}: signed; {} signature{} ({}), payloads unmoved\n", output, check->signature_block()->signatures.size(),
                   check->signature_block()->signatures.size() == 1 ? "" : "s", ids);
    }
    return 0;
}

}  // namespace sdm::tools
