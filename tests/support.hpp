// Shared helpers of the Catch2 tests: the committed nvcc outputs under tests/data, a writer over
// them, and surgery on archive bytes (change a field, then re-seal the checksums so that the
// reader's structural checks, not its checksums, are what a test exercises).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "archive/format.hpp"
#include "archive/manifest.hpp"
#include "archive/archive.hpp"
#include "archive/writer.hpp"

namespace sdm::test {

// Whether this test runs under ASan or TSan (GCC's macros, clang's __has_feature): their freed
// memory sits in quarantine and shadow, so resident memory says little, and a crash in a child
// becomes the sanitizer's report; the helper sets no address-space limit there.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SDM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SDM_TEST_SANITIZED 1
#endif
#ifdef SDM_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

std::string data_path(const std::string& name);  // tests/data/<name>

// A fresh directory under /tmp, removed with everything in it when the object goes.
struct TempDir {
    std::string path;
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};
ByteVector data_file(const std::string& name);
archive::Manifest test_manifest();                // tests/data/manifest.toml, parsed

// Every kind: cubins (base, a, f), PTX, LTO-IR, a fatbin and the manifest.
std::vector<archive::WriterInput> test_inputs();
ByteVector build_archive(const archive::WriterOptions& options = {});

// Byte offset of record `index`'s field `field` (archive::record::*).
size_t record_field(Bytes archive, size_t index, size_t field);
// Recomputes the stored hash of entry `index` from its current range.
void rehash_stored(ByteVector& archive, size_t index);
// Recomputes the index and header checksums.
void reseal(ByteVector& archive);

std::string open_error(Bytes bytes);  // "" when it opens

// What running `body` in a child process cost: CPU seconds (user + system) and peak resident
// memory. For tests that assert costs as ratios against a baseline measured the same way in the
// same test (never as wall-clock limits). `ok` is whether `body` returned true.
struct ChildCost {
    double cpu_seconds{0};
    double peak_mib{0};
    bool ok{false};
};
#ifndef _WIN32  // (fork and the allocator's counts: Linux only)
ChildCost run_in_child(const std::function<bool()>& body);

// Bytes of heap this process holds now (allocated and not freed): glibc's count, or the
// sanitizer allocator's in an ASan or TSan build, whose freed memory stays resident in quarantine
// and makes peak RSS no measure of what a program keeps.
size_t heap_in_use();
#endif

// The golden corrupt archives (tests/golden/corrupt): each damage, whether the archive still
// opens (the damage hides behind valid checksums, so only reading or verifying finds it), and the
// text its error must contain.
struct CorruptCase {
    std::string name;
    ByteVector bytes;
    bool opens;
    std::string expect;
};
std::vector<CorruptCase> corrupt_cases();

}  // namespace sdm::test

#ifdef _WIN32
// POSIX's names for the environment calls the tests make, on the CRT's (which sets the process's
// environment too, where sdm reads it).
inline int setenv(const char* name, const char* value, int) { return _putenv_s(name, value); }
inline int unsetenv(const char* name) { return _putenv_s(name, ""); }
#endif

namespace sdm::test {

// Sets an environment variable for a scope, and unsets it after.
struct EnvGuard {
    EnvGuard(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
    ~EnvGuard() { unsetenv(name_); }
    EnvGuard(const EnvGuard&) = delete;
    EnvGuard& operator=(const EnvGuard&) = delete;
    const char* name_;
};

}  // namespace sdm::test
