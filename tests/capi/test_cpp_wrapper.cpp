// The C++ wrapper (include/sdm/sdm.hpp) against the real libsdm, without a GPU: a runtime whose
// driver path does not exist, archive mounts that fail and one that succeeds, the log callback,
// moves, the ABI check and the exception helpers. Needs SDM_TEST_ARCHIVE, the path of
// tests/golden/kernels.sdma (kernel ABI 1.2, content "tests.1", 10 entries + manifest, 2 kernels).
#define SDM_HPP_EXCEPTIONS
#include <sdm/sdm.hpp>
#include <sdm/sdm_kernels.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fake_config.hpp"

#ifndef SDM_TEST_ARCHIVE
#error "define SDM_TEST_ARCHIVE as the path of tests/golden/kernels.sdma"
#endif

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace sdm::test;

namespace {

constexpr const char* kMissingDriver = "/nonexistent/sdm-test/libcuda.so.1";
constexpr const char* kMissingArchive = "/nonexistent/sdm-test/missing.sdma";

// A runtime that sees only what a test mounts and whose driver cannot load; the log level is set
// so that $SDM_LOG does not change what a test sees.
sdm::Runtime::Options offline_options() {
    sdm::Runtime::Options options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.cuda_driver = kMissingDriver;
    options.log_level = SDM_LOG_WARN;
    return options;
}

sdm::Runtime create(const sdm::Runtime::Options& options) {
    auto runtime = sdm::Runtime::create(options);
    if (!runtime) FAIL(runtime.error().describe());
    REQUIRE(runtime.value());
    return std::move(runtime).value();
}

std::vector<char> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Log lines gathered from whichever thread logs them.
struct LogLines {
    std::mutex mutex;
    std::vector<std::pair<sdm_log_level, std::string>> lines;

    sdm::LogFunction sink() {
        return [this](sdm_log_level level, std::string_view message) {
            std::lock_guard<std::mutex> lock(mutex);
            lines.emplace_back(level, std::string(message));
        };
    }
    size_t size() {
        std::lock_guard<std::mutex> lock(mutex);
        return lines.size();
    }
    bool any_contains(const std::string& text) {
        std::lock_guard<std::mutex> lock(mutex);
        return std::any_of(lines.begin(), lines.end(), [&](const auto& line) { return line.second.find(text) != std::string::npos; });
    }
};

void check_golden(const sdm::ArchiveInfo& info) {
    CHECK(info.content_version == "tests.1");
    CHECK(info.entry_count == 11);
    CHECK(info.kernel_count == 2);
    CHECK(info.kernel_abi_major == 1);
    CHECK(info.kernel_abi_minor == 2);
    CHECK(info.format_major == 1);
    CHECK_FALSE(info.embedded);
    CHECK(info.size_bytes == file_bytes(SDM_TEST_ARCHIVE).size());
}

}  // namespace

TEST_CASE("check_abi accepts the linked libsdm and explains a mismatch", "[cpp]") {
    const sdm::Status status = sdm::check_abi();
    if (!status) FAIL(status.error().describe());
    CHECK(status.code() == SDM_OK);
    CHECK(sdm::library_abi_version() >> 16 == SDM_ABI_VERSION_MAJOR);
    CHECK(sdm::header_abi_version() == ((uint32_t{SDM_ABI_VERSION_MAJOR} << 16) | SDM_ABI_VERSION_MINOR));
    CHECK_FALSE(std::string(sdm::library_version()).empty());

    // A newer minor serves an older host; another major does not.
    CHECK(sdm::check_abi(sdm::header_abi_version() + 1).ok());
    const sdm::Status other_major = sdm::check_abi(uint32_t{SDM_ABI_VERSION_MAJOR + 1} << 16);
    REQUIRE_FALSE(other_major);
    CHECK(other_major.code() == SDM_ERROR_MISMATCH);
    const std::string message = other_major.error().message();
    CHECK_THAT(message, Contains("ABI " + std::to_string(SDM_ABI_VERSION_MAJOR + 1) + ".0"));
    CHECK_THAT(message, Contains("ABI " + std::to_string(SDM_ABI_VERSION_MAJOR) + "." + std::to_string(SDM_ABI_VERSION_MINOR)));
    CHECK_THAT(message, Contains("major"));
}

TEST_CASE("names of statuses and device classes", "[cpp]") {
    CHECK(std::string(sdm::status_string(SDM_ERROR_IO)) == "SDM_ERROR_IO");
    CHECK(std::string(sdm::status_string(12345)) == "SDM_ERROR_UNKNOWN");
    CHECK(std::string(sdm::device_class_name(SDM_DEVICE_CLASS_MODERN)) == "modern");
    CHECK(std::string(sdm::device_class_name(SDM_DEVICE_CLASS_A100)) == "a100");
    CHECK(std::string(sdm::device_class_name(SDM_DEVICE_CLASS_RTX)) == "rtx");
    CHECK(std::string(sdm::device_class_name(SDM_DEVICE_CLASS_UNSUPPORTED)) == "unsupported");
}

TEST_CASE("a driver that does not load is SDM_ERROR_NO_DRIVER naming its path", "[cpp]") {
    const sdm::Runtime runtime = create(offline_options());

    const auto version = runtime.driver_version();
    REQUIRE_FALSE(version);
    CHECK(version.code() == SDM_ERROR_NO_DRIVER);
    CHECK_THAT(std::string(version.error().message()), Contains(kMissingDriver));
    CHECK(version.value_or(-1) == -1);

    // The runtime keeps it as its last error, for hosts that passed no error pointer.
    const auto last = runtime.last_error();
    REQUIRE(last);
    CHECK(last->code() == SDM_ERROR_NO_DRIVER);
    CHECK_THAT(std::string(last->message()), Contains(kMissingDriver));

    CHECK(runtime.device_count().code() == SDM_ERROR_NO_DRIVER);
    CHECK(runtime.device_info(0).code() == SDM_ERROR_NO_DRIVER);
    CHECK(runtime.device_class(0).code() == SDM_ERROR_NO_DRIVER);

    // Archives need no driver; this runtime has none mounted.
    const auto archives = runtime.archives();
    REQUIRE(archives);
    CHECK(archives->empty());
}

TEST_CASE("a runtime without errors has no last error", "[cpp]") {
    const sdm::Runtime runtime = create(offline_options());
    CHECK_FALSE(runtime.last_error());
}

TEST_CASE("mount failures: a missing file is SDM_ERROR_IO, garbage is SDM_ERROR_ARCHIVE_CORRUPT", "[cpp]") {
    sdm::Runtime runtime = create(offline_options());

    const sdm::Status missing = runtime.mount_file(kMissingArchive);
    REQUIRE_FALSE(missing);
    CHECK(missing.code() == SDM_ERROR_IO);
    CHECK_THAT(std::string(missing.error().message()), Contains(kMissingArchive));

    const std::vector<char> garbage(4096, 'x');
    const sdm::Status corrupt = runtime.mount_memory(garbage.data(), garbage.size(), "garbage in memory");
    REQUIRE_FALSE(corrupt);
    CHECK(corrupt.code() == SDM_ERROR_ARCHIVE_CORRUPT);
    CHECK_THAT(std::string(corrupt.error().message()), Contains("garbage in memory"));

    const std::vector<char> short_garbage(16, '\0');
    CHECK(runtime.mount_memory(short_garbage.data(), short_garbage.size()).code() == SDM_ERROR_ARCHIVE_CORRUPT);

    CHECK(runtime.archive_count().value_or(99) == 0);
}

TEST_CASE("the golden archive mounts from a file and from memory, and lists in mount order", "[cpp]") {
    sdm::Runtime runtime = create(offline_options());

    const sdm::Status from_file = runtime.mount_file(SDM_TEST_ARCHIVE);
    if (!from_file) FAIL(from_file.error().describe());
    const std::vector<char> bytes = file_bytes(SDM_TEST_ARCHIVE);
    const sdm::Status from_memory = runtime.mount_memory(bytes.data(), bytes.size(), "golden copy");
    if (!from_memory) FAIL(from_memory.error().describe());

    CHECK(runtime.archive_count().value_or(0) == 2);
    const auto archives = runtime.archives();
    REQUIRE(archives);
    REQUIRE(archives->size() == 2);
    CHECK((*archives)[0].label == SDM_TEST_ARCHIVE);
    CHECK((*archives)[1].label == "golden copy");
    for (const sdm::ArchiveInfo& info : *archives) {
        INFO(info.label);
        check_golden(info);
    }

    const auto past_end = runtime.archive_info(2);
    REQUIRE_FALSE(past_end);
    CHECK(past_end.code() == SDM_ERROR_NOT_FOUND);
}

TEST_CASE("the log callback receives messages and outlives the options it came from", "[cpp]") {
    LogLines log;
    sdm::Runtime runtime;
    {
        sdm::Runtime::Options options = offline_options();
        options.log_level = SDM_LOG_DEBUG;
        options.log = log.sink();
        runtime = create(options);
    }  // the options' copy of the function is gone; the runtime keeps its own

    REQUIRE(runtime.mount_file(SDM_TEST_ARCHIVE));
    CHECK_FALSE(runtime.driver_version());

    REQUIRE(log.size() > 0);
    CHECK((log.any_contains(SDM_TEST_ARCHIVE) || log.any_contains(kMissingDriver)));
    std::lock_guard<std::mutex> lock(log.mutex);
    for (const auto& line : log.lines) {
        INFO(line.second);
        CHECK(line.first >= SDM_LOG_ERROR);
        CHECK(line.first <= SDM_LOG_DEBUG);
        CHECK_FALSE(line.second.empty());
    }
}

TEST_CASE("a log callback that throws does not fail the call that logs", "[cpp]") {
    sdm::Runtime::Options options = offline_options();
    options.log_level = SDM_LOG_DEBUG;
    int calls = 0;
    options.log = [&calls](sdm_log_level, std::string_view) {
        ++calls;
        throw std::runtime_error("a host's logger failed");
    };
    sdm::Runtime runtime = create(options);
    CHECK(runtime.mount_file(SDM_TEST_ARCHIVE));
    CHECK(runtime.archive_count().value_or(0) == 1);
    CHECK(calls > 0);
}

TEST_CASE("a failed create returns the error", "[cpp]") {
    sdm::Runtime::Options options = offline_options();
    options.log_level = static_cast<sdm_log_level>(99);
    options.log = [](sdm_log_level, std::string_view) {};
    const auto runtime = sdm::Runtime::create(options);
    REQUIRE_FALSE(runtime);
    CHECK(runtime.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(runtime.error().message()), Contains("log_level"));
}

TEST_CASE("parse_public_key reads the text of a .pub file and nothing else", "[cpp][signing]") {
    const std::string hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const std::string upper = "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F";
    sdm::PublicKey expected{};
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<uint8_t>(i);
    for (const std::string& text : {"sdm-ed25519-public " + hex, "sdm-ed25519-public " + hex + "\n", "sdm-ed25519-public " + upper + "\r\n"}) {
        INFO(text);
        const auto key = sdm::parse_public_key(text);
        if (!key) FAIL(key.error().describe());
        CHECK(*key == expected);
    }
    for (const std::string& text : {std::string(), hex, "sdm-ed25519-public " + hex.substr(2), "sdm-ed25519-public " + hex + "00",
                                    "sdm-ed25519-public " + hex.substr(0, 62) + "zz", "sdm-ed25519-public " + hex + " # a comment",
                                    "sdm-ed25519-public " + hex + "\nsdm-ed25519-public " + hex}) {
        INFO(text);
        const auto key = sdm::parse_public_key(text);
        CHECK(key.code() == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(std::string(key.error().message()), Contains("'sdm-ed25519-public' and 64 hex digits"));
    }
    const auto secret = sdm::parse_public_key("sdm-ed25519-secret " + hex + hex + "\n");
    CHECK(secret.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(secret.error().message()), Contains("secret key") && Contains("public half"));
}

TEST_CASE("the signature policy: REQUIRE refuses an unsigned archive, WARN and OFF mount it", "[cpp][signing]") {
    sdm::Runtime::Options options = offline_options();
    options.signature_policy = SDM_SIGNATURES_REQUIRE;
    options.trusted_keys = std::vector<sdm::PublicKey>{};  // none, whatever $SDM_TRUSTED_KEYS says
    auto created = sdm::Runtime::create(options);
    if (created.code() == SDM_ERROR_UNSUPPORTED) {  // a libsdm built without libsodium checks no signatures
        CHECK_THAT(std::string(created.error().message()), Contains("libsodium"));
        return;
    }
    if (!created) FAIL(created.error().describe());
    sdm::Runtime runtime = std::move(created).value();

    // The golden archive is not signed.
    const sdm::Status from_file = runtime.mount_file(SDM_TEST_ARCHIVE);
    REQUIRE_FALSE(from_file);
    CHECK(from_file.code() == SDM_ERROR_UNTRUSTED);
    CHECK(std::string(from_file.error().code_name()) == "SDM_ERROR_UNTRUSTED");
    CHECK_THAT(std::string(from_file.error().message()), Contains(SDM_TEST_ARCHIVE) && Contains("is not signed") && Contains("it trusts no key"));
    const std::vector<char> bytes = file_bytes(SDM_TEST_ARCHIVE);
    CHECK(runtime.mount_memory(bytes.data(), bytes.size(), "golden copy").code() == SDM_ERROR_UNTRUSTED);
    CHECK(runtime.archive_count().value_or(99) == 0);

    // The keys given are the ones trusted: the refusal names each by its id (the first 8 bytes of
    // BLAKE2b-256 of "sdm key id 1" and the key, docs/SIGNING.md).
    sdm::PublicKey key{};
    key.fill(1);
    options.trusted_keys = std::vector<sdm::PublicKey>{key};
    const sdm::Status refused = create(options).mount_file(SDM_TEST_ARCHIVE);
    CHECK(refused.code() == SDM_ERROR_UNTRUSTED);
    CHECK_THAT(std::string(refused.error().message()), Contains("it trusts 3bf080b61db0f86b"));

    // WARN mounts it and says why in the log; OFF mounts it as before 1.2.
    LogLines log;
    options.signature_policy = SDM_SIGNATURES_WARN;
    options.log = log.sink();
    sdm::Runtime warning = create(options);
    CHECK(warning.mount_file(SDM_TEST_ARCHIVE));
    CHECK(warning.archive_count().value_or(0) == 1);
    CHECK(log.any_contains("is not signed"));
    options.signature_policy = SDM_SIGNATURES_OFF;
    CHECK(create(options).mount_file(SDM_TEST_ARCHIVE));
}

TEST_CASE("the JIT isolation options reach sdm_runtime_params: an unknown policy and a memory limit below 64 MiB are refused", "[cpp][isolation]") {
    sdm::Runtime::Options options = offline_options();
    options.jit_isolation = SDM_ISOLATION_NEVER;
    options.jit_time_limit_ms = 5000;
    options.jit_memory_limit_bytes = uint64_t{1} << 30;
    CHECK(sdm::Runtime::create(options));
    options.jit_isolation = 9;
    const auto unknown = sdm::Runtime::create(options);
    REQUIRE_FALSE(unknown);
    CHECK_THAT(std::string(unknown.error().message()), Contains("jit_isolation 9"));
    options.jit_isolation = SDM_ISOLATION_ALWAYS;
    options.jit_memory_limit_bytes = 1024;
    const auto small = sdm::Runtime::create(options);
    REQUIRE_FALSE(small);
    CHECK_THAT(std::string(small.error().message()), Contains("below 64 MiB"));
}

TEST_CASE("an unknown signature policy and too many trusted keys are SDM_ERROR_INVALID_ARGUMENT", "[cpp][signing]") {
    sdm::Runtime::Options options = offline_options();
    options.signature_policy = 7;
    const auto unknown = sdm::Runtime::create(options);
    REQUIRE_FALSE(unknown);
    CHECK(unknown.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(unknown.error().message()), Contains("signature_policy 7"));

    // Checked whatever the policy, so also in a libsdm built without libsodium.
    options.signature_policy = SDM_SIGNATURES_OFF;
    options.trusted_keys = std::vector<sdm::PublicKey>(257);
    const auto too_many = sdm::Runtime::create(options);
    REQUIRE_FALSE(too_many);
    CHECK(too_many.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(too_many.error().message()), Contains("trusted_key_count is 257"));
}

TEST_CASE("every sdm_runtime_params member reaches libsdm through RuntimeOptions", "[cpp]") {
    char dir[] = "/tmp/sdm-cpp-options-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.log_level = SDM_LOG_OFF;
    options.cache_dir = std::string(dir) + "/cache";
    options.cache_max_bytes = 1 << 20;
    options.cache_flags = SDM_CACHE_READ_ONLY;
    options.jit_flags = SDM_JIT_NO_DRIVER;
    options.kernel_abi_major = 9;  // the golden archive holds kernel ABI 1.2: refused, naming both
    auto rt = sdm::Runtime::create(options);
    REQUIRE(rt);
    const auto refused = rt->mount_file(SDM_TEST_ARCHIVE);
    CHECK(refused.code() == SDM_ERROR_MISMATCH);
    CHECK_THAT(refused.error().message(), Contains("kernel ABI 1.2") && Contains("9.x"));
    options.kernel_abi_major = 0;
    options.cache_flags = 1u << 7;  // a bit no minor defines
    CHECK(sdm::Runtime::create(options).code() == SDM_ERROR_INVALID_ARGUMENT);
    options.cache_flags = 0;
    options.device_contexts.assign(1025, nullptr);  // one past the limit
    CHECK(sdm::Runtime::create(options).code() == SDM_ERROR_INVALID_ARGUMENT);
    options.device_contexts = {nullptr, nullptr};
    options.flags |= SDM_RUNTIME_CURRENT_CONTEXT;
    CHECK(sdm::Runtime::create(options).code() == SDM_OK);  // all NULL: no context chosen, so no conflict
    std::filesystem::remove_all(dir);
}

TEST_CASE("moving a Runtime leaves the source empty and safe to use and destroy", "[cpp]") {
    LogLines log;
    sdm::Runtime::Options options = offline_options();
    options.log_level = SDM_LOG_DEBUG;
    options.log = log.sink();
    sdm::Runtime first = create(options);
    REQUIRE(first.mount_file(SDM_TEST_ARCHIVE));
    sdm_runtime* const handle = first.get();

    sdm::Runtime second = std::move(first);
    CHECK_FALSE(first);  // NOLINT(bugprone-use-after-move): the point of the test
    CHECK(first.get() == nullptr);
    CHECK(second.get() == handle);
    CHECK(first.archive_count().code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(first.mount_file(SDM_TEST_ARCHIVE).code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_FALSE(first.last_error());
    CHECK(second.archive_count().value_or(0) == 1);

    // The log function moved with the runtime.
    const size_t before = log.size();
    CHECK_FALSE(second.driver_version());
    CHECK(log.size() > before);

    sdm::Runtime third;
    third = std::move(second);
    CHECK_FALSE(second);  // NOLINT(bugprone-use-after-move)
    CHECK(third.get() == handle);
    CHECK(third.archive_count().value_or(0) == 1);

    third = sdm::Runtime();  // destroys the runtime
    CHECK_FALSE(third);
}

TEST_CASE("Error: copies share the C error; a default Error is no error", "[cpp]") {
    sdm::Runtime runtime = create(offline_options());
    const sdm::Status missing = runtime.mount_file(kMissingArchive);
    REQUIRE_FALSE(missing);
    const sdm::Error copy = missing.error();
    CHECK(copy.code() == SDM_ERROR_IO);
    CHECK(copy.c_error() != nullptr);
    CHECK(copy.c_error() == missing.error().c_error());
    CHECK(copy.message() == missing.error().message());  // the same string, not a copy
    CHECK(copy.native() == 0);
    CHECK(std::string(copy.log()).empty());
    CHECK_THAT(copy.describe(), StartsWith("SDM_ERROR_IO: "));

    const sdm::Error none;
    CHECK(none.code() == SDM_OK);
    CHECK(std::string(none.message()).empty());
    CHECK(sdm::Status().ok());

    const sdm::Error made_here(SDM_ERROR_MISMATCH, "made here");
    CHECK(made_here.code() == SDM_ERROR_MISMATCH);
    CHECK(std::string(made_here.message()) == "made here");
    CHECK(made_here.c_error() == nullptr);

    // A failure whose details sdm could not allocate still names its status.
    CHECK(std::string(sdm::Error::adopt(SDM_ERROR_OUT_OF_MEMORY, nullptr).message()) == "SDM_ERROR_OUT_OF_MEMORY");
}

TEST_CASE("value_or_throw and throw_if_error throw sdm::Exception with the status", "[cpp]") {
    sdm::Runtime runtime = create(offline_options());
    CHECK_NOTHROW(sdm::throw_if_error(runtime.mount_file(SDM_TEST_ARCHIVE)));
    CHECK(sdm::value_or_throw(runtime.archive_count()) == 1);
    CHECK_THROWS_AS(sdm::throw_if_error(runtime.mount_file(kMissingArchive)), sdm::Exception);
    try {
        sdm::value_or_throw(runtime.driver_version());
        FAIL("no exception");
    } catch (const sdm::Exception& e) {
        CHECK(e.code() == SDM_ERROR_NO_DRIVER);
        CHECK_THAT(std::string(e.what()), StartsWith("SDM_ERROR_NO_DRIVER: ") && Contains(kMissingDriver));
        CHECK(e.error().c_error() != nullptr);
    }
    sdm::Runtime moved = sdm::value_or_throw(sdm::Runtime::create(offline_options()));
    CHECK(moved);
}

TEST_CASE("kernels, plans and launches through the wrapper (the fake driver)", "[cpp][kernels]") {
    char dir[] = "/tmp/sdm-cpp-kernels-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    setenv("SDM_CACHE_DIR", dir, 1);
    fake({kH200, kRtx4090});
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.log_level = SDM_LOG_OFF;
    options.cuda_driver = SDM_FAKE_CUDA_PATH;
    auto rt = sdm::Runtime::create(options);
    REQUIRE(rt);
    // The 1.1 field `untested`: the rtx class only.
    auto h200 = rt->device_info(0), rtx = rt->device_info(1);
    REQUIRE((h200 && rtx));
    CHECK_FALSE(h200->untested);
    CHECK(rtx->untested);
    REQUIRE(rt->mount_file(SDM_TEST_ARCHIVE));
    auto k = rt->kernel_checked(0, "scale", "ptr, f32, i32");
    REQUIRE(k);
    auto info = k->info();
    REQUIRE(info);
    CHECK(info->module == "kernels");
    CHECK(info->signature == "ptr,f32,i32");
    CHECK(info->image_sm == 90);
    auto function = k->function();
    REQUIRE(function);
    CHECK(*function != nullptr);
    auto plan = k->plan({1 << 20});
    REQUIRE(plan);
    CHECK(plan->grid == 1056);
    CHECK((plan->flags & SDM_PLAN_PDL) != 0);
    void* y = nullptr;
    float factor = 2.f;
    int n = 1 << 20;
    CHECK(k->launch(*plan, nullptr, {&y, &factor, &n}));
    const auto wrong_args = k->launch(*plan, nullptr, {&y});
    CHECK(wrong_args.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(wrong_args.error().message(), Contains("takes 3 argument(s)"));
    const int64_t problem[] = {1 << 20};  // the hot calls take arrays and vectors alike, without a copy
    CHECK(k->plan(problem));
    const std::vector<void*> args{&y, &factor, &n};
    CHECK(k->launch(*plan, nullptr, args));
    const auto mismatch = rt->kernel_checked(0, "scale", "ptr,ptr,i32");
    REQUIRE_FALSE(mismatch);
    CHECK(mismatch.code() == SDM_ERROR_MISMATCH);
    // A Kernel owns its reference: moved, the source is empty; reset drops it once.
    static_assert(!std::is_copy_constructible<sdm::Kernel>::value, "a Kernel owns a reference: move-only");
    sdm::Kernel moved = std::move(*k);
    CHECK_FALSE(*k);
    CHECK(k->function().code() == SDM_ERROR_INVALID_ARGUMENT);
    REQUIRE(moved);
    sdm_kernel* const raw = moved.handle();
    moved.reset();
    CHECK_FALSE(moved);
    CHECK(sdm_kernel_release(rt->get(), raw, nullptr) == SDM_ERROR_INVALID_ARGUMENT);  // released once already, by reset
    // The rest of sdm.h: preload, the cache counters.
    const char* names[] = {"scale"};
    CHECK(rt->preload(0, names));
    CHECK(rt->preload(0));
    // A background warm-up (ABI 1.5): its done function once, its wait's outcome, and an unknown
    // name as the warm-up's outcome, not the call's.
    {
        std::atomic<int> done_calls{0};
        std::atomic<sdm_status> done_status{-1};
        auto warmup = rt->preload_async(0, names, 3, [&](sdm_status s) {
            done_status = s;
            ++done_calls;
        });
        REQUIRE(warmup);
        CHECK(warmup->wait(60000));
        auto progress = warmup->progress();
        REQUIRE(progress);
        CHECK(progress->done == progress->total);
        CHECK(warmup->cancel());  // finished: nothing changes
        sdm::Warmup moved = std::move(*warmup);
        CHECK(warmup->wait(0).code() == SDM_ERROR_INVALID_ARGUMENT);  // moved from: empty
        moved = sdm::Warmup();  // destroyed: waits for the done function
        CHECK(done_calls == 1);
        CHECK(done_status == SDM_OK);
        const char* unknown[] = {"no_such_kernel"};
        auto failing = rt->preload_async(0, unknown);
        REQUIRE(failing);
        CHECK(failing->wait(60000).code() == SDM_ERROR_NOT_FOUND);
    }
    auto stats = rt->cache_stats();
    REQUIRE(stats);
    CHECK(stats->struct_size == sizeof(sdm_cache_stats));
    auto polled = rt->poll_archives();
    REQUIRE(polled);
    CHECK(*polled == 0);
    CHECK(rt->load_plugin(std::string(dir) + "/none.so").code() == SDM_ERROR_IO);
    CHECK(sdm::Kernel().function().code() == SDM_ERROR_INVALID_ARGUMENT);
    unsetenv("SDM_CACHE_DIR");
    std::filesystem::remove_all(dir);
}

TEST_CASE("a user's kernels through the wrapper: 3-D launches, globals, C++ names, the listing (ABI 1.3)", "[cpp][kernels]") {
    fake({kH200});
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.log_level = SDM_LOG_OFF;
    options.cuda_driver = SDM_FAKE_CUDA_PATH;
    options.cache_flags = SDM_CACHE_DISABLED;
    auto rt = sdm::Runtime::create(options);
    REQUIRE(rt);
    REQUIRE(rt->mount_file(SDM_TEST_USER_ARCHIVE));
    auto matmul = rt->kernel_checked(0, "matmul_tiled", "ptr,ptr,ptr,i32");  // imported as b64,b64,b64,b32: agrees
    REQUIRE(matmul);
    void* a = nullptr;
    int n = 64;
    CHECK(matmul->launch(sdm::Dim3{4, 4}, sdm::Dim3{16, 16}, nullptr, {&a, &a, &a, &n}));
    const auto too_big = matmul->launch(sdm::Dim3{4, 4}, sdm::Dim3{32, 64}, nullptr, {&a, &a, &a, &n});
    CHECK(too_big.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(too_big.error().message(), Contains("block 32x64x1 of 2048 threads (at most 1024)"));
    auto grid_sum = rt->kernel(0, "grid_sum");
    REQUIRE(grid_sum);
    void* partial = nullptr;
    const auto coop = grid_sum->launch(sdm::make_plan({2000}, {256}, 0, SDM_PLAN_COOPERATIVE), nullptr, {&partial, &partial});
    CHECK_THAT(coop.error().message(), Contains("cannot all be resident"));
    CHECK(grid_sum->launch(sdm::make_plan({1000}, {256}, 0, SDM_PLAN_COOPERATIVE), nullptr, {&partial, &partial}));
    auto table = rt->kernel(0, "scale_by_table");
    REQUIRE(table);
    const auto g = table->global("coefficients");
    REQUIRE(g);
    CHECK(g->bytes == 64);
    const float in[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    float out[16] = {};
    CHECK(table->global_write("coefficients", in, sizeof in));
    CHECK(table->global_read("coefficients", out, sizeof out));
    CHECK(std::equal(std::begin(in), std::end(in), std::begin(out)));
    CHECK(table->global("nothing").code() == SDM_ERROR_NOT_FOUND);
    const auto past = table->global_write("coefficients", in, sizeof in, 8);
    CHECK(past.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(past.error().message(), Contains("a copy of 64 bytes at offset 8 runs past it"));  // the message, not just the status
    const auto plan = table->plan_for_elements(5000);
    REQUIRE(plan);
    CHECK(plan->grid * plan->block >= 5000u);
    auto fill = rt->kernel(0, "fill<float, 256>");
    REQUIRE(fill);
    CHECK(fill->info()->name == "_ZN8sdm_test4fillIfLi256EEEvPT_S1_");
    CHECK(rt->kernel(0, "fill").code() == SDM_ERROR_AMBIGUOUS);
    const auto listing = rt->kernels();
    REQUIRE(listing);
    REQUIRE(listing->size() == 6);
    CHECK(listing->front().demangled == "void sdm_test::fill<float, 256>(float*, float)");
    CHECK(listing->front().targets == "sm_90");
    CHECK(listing->back().name == "scale_by_table");
    CHECK(listing->back().signature == "b64,b64,b32");
    CHECK(rt->kernels(7).code() == SDM_ERROR_NOT_FOUND);
}

TEST_CASE("kernel attributes, settings and occupancy through the wrapper (ABI 1.4)", "[cpp][kernels][attributes]") {
    fake({kH200});
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    options.log_level = SDM_LOG_OFF;
    options.cuda_driver = SDM_FAKE_CUDA_PATH;
    options.cache_flags = SDM_CACHE_DISABLED;
    auto rt = sdm::Runtime::create(options);
    REQUIRE(rt);
    REQUIRE(rt->mount_file(SDM_TEST_USER_ARCHIVE));
    auto table = rt->kernel(0, "scale_by_table");
    REQUIRE(table);
    auto a = table->attributes();
    REQUIRE(a);
    CHECK(a->struct_size == sizeof(sdm_kernel_attributes));
    CHECK((a->num_regs == 32 && a->const_size_bytes == 136 && a->local_size_bytes == 24 && a->binary_version == 90));
    CHECK(a->flags == SDM_KERNEL_ATTRIBUTES_CLUSTER);
    CHECK(a->required_cluster_depth == 4);
    CHECK(table->set(SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 80000));
    CHECK(table->set(SDM_KERNEL_SETTING_PREFERRED_CARVEOUT, 75));
    a = table->attributes();
    REQUIRE(a);
    CHECK((a->max_dynamic_shared_size_bytes == 80000 && a->preferred_shared_memory_carveout == 75));
    const auto refused = table->set(SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES, 300000);
    CHECK(refused.code() == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(refused.error().message(), Contains("300000 B is outside 0 .. 232448 B"));
    CHECK(table->max_active_blocks(256).value_or(-1) == 8);
    CHECK(table->max_active_blocks(0).code() == SDM_ERROR_INVALID_ARGUMENT);
    const auto suggested = table->max_potential_block_size();
    REQUIRE(suggested);
    CHECK((suggested->block_threads == 1024 && suggested->min_grid_blocks == 264));
    CHECK(table->max_potential_block_size(0, 128)->block_threads == 128);
}

TEST_CASE("the deterministic write refuses a batch past 2^31 - 1 positions before it launches anything", "[cpp][kernels]") {
    if (!SDM_TEST_EMBEDDED) return;  // built without nvcc: libsdm embeds no SDM kernels
    char dir[] = "/tmp/sdm-cpp-grouped-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    setenv("SDM_CACHE_DIR", dir, 1);
    fake({kH200});
    sdm::RuntimeOptions options;
    options.log_level = SDM_LOG_OFF;
    options.cuda_driver = SDM_FAKE_CUDA_PATH;
    auto rt = sdm::Runtime::create(options);
    REQUIRE(rt);
    auto grouped = sdm::GroupedWrite::get(*rt, 0, "f32", "i32");
    REQUIRE(grouped);
    const int64_t launches = fake_calls("cuLaunchKernelEx");
    for (const auto& [B, K] : {std::pair{65536, 65536}, std::pair{-1, 8}}) {
        const sdm::Status s = grouped->launch(nullptr, 0, 1, 0, 0, 0, 1.f, B, K, 256, 0, 0);
        CHECK(s.code() == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(s.error().message(), Contains("B = " + std::to_string(B)) && Contains("split the batch"));
    }
    CHECK(fake_calls("cuLaunchKernelEx") == launches);
    std::filesystem::remove_all(dir);
}
