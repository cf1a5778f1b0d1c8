// sdm verify: every checksum, every parse; a non-zero exit naming the first bad entry.
#include <fmt/format.h>

#include "commands.hpp"
#include "wording.hpp"
#include "archive/archive.hpp"
#include "archive/key_files.hpp"
#include "archive/signature_block.hpp"
#include "archive/signature_check.hpp"
#include "archive/verify.hpp"

namespace sdm::tools {
namespace {

// The entry count, and with trusted keys the signature that holds ("signed by trusted key ...").
Result<std::pair<size_t, std::string>> verify_one(const std::string& path, const std::vector<crypto::PublicKey>& trusted,
                                                  const std::vector<archive::KeyId>& ids, bool check_signature) {
    SDM_TRY_GET(a, archive::Archive::open_file(path));
    std::string signer;
    if (check_signature) {
        SDM_TRY_GET(check, archive::check_signatures(*a, trusted));
        if (check->outcome != archive::SignatureCheck::Outcome::verified)
            return make_error(ErrorCode::untrusted, "archive " + path + " " + check->why(ids));
        for (const auto& id : check->verified) signer += (signer.empty() ? ", signed by trusted key " : ", ") + archive::key_id_text(id);
        SDM_TRY(a->enforce_digests());  // every payload against its signed digest, as verify reads it
    }
    SDM_TRY(archive::verify_archive(*a));
    return std::pair(a->entries().size(), signer);
}

}  // namespace

int run_verify(const std::vector<std::string>& archives, bool quiet, const std::vector<std::string>& trusted_files) {
    std::vector<crypto::PublicKey> trusted;
    std::vector<archive::KeyId> ids;
    for (const auto& file : trusted_files) {
        auto key = archive::read_public_key(file);
        auto id = key ? archive::key_id(*key) : Result<archive::KeyId>(key.error());
        if (!id) {
            fmt::print(stderr, "sdm verify: {}\n", id.error().message);
            return 2;
        }
        trusted.push_back(*key);
        ids.push_back(*id);
    }
    if (!trusted_files.empty() && !crypto::available()) {
        fmt::print(stderr, "sdm verify: {}\n", crypto::unsupported("--trust").message);
        return 1;
    }
    int status = 0;
    for (const auto& path : archives) {
        auto r = verify_one(path, trusted, ids, !trusted_files.empty());
        if (!r) {
            fmt::print(stderr, "sdm verify: FAILED: {}\n", r.error().message);
            status = 1;
        } else if (!quiet) {
            fmt::print("{}: ok, {}, every checksum and parse verified{}\n", path, plural(r->first, "entry", "entries"), r->second);
        }
    }
    return status;
}

}  // namespace sdm::tools
