#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#ifdef _WIN32
#include <random>
#else
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#ifdef SDM_TEST_SANITIZED
// The sanitizer runtimes' allocator interface (sanitizer/allocator_interface.h, which GCC 12's
// packages do not install): the bytes allocated and not yet freed, quarantine excluded.
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include "archive/file_map.hpp"
#include "archive/codec.hpp"
#include "common/hash.hpp"

namespace sdm::test {

TempDir::TempDir() {
#ifdef _WIN32
    // The system's temporary folder (%TEMP%), a new folder of a random name in it.
    std::random_device random;
    for (int tries = 0; path.empty() && tries < 100; ++tries) {
        const auto candidate = std::filesystem::temp_directory_path() / ("sdm-test-" + std::to_string(random()));
        if (std::filesystem::create_directory(candidate)) path = candidate.string();
    }
    REQUIRE(!path.empty());
#else
    char tmpl[] = "/tmp/sdm-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
#endif
}

TempDir::~TempDir() { std::filesystem::remove_all(path); }

std::string data_path(const std::string& name) { return std::string(SDM_TEST_DATA) + "/" + name; }

ByteVector data_file(const std::string& name) {
    auto bytes = archive::read_file(data_path(name));
    if (!bytes) FAIL(bytes.error().message);
    return std::move(*bytes);
}

size_t record_field(Bytes a, size_t index, size_t field) {
    return load_u64(a, archive::header::index_offset) + index * load_u32(a, archive::header::record_size) + field;
}

void rehash_stored(ByteVector& a, size_t index) {
    const uint64_t offset = load_u64(a, record_field(a, index, archive::record::data_offset));
    const uint64_t size = load_u64(a, record_field(a, index, archive::record::stored_size));
    store_u64(a, record_field(a, index, archive::record::stored_hash), xxh3_64(Bytes(a).subspan(offset, size)));
}

void reseal(ByteVector& a) {
    using namespace archive;
    const uint64_t index = load_u64(a, header::index_offset);
    const uint64_t end = load_u64(a, header::strings_offset) + load_u64(a, header::strings_size);
    store_u64(a, header::meta_hash, xxh3_64(Bytes(a).subspan(index, end - index)));
    // A header of a later minor (format 1.2's extension) is covered whole; a size a test made
    // nonsense of (past the file, below 128) seals the 1.0 header's bytes.
    const uint32_t size = load_u32(a, header::header_size);
    const bool sane = size >= kHeaderSize && size <= limits::max_header_size && size <= a.size() && size % 8 == 0;
    store_u64(a, header::header_hash, header_hash_of(a, sane ? size : kHeaderSize));
}

std::string open_error(Bytes bytes) {
    auto a = archive::Archive::open_memory(bytes, "test.sdma");
    return a ? std::string() : a.error().message;
}

#ifndef _WIN32
ChildCost run_in_child(const std::function<bool()>& body) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(body() ? 0 : 1);
    int status = 0;
    struct rusage usage {};
    REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
    ChildCost cost;
    cost.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    cost.peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
    cost.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return cost;
}

size_t heap_in_use() {
#ifdef SDM_TEST_SANITIZED
    return __sanitizer_get_current_allocated_bytes();
#else
    return ::mallinfo2().uordblks;
#endif
}
#endif

}  // namespace sdm::test
