// The C++ wrapper built with -fno-exceptions. A plain main (Catch2 needs exceptions) making the
// core calls of test_cpp_wrapper.cpp; it prints each failure and exits non-zero if any failed.
// Needs SDM_TEST_ARCHIVE, the path of tests/golden/kernels.sdma.
#include <sdm/sdm.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#if defined(__cpp_exceptions)
#error "build this test with -fno-exceptions: it checks that the wrapper works without them"
#endif
#ifndef SDM_TEST_ARCHIVE
#error "define SDM_TEST_ARCHIVE as the path of tests/golden/kernels.sdma"
#endif

namespace {

constexpr const char* kMissingDriver = "/nonexistent/sdm-test/libcuda.so.1";
constexpr const char* kMissingArchive = "/nonexistent/sdm-test/missing.sdma";

int failures = 0;

void expect(bool ok, const char* what, const sdm::Error& error = sdm::Error()) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "FAILED: %s [%s]\n", what, error.describe().c_str());
}

bool contains(const char* text, const char* part) { return std::string(text).find(part) != std::string::npos; }

}  // namespace

int main() {
    const sdm::Status abi = sdm::check_abi();
    expect(abi.ok(), "check_abi accepts the linked libsdm", abi.error());

    std::vector<std::string> lines;  // one thread makes every call here, so no lock
    sdm::Runtime::Options options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.cuda_driver = kMissingDriver;
    options.log_level = SDM_LOG_DEBUG;
    options.log = [&lines](sdm_log_level, std::string_view message) { lines.emplace_back(message); };
    auto created = sdm::Runtime::create(options);
    expect(created.ok(), "Runtime::create", created.error());
    if (!created) return 1;
    sdm::Runtime runtime = std::move(created).value();

    const auto version = runtime.driver_version();
    expect(version.code() == SDM_ERROR_NO_DRIVER, "driver_version is SDM_ERROR_NO_DRIVER", version.error());
    expect(contains(version.error().message(), kMissingDriver), "the NO_DRIVER message names the path", version.error());

    const sdm::Status missing = runtime.mount_file(kMissingArchive);
    expect(missing.code() == SDM_ERROR_IO, "mounting a missing file is SDM_ERROR_IO", missing.error());
    expect(contains(missing.error().message(), kMissingArchive), "the IO message names the path", missing.error());

    const std::vector<char> garbage(4096, 'x');
    const sdm::Status corrupt = runtime.mount_memory(garbage.data(), garbage.size(), "garbage in memory");
    expect(corrupt.code() == SDM_ERROR_ARCHIVE_CORRUPT, "mounting garbage is SDM_ERROR_ARCHIVE_CORRUPT", corrupt.error());

    const sdm::Status golden = runtime.mount_file(SDM_TEST_ARCHIVE);
    expect(golden.ok(), "mounting the golden archive", golden.error());
    const auto archives = runtime.archives();
    expect(archives.ok(), "archives()", archives.error());
    if (archives) {
        expect(archives->size() == 1, "one archive is mounted");
        if (archives->size() == 1) {
            const sdm::ArchiveInfo& info = archives->front();
            expect(info.label == SDM_TEST_ARCHIVE, "the archive's label is its path");
            expect(info.content_version == "tests.1", "content version tests.1");
            expect(info.entry_count == 11 && info.kernel_count == 2, "11 entries, 2 kernels");
            expect(info.kernel_abi_major == 1 && info.kernel_abi_minor == 2, "kernel ABI 1.2");
        }
    }

    expect(!lines.empty(), "the log callback received messages");

    sdm::Runtime moved = std::move(runtime);
    expect(!runtime && moved, "a move empties the source");  // NOLINT(bugprone-use-after-move)
    expect(runtime.archive_count().code() == SDM_ERROR_INVALID_ARGUMENT, "an empty Runtime's calls are SDM_ERROR_INVALID_ARGUMENT");
    expect(moved.archive_count().value_or(0) == 1, "the moved-to Runtime keeps its archives");

    // Signed archives (ABI 1.2): the key parser, and a policy refusing the unsigned golden archive.
    const auto key = sdm::parse_public_key("sdm-ed25519-public " + std::string(64, 'a') + "\n");
    expect(key.ok() && (*key)[0] == 0xaa && (*key)[31] == 0xaa, "parse_public_key reads a .pub file's text", key.error());
    expect(sdm::parse_public_key("sdm-ed25519-public aa").code() == SDM_ERROR_INVALID_ARGUMENT, "a short key is SDM_ERROR_INVALID_ARGUMENT");
    sdm::Runtime::Options strict;
    strict.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    strict.cuda_driver = kMissingDriver;
    strict.log_level = SDM_LOG_OFF;
    strict.signature_policy = SDM_SIGNATURES_REQUIRE;
    strict.trusted_keys = std::vector<sdm::PublicKey>{};
    auto signed_only = sdm::Runtime::create(strict);
    if (signed_only.code() != SDM_ERROR_UNSUPPORTED) {  // unsupported: a libsdm built without libsodium
        expect(signed_only.ok(), "Runtime::create with SDM_SIGNATURES_REQUIRE", signed_only.error());
        if (signed_only) {
            const sdm::Status refused = signed_only->mount_file(SDM_TEST_ARCHIVE);
            expect(refused.code() == SDM_ERROR_UNTRUSTED, "REQUIRE refuses the unsigned golden archive", refused.error());
        }
    }
    strict.signature_policy = 7;
    expect(sdm::Runtime::create(strict).code() == SDM_ERROR_INVALID_ARGUMENT, "signature_policy 7 is SDM_ERROR_INVALID_ARGUMENT");

    if (failures == 0) std::puts("sdm.hpp without exceptions: all checks passed");
    return failures == 0 ? 0 : 1;
}
