// Signed archives (docs/SIGNING.md, docs/FORMAT.md section 19): signing and checking, the block
// against hostile bytes, the runtime's policy through the C ABI and the fake driver, the cache's
// MACs. A second signer written here from FORMAT.md alone, over libsodium directly (sign_by_hand),
// checks that the document describes what sdm reads, and forges what sdm's own signer never
// writes: a valid signature over a digest table that disagrees with a payload.
// Built without signing (the TSan build: -Dsigning=disabled; libsodium still gives the digests), only the last test case runs: every
// signing path answers SDM_ERROR_UNSUPPORTED.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#if SDM_TEST_SIGNING
#include <sodium.h>
#endif

#include "archive/archive.hpp"
#include "runtime/jit/cache.hpp"
#include "tools/commands.hpp"
#include "common/crypto.hpp"
#include "fake_runtime.hpp"
#include "archive/format.hpp"
#include "sdm/sdm.h"
#include "archive/key_files.hpp"
#include "archive/signature_block.hpp"
#include "archive/signature_check.hpp"
#include "archive/signing.hpp"
#include "support.hpp"
#include "archive/verify.hpp"

using namespace sdm;
using namespace sdm::test;
using archive::SignatureCheck;

namespace {

struct Key {
    crypto::PublicKey pub{};
    crypto::SecretKey secret{};
};

[[maybe_unused]] Key new_key() {
    auto pair = crypto::generate_key_pair();
    REQUIRE(pair);
    return {pair->public_key, pair->secret_key};
}

[[maybe_unused]] ByteVector signed_by(const ByteVector& bytes, const Key& key) {
    auto out = archive::sign_archive(bytes, "test.sdma", key.secret);
    if (!out) FAIL(out.error().message);
    return std::move(*out);
}

[[maybe_unused]] SignatureCheck::Outcome outcome(const ByteVector& bytes, std::vector<crypto::PublicKey> trusted) {
    auto a = archive::Archive::open_memory(bytes, "test.sdma");
    if (!a) FAIL(a.error().message);
    auto check = archive::check_signatures(*a, trusted);
    REQUIRE(check);
    return check->outcome;
}

// Sets archive_size to the byte count and re-seals the header hash (what a hostile writer does
// after reshaping the end of a file).
[[maybe_unused]] void refit(ByteVector& b) {
    store_u64(b, archive::header::archive_size, b.size());
    store_u64(b, archive::header::header_hash, archive::header_hash_of(b, load_u32(b, archive::header::header_size)));
}

// A runtime on the fake driver with a signature policy and trusted keys; log into `log`.
RuntimePtr policy_runtime(const std::string& cache, uint32_t policy, const std::vector<crypto::PublicKey>& keys, std::vector<std::string>* log,
                          sdm_status expect = SDM_OK) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    p.cache_dir = cache.c_str();
    p.log_level = log != nullptr ? SDM_LOG_DEBUG : SDM_LOG_OFF;
    if (log != nullptr) {
        p.log_fn = [](void* user, sdm_log_level, const char* message, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(message); };
        p.log_user_data = log;
    }
    p.signature_policy = policy;
    const std::string state = cache + ".state";  // the rollback marks: the test's own, never ~/.local/state
    p.state_dir = state.c_str();
    std::vector<uint8_t> flat;
    for (const auto& k : keys) flat.insert(flat.end(), k.begin(), k.end());
    p.trusted_keys = keys.empty() ? nullptr : flat.data();
    p.trusted_key_count = static_cast<uint32_t>(keys.size());
    sdm_runtime* r = nullptr;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_runtime_create(&p, &r, &e);
    if (s != expect) FAIL(sdm_status_string(s) << ": " << sdm_error_message(e));
    sdm_error_destroy(e);
    return RuntimePtr(r);
}

sdm_status mount_status(sdm_runtime* rt, const ByteVector& bytes, const char* label, std::string* message = nullptr) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_archive_mount_memory(rt, bytes.data(), bytes.size(), label, &e);
    if (message != nullptr) *message = sdm_error_message(e);
    sdm_error_destroy(e);
    return s;
}

[[maybe_unused]] void write_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path, std::ios::binary) << text;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

struct EnvVar {  // set for the scope of a test, then unset
    const char* name;
    EnvVar(const char* n, const std::string& value) : name(n) { ::setenv(n, value.c_str(), 1); }
    ~EnvVar() { ::unsetenv(name); }
};

#if SDM_TEST_SIGNING
// FORMAT.md section 19, written from the document and libsodium alone: the block for `bytes` (an
// unsigned archive) signed by `secret`, with entry `wrong`'s digest replaced by another (when set).
ByteVector sign_by_hand(const ByteVector& bytes, const Key& key, std::optional<size_t> wrong = std::nullopt) {
    const auto u8 = [](const ByteVector& b) { return reinterpret_cast<const unsigned char*>(b.data()); };
    const uint32_t header_size = load_u32(bytes, 12), count = load_u32(bytes, 32), record_size = load_u32(bytes, 36);
    const uint64_t index_offset = load_u64(bytes, 24), meta_end = load_u64(bytes, 40) + load_u64(bytes, 48);
    const uint64_t offset = (bytes.size() + 7) / 8 * 8;
    ByteVector table(size_t{count} * 32);
    for (uint32_t i = 0; i < count; ++i) {
        const size_t r = index_offset + size_t{i} * record_size;
        crypto_generichash(reinterpret_cast<unsigned char*>(table.data()) + i * 32, 32, u8(bytes) + load_u64(bytes, r + 16), load_u64(bytes, r + 24), nullptr, 0);
    }
    if (wrong) table[*wrong * 32] ^= std::byte{1};
    const size_t block_size = 64 + table.size() + 80 + 16;
    ByteVector out(bytes);
    out.resize(offset + block_size, std::byte{0});
    store_u64(out, 72, load_u64(out, 72) | 1);  // optional_features: signed
    store_u64(out, 16, out.size());
    ByteVector header(out.begin(), out.begin() + header_size);
    store_u64(header, 16, 0);
    store_u64(header, 120, 0);
    unsigned char digest[32];
    crypto_generichash_state h;
    crypto_generichash_init(&h, nullptr, 0, 32);
    crypto_generichash_update(&h, reinterpret_cast<const unsigned char*>("sdm archive signature 1"), 24);  // with its NUL
    crypto_generichash_update(&h, u8(header), header.size());
    crypto_generichash_update(&h, u8(out) + header_size, meta_end - header_size);
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(offset >> (8 * i));
    crypto_generichash_update(&h, le, 8);
    crypto_generichash_update(&h, u8(table), table.size());
    crypto_generichash_final(&h, digest, 32);
    const std::span<std::byte> blk = std::span(out).subspan(offset);
    const uint8_t magic[8] = {0x89, 'S', 'I', 'G', '\r', '\n', 0x1a, '\n'};
    std::memcpy(blk.data(), magic, 8);
    store_u16(blk, 8, 1);
    store_u16(blk, 10, 1);
    store_u32(blk, 12, count);
    store_u32(blk, 16, 1);
    store_u64(blk, 24, offset);
    std::memcpy(blk.data() + 32, digest, 32);
    std::memcpy(blk.data() + 64, table.data(), table.size());
    const std::span<std::byte> rec = blk.subspan(64 + table.size(), 80);
    store_u8(rec, 0, 1);
    unsigned char id[32];
    crypto_generichash_state k;
    crypto_generichash_init(&k, nullptr, 0, 32);
    crypto_generichash_update(&k, reinterpret_cast<const unsigned char*>("sdm key id 1"), 12);
    crypto_generichash_update(&k, key.pub.data(), 32);
    crypto_generichash_final(&k, id, 32);
    std::memcpy(rec.data() + 8, id, 8);
    crypto_sign_detached(reinterpret_cast<unsigned char*>(rec.data()) + 16, nullptr, digest, 32, key.secret.data());
    store_u64(blk, block_size - 16, block_size);
    std::memcpy(blk.data() + block_size - 8, magic, 8);
    uint64_t hh = archive::header_hash_of(out, header_size);
    store_u64(out, 120, hh);
    return out;
}
#endif

}  // namespace

#if SDM_TEST_SIGNING

TEST_CASE("sign and check: the payloads do not move, the archive reads the same, the trusted key verifies it", "[signing]") {
    const ByteVector plain = build_archive();
    const Key a = new_key(), b = new_key();
    const ByteVector s = signed_by(plain, a);
    const uint64_t payload_offset = load_u64(plain, archive::header::payload_offset);
    REQUIRE(std::equal(plain.begin() + static_cast<std::ptrdiff_t>(payload_offset), plain.end(), s.begin() + static_cast<std::ptrdiff_t>(payload_offset)));
    auto opened = archive::Archive::open_memory(s, "signed.sdma");
    REQUIRE(opened);
    REQUIRE(opened->signature_block());
    CHECK(opened->signature_block()->signatures.size() == 1);
    CHECK(opened->verify());  // the block is not padding
    CHECK(outcome(s, {a.pub}) == SignatureCheck::Outcome::verified);
    CHECK(outcome(s, {b.pub}) == SignatureCheck::Outcome::unknown_key);
    CHECK(outcome(s, {b.pub, a.pub}) == SignatureCheck::Outcome::verified);
    CHECK(outcome(s, {}) == SignatureCheck::Outcome::unknown_key);
    CHECK(outcome(plain, {a.pub}) == SignatureCheck::Outcome::unsigned_archive);
    // Every entry reads the same, with its digest checked.
    REQUIRE(opened->enforce_digests());
    auto unsigned_archive = archive::Archive::open_memory(plain, "plain.sdma");
    REQUIRE(unsigned_archive);
    for (size_t i = 0; i < opened->entries().size(); ++i) CHECK(opened->read(i).value() == unsigned_archive->read(i).value());
    // Written by FORMAT.md alone, the same signature checks out.
    CHECK(outcome(sign_by_hand(plain, a), {a.pub}) == SignatureCheck::Outcome::verified);
}

TEST_CASE("two signatures: either key verifies; signing again with a key replaces its signature", "[signing]") {
    const Key a = new_key(), b = new_key(), c = new_key();
    const ByteVector both = signed_by(signed_by(build_archive(), a), b);
    CHECK(outcome(both, {a.pub}) == SignatureCheck::Outcome::verified);
    CHECK(outcome(both, {b.pub}) == SignatureCheck::Outcome::verified);
    CHECK(outcome(both, {c.pub}) == SignatureCheck::Outcome::unknown_key);
    const ByteVector again = signed_by(both, a);
    CHECK(archive::Archive::open_memory(again, "x")->signature_block()->signatures.size() == 2);
    CHECK(outcome(again, {a.pub}) == SignatureCheck::Outcome::verified);
}

TEST_CASE("a payload changed with its XXH3 checksums recomputed: the signature no longer holds", "[signing][hostile]") {
    const Key a = new_key();
    ByteVector s = signed_by(build_archive(), a);
    auto opened = archive::Archive::open_memory(s, "x");
    REQUIRE(opened);
    // The first stored cubin: flip a byte inside it, then recompute what an attacker can.
    size_t victim = 0;
    for (; victim < opened->entries().size(); ++victim)
        if (opened->entries()[victim].codec == archive::Codec::stored && opened->entries()[victim].stored_size > 64) break;
    REQUIRE(victim < opened->entries().size());
    const auto& e = opened->entries()[victim];
    s[e.data_offset + 40] ^= std::byte{0x40};
    rehash_stored(s, victim);
    store_hash128(s, record_field(s, victim, archive::record::raw_hash), xxh3_128(Bytes(s).subspan(e.data_offset, e.stored_size)));
    reseal(s);
    refit(s);  // reseal hashes a 128-byte header with the archive_size it had
    REQUIRE(open_error(s).empty());
    CHECK(outcome(s, {a.pub}) == SignatureCheck::Outcome::bad_signature);
    // Through the runtime under require: refused at mount, naming the archive and the fault.
    fake({kH200});
    TempDir dir;
    std::vector<std::string> log;
    auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, &log);
    std::string message;
    CHECK(mount_status(rt.get(), s, "tampered.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("tampered.sdma") && Catch::Contains("does not verify") && Catch::Contains("changed after it was signed"));
}

TEST_CASE("a valid signature over a digest that disagrees with a payload: that module is never loaded", "[signing][hostile]") {
    const Key a = new_key();
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    auto opened = archive::Archive::open_memory(plain, "x");
    REQUIRE(opened);
    const size_t cubin = opened->find("m", archive::Kind::cubin, 90, archive::Variant::base).value();
    const ByteVector forged = sign_by_hand(plain, a, cubin);
    CHECK(outcome(forged, {a.pub}) == SignatureCheck::Outcome::verified);  // the signer signed it: mount admits it
    fake({kH200});
    TempDir dir;
    auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, nullptr);
    REQUIRE(mount_status(rt.get(), forged, "forged.sdma") == SDM_OK);
    std::string message;
    info_of(rt.get(), 0, "scale", SDM_ERROR_ARCHIVE_CORRUPT, &message);
    CHECK_THAT(message, Catch::Contains("entry " + std::to_string(cubin)) && Catch::Contains("BLAKE2b digest") && Catch::Contains("not loaded"));
    CHECK(fake_calls("@modules") + fake_calls("@libraries") == 0);
    // And the archive alone says the same on every read path.
    auto a2 = archive::Archive::open_memory(forged, "forged.sdma");
    REQUIRE(a2->enforce_digests());
    CHECK(a2->read(cubin).error().code == ErrorCode::archive_corrupt);
    CHECK(!a2->verify());
    // sdm verify --trust names the entry (the tool's own code, on the file).
    const std::string forged_file = dir.path + "/forged.sdma", key_file = dir.path + "/a.pub";
    drop(forged_file, forged);
    write_file(key_file, archive::public_key_text(a.pub));
    CHECK(tools::run_verify({forged_file}, true, {key_file}) == 1);
    CHECK(tools::run_verify({forged_file}, true, {}) == 0);  // without --trust: every checksum holds
    // Without the policy, the forged digest table is not looked at: the archive reads as before.
    auto off = policy_runtime(dir.path + "/cache2", SDM_SIGNATURES_OFF, {}, nullptr);
    REQUIRE(mount_status(off.get(), forged, "forged.sdma") == SDM_OK);
    info_of(off.get(), 0, "scale");
}

TEST_CASE("a flipped bit anywhere in the signature block is refused or fails the check, never verified", "[signing][hostile]") {
    const Key a = new_key();
    const ByteVector s = signed_by(build_archive(), a);
    const auto block = archive::Archive::open_memory(s, "x")->signature_block().value();
    size_t refused = 0, failed = 0;
    for (uint64_t at = block.offset; at < s.size(); ++at) {
        ByteVector b = s;
        b[at] ^= std::byte(1u << (at % 8));
        auto opened = archive::Archive::open_memory(b, "x");
        if (!opened) {
            ++refused;
            continue;
        }
        auto check = archive::check_signatures(*opened, std::vector<crypto::PublicKey>{a.pub});
        REQUIRE(check);
        INFO("byte " << at - block.offset << " of the block");
        CHECK(check->outcome != SignatureCheck::Outcome::verified);
        ++failed;
    }
    CHECK(refused > 0);
    CHECK(failed > 0);
    // And in the header fields the signature covers (the header hash re-sealed, as an attacker would).
    for (size_t at : {archive::header::payload_offset, archive::header::kernel_abi_major, archive::header::created_by}) {
        ByteVector b = s;
        b[at] ^= std::byte{1};
        refit(b);
        auto opened = archive::Archive::open_memory(b, "x");
        if (opened) CHECK(archive::check_signatures(*opened, std::vector<crypto::PublicKey>{a.pub})->outcome != SignatureCheck::Outcome::verified);
    }
}

TEST_CASE("truncated, oversized and reshaped signature blocks are refused with the reason", "[signing][hostile]") {
    const Key a = new_key();
    const ByteVector s = signed_by(build_archive(), a);
    const auto block = archive::Archive::open_memory(s, "x")->signature_block().value();
    const auto refused = [](ByteVector b, const char* why) {
        refit(b);
        INFO(why);
        CHECK_THAT(open_error(b), Catch::Contains(why));
    };
    {  // cut short: the footer is gone
        ByteVector b(s.begin(), s.end() - 16);
        refused(b, "is missing");
    }
    {  // the footer claims more than the file holds
        ByteVector b = s;
        store_u64(b, b.size() - 16, b.size() + 4096);
        refused(b, "does not fit");
    }
    {  // the footer claims less than a block header
        ByteVector b = s;
        store_u64(b, b.size() - 16, 24);
        refused(b, "does not fit");
    }
    {  // 65 signatures claimed
        ByteVector b = s;
        store_u32(b, block.offset + archive::signature_block::signature_count, 65);
        refused(b, "signatures (1 to 64 allowed)");
    }
    {  // a count that does not match the block's size
        ByteVector b = s;
        store_u32(b, block.offset + archive::signature_block::signature_count, 2);
        refused(b, "make");
    }
    {  // bytes slipped in before the footer: the size no longer adds up
        ByteVector b(s.begin(), s.end() - 16);
        b.insert(b.end(), 80, std::byte{0});
        const ByteVector footer(s.end() - 16, s.end());
        b.insert(b.end(), footer.begin(), footer.end());
        store_u64(b, b.size() - 16, block.size + 80);
        refused(b, "signatures make");
    }
    {  // the digest count disagrees with the index
        ByteVector b = s;
        store_u32(b, block.offset + archive::signature_block::entry_count, 1);
        refused(b, "digests for 1 entries");
    }
    {  // the feature bit without a block
        ByteVector b = build_archive();
        store_u64(b, archive::header::optional_features, archive::kFeatureSigned);
        refused(b, "signature");
    }
}

TEST_CASE("require: unsigned and unknown keys are refused naming the keys; a trusted signature mounts and serves", "[signing][policy]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key(), b = new_key();
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, nullptr);
    std::string message;
    CHECK(mount_status(rt.get(), plain, "plain.sdma", &message) == SDM_ERROR_UNTRUSTED);
    const std::string a_id = archive::key_id_text(archive::key_id(a.pub).value()), b_id = archive::key_id_text(archive::key_id(b.pub).value());
    CHECK_THAT(message, Catch::Contains("plain.sdma") && Catch::Contains("is not signed") && Catch::Contains(a_id));
    CHECK(mount_status(rt.get(), signed_by(plain, b), "by-b.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("signed by " + b_id) && Catch::Contains("trusts " + a_id));
    CHECK(mount_status(rt.get(), signed_by(plain, a), "by-a.sdma", &message) == SDM_OK);
    info_of(rt.get(), 0, "scale");
    // Malformed policy arguments are refused at creation.
    policy_runtime(dir.path + "/c", 7, {}, nullptr, SDM_ERROR_INVALID_ARGUMENT);
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.trusted_key_count = 2;  // and no keys
    sdm_runtime* r = nullptr;
    CHECK(sdm_runtime_create(&p, &r, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    p.trusted_key_count = 257;
    std::vector<uint8_t> many(257 * 32);
    p.trusted_keys = many.data();
    CHECK(sdm_runtime_create(&p, &r, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("warn: an archive without a trusted signature mounts, and the log says so once per archive", "[signing][policy]") {
    fake({kH200});
    TempDir dir;
    std::vector<std::string> log;
    auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_WARN, {new_key().pub}, &log);
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    CHECK(mount_status(rt.get(), plain, "one.sdma") == SDM_OK);
    CHECK(mount_status(rt.get(), plain, "one.sdma") == SDM_OK);
    CHECK(count_containing(log, "archive one.sdma is not signed") == 1);
    CHECK(mount_status(rt.get(), plain, "two.sdma") == SDM_OK);
    CHECK(count_containing(log, "archive two.sdma is not signed") == 1);
    CHECK(count_containing(log, "mounted anyway (signature policy warn)") == 2);
    info_of(rt.get(), 0, "scale");
}

TEST_CASE("the environment sets a policy for a host that set none, and cannot weaken one that did", "[signing][policy]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key(), b = new_key();
    write_file(dir.path + "/a.pub", archive::public_key_text(a.pub));
    write_file(dir.path + "/b.pub", archive::public_key_text(b.pub));
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    const ByteVector by_b = signed_by(plain, b);
    {  // a host that set nothing: SDM_REQUIRE_SIGNED=1 and SDM_TRUSTED_KEYS decide
        EnvVar require("SDM_REQUIRE_SIGNED", "1");
        EnvVar keys("SDM_TRUSTED_KEYS", dir.path + "/missing.pub:" + dir.path + "/b.pub");
        std::vector<std::string> log;
        auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_DEFAULT, {}, &log);
        CHECK(mount_status(rt.get(), plain, "plain.sdma") == SDM_ERROR_UNTRUSTED);
        CHECK(mount_status(rt.get(), by_b, "by-b.sdma") == SDM_OK);
        CHECK(count_containing(log, "skipped trusted key " + dir.path + "/missing.pub") == 1);
    }
    {  // a host that requires, with key a: the environment's off and its key b change nothing
        EnvVar require("SDM_REQUIRE_SIGNED", "0");
        EnvVar keys("SDM_TRUSTED_KEYS", dir.path + "/b.pub");
        std::vector<std::string> log;
        auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, &log);
        CHECK(mount_status(rt.get(), plain, "plain.sdma") == SDM_ERROR_UNTRUSTED);
        CHECK(mount_status(rt.get(), by_b, "by-b.sdma") == SDM_ERROR_UNTRUSTED);
        CHECK(count_containing(log, "SDM_TRUSTED_KEYS is ignored") == 1);
    }
    {  // a typo in the variable is read as require, never as off
        EnvVar require("SDM_REQUIRE_SIGNED", "yes");
        auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_DEFAULT, {}, nullptr);
        CHECK(mount_status(rt.get(), plain, "plain.sdma") == SDM_ERROR_UNTRUSTED);
    }
    {  // hostile key files are skipped with the reason: a secret key, a FIFO, a directory, junk
        const Key c = new_key();
        write_file(dir.path + "/c.key", archive::secret_key_text(c.secret), 0600);
        write_file(dir.path + "/junk.pub", std::string(5000, 'x'));
        REQUIRE(::mkfifo((dir.path + "/fifo.pub").c_str(), 0600) == 0);
        EnvVar require("SDM_REQUIRE_SIGNED", "1");
        EnvVar keys("SDM_TRUSTED_KEYS", dir.path + "/c.key:" + dir.path + "/fifo.pub:" + dir.path + ":" + dir.path + "/junk.pub");
        std::vector<std::string> log;
        auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_DEFAULT, {}, &log);
        CHECK(count_containing(log, "is a secret key") == 1);
        CHECK(count_containing(log, "skipped trusted key") == 4);
        CHECK(mount_status(rt.get(), signed_by(plain, c), "by-c.sdma") == SDM_ERROR_UNTRUSTED);
    }
}

TEST_CASE("require: an unsigned layer of SDM_ARCHIVE_PATH is skipped; a reload to an unsigned file keeps the old one", "[signing][policy]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key();
    const std::string signed_file = dir.path + "/signed.sdma", plain_file = dir.path + "/plain.sdma";
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    drop(signed_file, signed_by(plain, a));
    drop(plain_file, make_archive("n", {"sm_90"}, {"axpy"}, 1, Matrix::none));
    std::vector<std::string> log;
    RuntimePtr rt;
    {
        EnvVar path("SDM_ARCHIVE_PATH", signed_file + ":" + plain_file);
        rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, &log);
    }
    CHECK(count_containing(log, "skipped archive " + plain_file + " of SDM_ARCHIVE_PATH") == 1);
    info_of(rt.get(), 0, "scale");
    info_of(rt.get(), 0, "axpy", SDM_ERROR_NOT_FOUND);
    // The signed file is replaced by an unsigned one: the reload refuses it, the old one serves.
    drop(signed_file, make_archive("m", {"sm_90"}, {"scale", "axpy"}, 1, Matrix::none));
    uint32_t reloaded = 9;
    sdm_error* e = nullptr;
    CHECK(sdm_runtime_reload(rt.get(), &reloaded, &e) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("keeps serving") && Catch::Contains("is not signed"));
    sdm_error_destroy(e);
    CHECK(reloaded == 0);
    info_of(rt.get(), 0, "scale");
    info_of(rt.get(), 0, "axpy", SDM_ERROR_NOT_FOUND);
    // Signed again: it reloads.
    drop(signed_file, signed_by(make_archive("m", {"sm_90"}, {"scale", "axpy"}, 1, Matrix::none), a));
    CHECK(sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    info_of(rt.get(), 0, "axpy");
}

TEST_CASE("the cache under require: an entry with a valid checksum but no valid MAC is never served", "[signing][cache]") {
    TempDir dir;
    std::vector<std::string> told;
    runtime::CacheOptions o;
    o.directory = dir.path + "/cache";
    o.store_failed = [&](const std::string& why) { told.push_back(why); };
    const Hash128 k1{1, 2}, k2{3, 4};
    const ByteVector payload(1000, std::byte{7});
    {  // written through sdm: MAC'd with the cache's key, made 0600 on first store
        auto writer = runtime::Cache::open(o).value();
        REQUIRE(writer->put(k1, payload));
        REQUIRE(writer->put(k2, payload));
    }
    struct stat st {};
    REQUIRE(::stat((dir.path + "/cache/v1/mac.key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    o.authenticate = true;
    CHECK(runtime::Cache::open(o).value()->get(k1) == payload);
    // Planted: the same bytes with the MAC field zeroed (every checksum still valid), then
    // another with a MAC under another key.
    const auto plant = [&](const Hash128& key, std::byte fill) {
        const std::string path = runtime::Cache::open(o).value()->entry_path(key);
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(48);
        const std::string mac(16, static_cast<char>(fill));
        f.write(mac.data(), 16);
    };
    plant(k1, std::byte{0});
    plant(k2, std::byte{0x5a});
    auto reader = runtime::Cache::open(o).value();
    CHECK(!reader->get(k1));
    CHECK(!reader->get(k2));
    CHECK(!reader->get(k1));
    CHECK(reader->stats().misses == 3);
    CHECK(count_containing(told, "without a valid MAC") == 1);
    // Outside require the planted entry still reads (its checksums hold): the MAC is what require adds.
    o.authenticate = false;
    CHECK(runtime::Cache::open(o).value()->get(k1) == payload);
    // get_or_build under require builds again and stores a MAC'd entry, served from then on.
    o.authenticate = true;
    auto again = runtime::Cache::open(o).value();
    int builds = 0;
    const auto build = [&]() -> Result<ByteVector> {
        ++builds;
        return payload;
    };
    CHECK(again->get_or_build(k1, build).value() == payload);
    CHECK(again->get_or_build(k1, build).value() == payload);
    CHECK(builds == 1);
    // A key file others may read, or a link in its place, is refused: nothing is served.
    REQUIRE(::chmod((dir.path + "/cache/v1/mac.key").c_str(), 0644) == 0);
    told.clear();
    CHECK(!runtime::Cache::open(o).value()->get(k1));
    CHECK(count_containing(told, "is not this user's alone") == 1);
    REQUIRE(::unlink((dir.path + "/cache/v1/mac.key").c_str()) == 0);
    REQUIRE(::symlink("/dev/zero", (dir.path + "/cache/v1/mac.key").c_str()) == 0);
    told.clear();
    CHECK(!runtime::Cache::open(o).value()->get(k1));
    CHECK(count_containing(told, "symbolic link") == 1);
}

TEST_CASE("require through the runtime: a JIT output is cached with its MAC and served to the next process; a planted one is built again",
          "[signing][cache][jit]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key();
    const ByteVector ptx_only = signed_by(make_archive("jit", {"compute_90"}, {"scale"}, 1, Matrix::none), a);
    const std::string cache = dir.path + "/cache";
    const auto run = [&](std::vector<std::string>* log) {
        auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {a.pub}, log);
        REQUIRE(mount_status(rt.get(), ptx_only, "ptx.sdma") == SDM_OK);
        const auto info = info_of(rt.get(), 0, "scale");
        return std::pair(info.source, stats_of(rt.get()));
    };
    const auto [first_source, first] = run(nullptr);
    if (first.builds == 0) {
        WARN("nvJitLink is not available here: the JIT went to the driver, uncached");
        return;
    }
    CHECK(first.misses == 1);
    const auto [second_source, second] = run(nullptr);
    CHECK(second_source == 2);  // SDM_SOURCE_CACHE: the MAC held
    CHECK(second.hits == 1);
    // Zero the MAC of every entry (checksums untouched): the next process builds again, says so once.
    for (const auto& fan : std::filesystem::directory_iterator(cache + "/v1")) {
        if (!fan.is_directory()) continue;
        for (const auto& entry : std::filesystem::directory_iterator(fan.path())) {
            if (entry.path().extension() != ".sdmc") continue;
            std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(48);
            f.write(std::string(16, '\0').data(), 16);
        }
    }
    std::vector<std::string> log;
    const auto [third_source, third] = run(&log);
    CHECK(third_source != 2);
    CHECK(third.builds == 1);
    CHECK(count_containing(log, "without a valid MAC") == 1);
    // And the same payloads unsigned, policy off: a cache key is the BLAKE2b of the bytes
    // themselves (archive::Archive::identity), the signed digest or not, so the same input is the
    // same entry: served, not built again. (What keeps another archive's bytes apart is the digest,
    // not the policy: tests/runtime/test_hostile_runtime.cpp, "second preimage".)
    auto off = policy_runtime(cache, SDM_SIGNATURES_OFF, {}, nullptr);
    REQUIRE(mount_status(off.get(), make_archive("jit", {"compute_90"}, {"scale"}, 1, Matrix::none), "plain.sdma") == SDM_OK);
    CHECK(info_of(off.get(), 0, "scale").source == 2);
    CHECK(stats_of(off.get()).builds == 0);
}

TEST_CASE("key files: written by the tool's format, read back; hostile ones refused with the reason", "[signing][keys]") {
    TempDir dir;
    const Key a = new_key();
    write_file(dir.path + "/a.pub", archive::public_key_text(a.pub));
    write_file(dir.path + "/a.key", archive::secret_key_text(a.secret), 0600);
    CHECK(archive::read_public_key(dir.path + "/a.pub").value() == a.pub);
    CHECK(archive::read_secret_key(dir.path + "/a.key").value() == a.secret);
    write_file(dir.path + "/open.key", archive::secret_key_text(a.secret), 0640);
    CHECK_THAT(archive::read_secret_key(dir.path + "/open.key").error().message, Catch::Contains("may be read by others"));
    auto damaged = archive::secret_key_text(a.secret);
    damaged[30] = damaged[30] == '0' ? '1' : '0';  // in the seed: the halves disagree
    write_file(dir.path + "/damaged.key", damaged, 0600);
    CHECK_THAT(archive::read_secret_key(dir.path + "/damaged.key").error().message, Catch::Contains("damaged"));
    write_file(dir.path + "/short.pub", "sdm-ed25519-public 0011");
    CHECK_THAT(archive::read_public_key(dir.path + "/short.pub").error().message, Catch::Contains("not an sdm public key"));
    REQUIRE(::mkfifo((dir.path + "/fifo.pub").c_str(), 0600) == 0);
    CHECK_THAT(archive::read_public_key(dir.path + "/fifo.pub").error().message, Catch::Contains("FIFO"));
    write_file(dir.path + "/big.pub", std::string(1 << 20, 'a'));
    CHECK(!archive::read_public_key(dir.path + "/big.pub"));
}

// ---- no rollback (docs/SIGNING.md, "Rollback"; runtime/archives/version_floor.hpp) ----

[[maybe_unused]] ByteVector versioned(uint64_t version, const std::vector<std::string>& kernels = {"scale"}, std::optional<std::string> line = {}) {
    archive::WriterOptions o;
    if (version > 0) o.archive_version = version;
    o.release_line = std::move(line);
    return make_archive("m", {"sm_90"}, kernels, 1, Matrix::none, o);
}

// `bytes` with one byte of `key`'s signature record flipped: the records lie outside the digest
// they sign, so this needs no key.
[[maybe_unused]] ByteVector spoil_record(ByteVector bytes, const Key& key) {
    const auto a = archive::Archive::open_memory(bytes, "spoiled.sdma");
    REQUIRE(a);
    const auto& block = *a->signature_block();
    const auto id = archive::key_id(key.pub).value();
    for (size_t i = 0; i < block.signatures.size(); ++i)
        if (block.signatures[i].key_id == id) {
            const size_t record = block.offset + archive::signature_block::header_size + block.digests.size() + i * archive::signature_block::record_size;
            bytes[record + archive::signature_block::record_signature + 5] ^= std::byte{0x40};
            return bytes;
        }
    FAIL("the archive carries no record of that key");
    return bytes;
}

[[maybe_unused]] std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("require: a signed archive older than one admitted before from its key is refused, naming both versions; marks persist", "[signing][rollback]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key(), b = new_key();
    const std::string cache = dir.path + "/cache", marks = cache + ".state/versions";
    const std::string a_id = archive::key_id_text(archive::key_id(a.pub).value()), b_id = archive::key_id_text(archive::key_id(b.pub).value());
    std::string message;
    {
        auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {a.pub, b.pub}, nullptr);
        CHECK(mount_status(rt.get(), signed_by(versioned(3), a), "v3.sdma", &message) == SDM_OK);
        CHECK(read_text(marks) == "sdm versions 2\nkey " + a_id + " 3\n");
        CHECK(mount_status(rt.get(), signed_by(versioned(2), a), "v2.sdma", &message) == SDM_ERROR_UNTRUSTED);
        CHECK_THAT(message, Catch::Contains("v2.sdma") && Catch::Contains("version 2") && Catch::Contains("older than version 3") &&
                                Catch::Contains(a_id) && Catch::Contains("rollback is refused") && Catch::Contains(marks));
    }
    struct stat st {};
    REQUIRE(::stat(marks.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    // Another runtime (another process would read the same file): the mark holds.
    auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {a.pub, b.pub}, nullptr);
    CHECK(mount_status(rt.get(), signed_by(versioned(2), a), "v2.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK(mount_status(rt.get(), signed_by(versioned(0), a), "none.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("no version (read as 0)"));
    CHECK(mount_status(rt.get(), signed_by(versioned(3), a), "v3-again.sdma", &message) == SDM_OK);
    {  // an archive refused for another reason after its signature held raises no mark: an overlay of v9 with no base
        archive::WriterOptions o;
        o.archive_version = 9;
        o.base = Hash128{1, 2};
        CHECK(mount_status(rt.get(), signed_by(make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none, o), a), "v9-overlay.sdma", &message) ==
              SDM_ERROR_MISMATCH);
    }
    CHECK(mount_status(rt.get(), signed_by(versioned(7), a), "v7.sdma", &message) == SDM_OK);
    // Each key has its own mark: b's version 1 is not judged by a's 7.
    CHECK(mount_status(rt.get(), signed_by(versioned(1), b), "b1.sdma", &message) == SDM_OK);
    const std::string text = read_text(marks);
    CHECK_THAT(text, Catch::Contains("key " + a_id + " 7\n") && Catch::Contains("key " + b_id + " 1\n"));
    // Off and warn do not look at the marks (a rollback is what require refuses).
    auto off = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_OFF, {}, nullptr);
    CHECK(mount_status(off.get(), signed_by(versioned(2), a), "v2.sdma") == SDM_OK);
}

TEST_CASE("two trusted keys: a release both signed raises both marks; an older one by either key, or with a spoiled record, is refused",
          "[signing][rollback][hostile]") {
    fake({kH200});
    TempDir dir;
    const Key k1 = new_key(), k2 = new_key();
    const std::string cache = dir.path + "/cache";
    const std::string k1_id = archive::key_id_text(archive::key_id(k1.pub).value()), k2_id = archive::key_id_text(archive::key_id(k2.pub).value());
    auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {k1.pub, k2.pub}, nullptr);
    std::string message;
    CHECK(mount_status(rt.get(), signed_by(signed_by(versioned(10), k1), k2), "v10.sdma", &message) == SDM_OK);
    CHECK_THAT(read_text(cache + ".state/versions"), Catch::Contains("key " + k1_id + " 10\n") && Catch::Contains("key " + k2_id + " 10\n"));
    // v5 signed by the second key alone: judged by that key's mark, which v10 raised too.
    CHECK(mount_status(rt.get(), signed_by(versioned(5), k2), "v5-k2.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("older than version 10") && Catch::Contains(k2_id) && Catch::Contains("rollback is refused"));
    // v5 signed by both, one byte of k1's record flipped (no key needed): the spoiled record refuses it.
    const ByteVector both5 = signed_by(signed_by(versioned(5), k1), k2);
    CHECK(outcome(spoil_record(both5, k1), {k1.pub, k2.pub}) == SignatureCheck::Outcome::bad_signature);
    CHECK(mount_status(rt.get(), spoil_record(both5, k1), "v5-spoiled.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("signature by trusted key " + k1_id) && Catch::Contains("does not verify"));
    CHECK(mount_status(rt.get(), both5, "v5-both.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("older than version 10"));
    // The newer release, and one later by either key, mount.
    CHECK(mount_status(rt.get(), signed_by(versioned(11), k2), "v11-k2.sdma", &message) == SDM_OK);
    CHECK(mount_status(rt.get(), signed_by(versioned(10), k1), "v10-k1.sdma", &message) == SDM_OK);  // k1's own mark is 10
}

TEST_CASE("a release line keeps one mark whichever trusted key signs: a key rotation cannot bring an older release back",
          "[signing][rollback]") {
    fake({kH200});
    TempDir dir;
    const Key old_key = new_key(), new_key_ = new_key(), other = new_key();
    const std::string cache = dir.path + "/cache", marks = cache + ".state/versions";
    auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {old_key.pub, new_key_.pub, other.pub}, nullptr);
    std::string message;
    CHECK(mount_status(rt.get(), signed_by(versioned(10, {"scale"}, "example.com/fleet"), old_key), "v10.sdma", &message) == SDM_OK);
    // The rotation: v11 signed by the new key alone.
    CHECK(mount_status(rt.get(), signed_by(versioned(11, {"scale"}, "example.com/fleet"), new_key_), "v11.sdma", &message) == SDM_OK);
    CHECK_THAT(read_text(marks), Catch::Contains("line example.com/fleet 11\n"));
    // The old key's v10, replayed after the rotation: the line's mark refuses it.
    CHECK(mount_status(rt.get(), signed_by(versioned(10, {"scale"}, "example.com/fleet"), old_key), "v10-again.sdma", &message) ==
          SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("of release line example.com/fleet has version 10, older than version 11") &&
                            Catch::Contains("release line example.com/fleet (signed by any trusted key)"));
    // Another key's release of the line is judged by the same mark.
    CHECK(mount_status(rt.get(), signed_by(versioned(3, {"scale"}, "example.com/fleet"), other), "other3.sdma", &message) == SDM_ERROR_UNTRUSTED);
    // Another line has a mark of its own, and so does an archive of no line (by its keys' marks).
    CHECK(mount_status(rt.get(), signed_by(versioned(2, {"scale"}, "example.com/tools"), other), "tools2.sdma", &message) == SDM_OK);
    CHECK(mount_status(rt.get(), signed_by(versioned(1), other), "unnamed1.sdma", &message) == SDM_ERROR_UNTRUSTED);  // other's mark: 2
    CHECK(mount_status(rt.get(), signed_by(versioned(4), other), "unnamed4.sdma", &message) == SDM_OK);
    // The old key's own mark rose with the line: an unnamed archive by it cannot go below 10.
    CHECK(mount_status(rt.get(), signed_by(versioned(9), old_key), "unnamed9.sdma", &message) == SDM_ERROR_UNTRUSTED);
    // The marks survive into the next runtime; a state file an older sdm wrote (version 1) is read too.
    auto next = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {old_key.pub, new_key_.pub}, nullptr);
    CHECK(mount_status(next.get(), signed_by(versioned(10, {"scale"}, "example.com/fleet"), new_key_), "v10-next.sdma") == SDM_ERROR_UNTRUSTED);
    write_file(marks, "sdm versions 1\n" + archive::key_id_text(archive::key_id(old_key.pub).value()) + " 7\n", 0600);
    CHECK(mount_status(next.get(), signed_by(versioned(6), old_key), "v6.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK(mount_status(next.get(), signed_by(versioned(8), old_key), "v8.sdma", &message) == SDM_OK);
    CHECK(read_text(marks).starts_with("sdm versions 2\n"));
}

TEST_CASE("rollback: a replayed old version is refused by a reload too, and the newer one keeps serving", "[signing][rollback][reload]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key();
    const std::string file = dir.path + "/k.sdma";
    drop(file, signed_by(versioned(5, {"scale", "axpy"}), a));
    RuntimePtr rt;
    {
        EnvVar path("SDM_ARCHIVE_PATH", file);
        rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, nullptr);
    }
    info_of(rt.get(), 0, "axpy");
    drop(file, signed_by(versioned(4), a));  // the old release, validly signed
    uint32_t reloaded = 9;
    sdm_error* e = nullptr;
    CHECK(sdm_runtime_reload(rt.get(), &reloaded, &e) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("keeps serving") && Catch::Contains("older than version 5"));
    sdm_error_destroy(e);
    CHECK(reloaded == 0);
    info_of(rt.get(), 0, "axpy");
}

TEST_CASE("the host's minimum archive version refuses older and unversioned archives under any policy", "[signing][rollback]") {
    fake({kH200});
    TempDir dir;
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    const std::string cache = dir.path + "/cache";
    p.cache_dir = cache.c_str();
    p.log_level = SDM_LOG_OFF;
    p.min_archive_version = 5;
    sdm_runtime* r = nullptr;
    REQUIRE(sdm_runtime_create(&p, &r, nullptr) == SDM_OK);
    RuntimePtr rt(r);
    std::string message;
    CHECK(mount_status(rt.get(), versioned(4), "v4.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(message, Catch::Contains("v4.sdma has version 4, below the minimum version 5") && Catch::Contains("min_archive_version"));
    CHECK(mount_status(rt.get(), versioned(0), "none.sdma", &message) == SDM_ERROR_UNTRUSTED);
    CHECK(mount_status(rt.get(), versioned(5), "v5.sdma", &message) == SDM_OK);
    // A 1.2-sized struct reads no minimum.
    p.struct_size = offsetof(sdm_runtime_params, state_dir);
    REQUIRE(sdm_runtime_create(&p, &r, nullptr) == SDM_OK);
    RuntimePtr old(r);
    CHECK(mount_status(old.get(), versioned(4), "v4.sdma") == SDM_OK);
}

TEST_CASE("hostile rollback state: damaged marks, a link, a foreign-writable directory each refuse the mount with the reason", "[signing][rollback][hostile]") {
    fake({kH200});
    TempDir dir;
    const Key a = new_key();
    const std::string cache = dir.path + "/cache", state = cache + ".state", marks = state + "/versions";
    REQUIRE(::mkdir(state.c_str(), 0700) == 0);
    auto rt = policy_runtime(cache, SDM_SIGNATURES_REQUIRE, {a.pub}, nullptr);
    const ByteVector v2 = signed_by(versioned(2), a);
    std::string message;
    const auto refused = [&](const std::string& contents, const std::string& why) {
        write_file(marks, contents, 0600);
        CHECK(mount_status(rt.get(), v2, "v2.sdma", &message) == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(message, Catch::Contains("v2.sdma is not mounted") && Catch::Contains(why));
    };
    refused("garbage\n", "line 1");
    refused("sdm versions 1\n0011223344556677 x\n", "not a decimal");
    refused("sdm versions 1\n0011223344556677 99999999999999999999999\n", "not a decimal");
    refused("sdm versions 1\n0011223344556677 1\n0011223344556677 2\n", "listed twice");
    refused("sdm versions 1\nZZ11223344556677 1\n", "16 hex digits");
    refused("sdm versions 1\n0011223344556677 1", "no newline");
    refused("", "empty");
    refused("sdm versions 2\nkey 0011223344556677 1\nline a/b 2\nline a/b 3\n", "listed twice");
    refused("sdm versions 2\nline ../etc 1\n", "release line's name");
    refused("sdm versions 2\nline Fleet 1\n", "release line's name");
    refused("sdm versions 2\nkin 0011223344556677 1\n", "not \"key KEYID VERSION\"");
    refused("sdm versions 2\nkey 0011223344556677\n", "no version");
    refused("sdm versions 2\nline x \n", "not a decimal");
    refused(std::string(100 * 1024, 'a'), "v2.sdma is not mounted");  // past 64 KiB: never read whole
    REQUIRE(::unlink(marks.c_str()) == 0);
    REQUIRE(::symlink("/etc/passwd", marks.c_str()) == 0);
    CHECK(mount_status(rt.get(), v2, "v2.sdma", &message) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(message, Catch::Contains("symbolic link"));
    REQUIRE(::unlink(marks.c_str()) == 0);
    REQUIRE(::mkfifo(marks.c_str(), 0600) == 0);  // never opened for reading: a FIFO would block the mount
    CHECK(mount_status(rt.get(), v2, "v2.sdma", &message) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(message, Catch::Contains("FIFO"));
    REQUIRE(::unlink(marks.c_str()) == 0);
    REQUIRE(::chmod(state.c_str(), 0777) == 0);
    CHECK(mount_status(rt.get(), v2, "v2.sdma", &message) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(message, Catch::Contains("others may write to it") && Catch::Contains("SDM_STATE_DIR"));
    REQUIRE(::chmod(state.c_str(), 0700) == 0);
    CHECK(mount_status(rt.get(), v2, "v2.sdma", &message) == SDM_OK);
    CHECK(read_text(marks).ends_with(" 2\n"));
}

#endif  // SDM_TEST_SIGNING

TEST_CASE("a release line in the header: written, read back, and every malformed one refused as corrupt", "[rollback][hostile]") {
    using namespace archive;
    WriterOptions o;
    o.archive_version = 3;
    o.release_line = "example.com/fleet-kernels";
    const ByteVector good = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none, o);
    const auto a = Archive::open_memory(good, "line.sdma");
    REQUIRE(a);
    CHECK(a->header().header_size == kHeaderSizeLine);
    CHECK(a->header().release_line == std::optional<std::string>("example.com/fleet-kernels"));
    // No line: the 1.2 header as before, byte for byte.
    o.release_line.reset();
    CHECK(load_u32(make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none, o), header::header_size) == kHeaderSize12);
    const auto with_line = [&](const std::string& name) {
        ByteVector b = good;
        for (size_t i = 0; i < header::release_line_size; ++i) b[header::release_line + i] = std::byte{0};
        std::memcpy(b.data() + header::release_line, name.data(), std::min(name.size(), header::release_line_size));
        reseal(b);
        return b;
    };
    CHECK_THAT(open_error(with_line("Fleet")), Catch::Contains("the release line does not start with a lower-case letter"));
    CHECK_THAT(open_error(with_line("a b")), Catch::Contains("holds a byte other than"));
    CHECK_THAT(open_error(with_line("")), Catch::Contains("the release line is empty"));
    CHECK_THAT(open_error(with_line(std::string("ab\0cd", 5))), Catch::Contains("bytes after its NUL padding"));
    CHECK(open_error(with_line(std::string(32, 'a'))).empty());  // 32 bytes, no NUL: the longest name
    ByteVector unflagged = good;  // stored without its bit
    store_u64(unflagged, header::optional_features, load_u64(unflagged, header::optional_features) & ~kFeatureReleaseLine);
    reseal(unflagged);
    CHECK_THAT(open_error(unflagged), Catch::Contains("a release line is stored but the feature bit 0x8 is not set"));
    o.release_line.reset();
    ByteVector short_header = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none, o);  // 152 bytes, bit set
    store_u64(short_header, header::optional_features, load_u64(short_header, header::optional_features) | kFeatureReleaseLine);
    reseal(short_header);
    CHECK_THAT(open_error(short_header), Catch::Contains("needs a header of at least 184 bytes"));
    // The writer refuses what the reader would.
    o.release_line = "../etc";
    ArchiveWriter bad(o);
    CHECK_THAT(bad.finish().error().message, Catch::Contains("release line '../etc'"));
    o.archive_version.reset();
    o.release_line = "fleet";
    ArchiveWriter unversioned(o);
    CHECK_THAT(unversioned.finish().error().message, Catch::Contains("give --archive-version too"));
}


TEST_CASE("built without signing every signing path answers SDM_ERROR_UNSUPPORTED", "[signing][absent]") {
    if (crypto::available()) {
        SUCCEED("this build has libsodium: the TSan build (-Dsigning=disabled) runs this case");
        return;
    }
    fake({kH200});
    TempDir dir;
    for (uint32_t policy : {SDM_SIGNATURES_WARN, SDM_SIGNATURES_REQUIRE}) {
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.signature_policy = policy;
        sdm_runtime* r = nullptr;
        sdm_error* e = nullptr;
        CHECK(sdm_runtime_create(&p, &r, &e) == SDM_ERROR_UNSUPPORTED);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("built without signing (Meson option -Dsigning=disabled)"));
        sdm_error_destroy(e);
    }
    // Off (and the default) work as before; the environment's require fails closed at mount.
    auto off = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_OFF, {}, nullptr);
    const ByteVector plain = make_archive("m", {"sm_90"}, {"scale"}, 1, Matrix::none);
    CHECK(mount_status(off.get(), plain, "plain.sdma") == SDM_OK);
    {
        EnvVar require("SDM_REQUIRE_SIGNED", "1");
        auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_DEFAULT, {}, nullptr);
        std::string message;
        CHECK(mount_status(rt.get(), plain, "plain.sdma", &message) == SDM_ERROR_UNSUPPORTED);
    }
    CHECK(archive::sign_archive(plain, "plain.sdma", crypto::SecretKey{}).error().code == ErrorCode::unsupported);
    CHECK(crypto::generate_key_pair().error().code == ErrorCode::unsupported);
}

TEST_CASE("sdm jit --sign signs only what verified: an input edited after signing is refused, not laundered", "[signing][jit][hostile]") {
    if (!crypto::available()) return;  // (this build cannot sign)
    TempDir dir;
    const Key a = new_key(), b = new_key();
    // A PTX module stored (its text in place), signed by a; then one byte of the text changed and
    // every checksum recomputed, as an attacker would: it opens, every checksum holds, and its
    // own `verify --trust a` fails.
    archive::WriterOptions stored;
    stored.compress = false;
    archive::ArchiveWriter writer(stored);
    REQUIRE(writer.add({"jit", archive::Kind::ptx, 90, archive::Variant::base, data_file("kernels.compute_90.ptx")}));
    const ByteVector signed_archive = signed_by(writer.finish().value(), a);
    ByteVector edited = signed_archive;
    auto opened = archive::Archive::open_memory(signed_archive, "x");
    REQUIRE(opened);
    const size_t ptx = opened->find("jit", archive::Kind::ptx, 90, archive::Variant::base).value();
    const archive::Entry entry = opened->entries()[ptx];
    const std::string_view text(reinterpret_cast<const char*>(signed_archive.data() + entry.data_offset), static_cast<size_t>(entry.raw_size));
    REQUIRE(text.find("NVIDIA") != std::string_view::npos);
    const size_t at = static_cast<size_t>(entry.data_offset) + text.find("NVIDIA");  // in nvcc's header comment
    edited[at] = edited[at] == std::byte{'x'} ? std::byte{'y'} : std::byte{'x'};
    store_hash128(edited, record_field(edited, ptx, archive::record::raw_hash),
                  xxh3_128(Bytes(edited).subspan(static_cast<size_t>(entry.data_offset), static_cast<size_t>(entry.raw_size))));
    rehash_stored(edited, ptx);
    reseal(edited);
    REQUIRE(open_error(edited).empty());
    const std::string in = dir.path + "/edited.sdma", out = dir.path + "/jit.sdma", a_pub = dir.path + "/a.pub", b_key = dir.path + "/b.key";
    drop(in, edited);
    write_file(a_pub, archive::public_key_text(a.pub));
    write_file(b_key, archive::secret_key_text(b.secret), 0600);
    {
        auto check = archive::Archive::open_memory(edited, "edited");
        REQUIRE(check);
        auto verified = archive::verify_archive(*check);
        INFO((verified ? std::string() : verified.error().message));
        CHECK(verified);
    }
    CHECK(tools::run_verify({in}, true, {}) == 0);       // every checksum holds
    CHECK(tools::run_verify({in}, true, {a_pub}) == 1);  // its signature does not
    for (const bool full : {false, true}) {
        INFO((full ? "--full" : "an overlay"));
        tools::JitOptions o;
        o.input = in;
        o.output = out;
        o.archs = {"90"};
        o.quiet = true;
        o.full = full;
        o.sign = b_key;
        o.self = SDM_TEST_TOOL;
        CHECK(tools::run_jit(o) == 1);  // a signed input and no --trust: refused
        o.trust = {a_pub};
        CHECK(tools::run_jit(o) == 1);  // --trust a: its signature does not hold, refused
        CHECK_FALSE(std::filesystem::exists(out));
    }
}

TEST_CASE("a reload under require admits before it decodes: an unsigned bomb renamed over a signed archive costs its metadata", "[signing][reload][cost]") {
    if (!crypto::available()) return;  // (require needs signing)
    fake({kH200});
    TempDir dir;
    const Key a = new_key();
    const std::string file = dir.path + "/k.sdma";
    // 256 MiB of raw bytes in a few KB of zstd, unsigned: verifying it decodes all of it.
    archive::WriterOptions quick;
    quick.level = 1;
    quick.dictionary = quick.prefix = false;
    archive::ArchiveWriter bomb_writer(quick);
    {
        ByteVector raw(size_t{256} << 20, std::byte{0});
        const ByteVector cubin = data_file("kernels.sm_90.cubin");
        std::copy(cubin.begin(), cubin.end(), raw.begin());  // a cubin, then zeros its sections never reach
        REQUIRE(bomb_writer.add({"kernels", archive::Kind::cubin, 90, archive::Variant::base, std::move(raw)}));
    }
    drop(dir.path + "/bomb.sdma", bomb_writer.finish().value());
    drop(dir.path + "/small.sdma", make_archive("kernels", {"sm_80"}, {"scale"}, 1, Matrix::none));
    REQUIRE(std::filesystem::file_size(dir.path + "/bomb.sdma") < (size_t{1} << 20));
    const ByteVector good = signed_by(make_archive("kernels", {"sm_90"}, {"scale"}, 1, Matrix::none), a);
    const auto reload_cost = [&](const std::string& next) {
        return run_in_child([&] {
            drop(file, good);
            auto rt = policy_runtime(dir.path + "/cache", SDM_SIGNATURES_REQUIRE, {a.pub}, nullptr);
            if (sdm_archive_mount_file(rt.get(), file.c_str(), nullptr) != SDM_OK) return false;
            std::filesystem::copy_file(next, file + ".new");
            std::filesystem::rename(file + ".new", file);
            uint32_t reloaded = 0;
            return sdm_runtime_reload(rt.get(), &reloaded, nullptr) == SDM_ERROR_UNTRUSTED && reloaded == 0;
        });
    };
    const auto baseline = reload_cost(dir.path + "/small.sdma"), attack = reload_cost(dir.path + "/bomb.sdma");
    REQUIRE(baseline.ok);
    REQUIRE(attack.ok);
    INFO("baseline " << baseline.peak_mib << " MiB, " << baseline.cpu_seconds << " s; bomb " << attack.peak_mib << " MiB, " << attack.cpu_seconds << " s");
    CHECK(attack.peak_mib <= baseline.peak_mib + 32);  // 256 MiB more when the reload decoded before admitting
    CHECK(attack.cpu_seconds <= 2 * baseline.cpu_seconds + 0.1);
}
