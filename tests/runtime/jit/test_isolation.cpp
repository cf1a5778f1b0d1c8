// Where links run (runtime/jit/jit_isolation.hpp), through the C ABI and the fake driver: a compiler
// that crashes, aborts, hangs or eats memory in the JIT helper is SDM_ERROR_JIT naming the signal
// or the limit, and the host goes on serving; a link in the process is bounded by its watchdog;
// the policy decides which links are isolated; the real nvJitLink on inputs that crash it (a
// mutated LTO-IR) or never end (a chain of dependent FMAs over 2,000 live registers). The
// misbehaving compiler is tests/fake_nvjitlink, loaded through SDM_NVJITLINK.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "archive/archive.hpp"
#include "fake_runtime.hpp"
#include "forge/forge.hpp"
#include "sdm/sdm.h"
#include "archive/signing.hpp"
#include "support.hpp"
#include "archive/writer.hpp"

using namespace sdm;
using namespace sdm::test;

namespace {

struct Host {
    std::vector<std::string> log;
    RuntimePtr rt;
};

// A runtime on the fake H200 with the isolation policy and limits given (0: the defaults).
std::unique_ptr<Host> host(const std::string& cache, uint32_t isolation, uint32_t time_limit_ms = 0, uint64_t memory_limit = 0,
                           uint32_t policy = SDM_SIGNATURES_DEFAULT, const std::vector<crypto::PublicKey>& trusted = {}, uint32_t jit_flags = 0) {
    auto h = std::make_unique<Host>();
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    p.cache_dir = cache.c_str();
    p.log_level = SDM_LOG_DEBUG;
    p.log_fn = [](void* user, sdm_log_level, const char* message, size_t) { static_cast<std::vector<std::string>*>(user)->push_back(message); };
    p.log_user_data = &h->log;
    p.jit_isolation = isolation;
    p.jit_flags = jit_flags;
    p.jit_time_limit_ms = time_limit_ms;
    p.jit_memory_limit_bytes = memory_limit;
    p.signature_policy = policy;
    std::vector<uint8_t> keys;
    for (const auto& k : trusted) keys.insert(keys.end(), k.begin(), k.end());
    p.trusted_keys = keys.empty() ? nullptr : keys.data();
    p.trusted_key_count = static_cast<uint32_t>(trusted.size());
    sdm_runtime* r = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&p, &r, &e) != SDM_OK) FAIL(sdm_error_message(e));
    h->rt.reset(r);
    return h;
}

// The test kernels' compute_90 PTX with `marker` in a comment (the fake nvJitLink's instruction).
ByteVector ptx_with(const std::string& marker) {
    ByteVector ptx = data_file("kernels.compute_90.ptx");
    const std::string line = "// " + marker + "\n";
    ptx.insert(ptx.end(), reinterpret_cast<const std::byte*>(line.data()), reinterpret_cast<const std::byte*>(line.data()) + line.size());
    return ptx;
}

ByteVector archive_of(archive::Kind kind, uint16_t sm, ByteVector image) {
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"kernels", kind, sm, archive::Variant::base, std::move(image)}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels.push_back({"scale", "kernels", {archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

struct Fetch {
    sdm_status status;
    std::string message;
};
Fetch fetch(sdm_runtime* rt, const ByteVector& archive, const char* label) {
    mount(rt, archive, label);
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    Fetch f{sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e), sdm_error_message(e)};
    sdm_error_destroy(e);
    return f;
}

// The pids the fake nvJitLink linked in, from its count file.
std::vector<long> link_pids(const std::string& file) {
    std::vector<long> out;
    std::ifstream in(file);
    std::string word;
    for (long pid; in >> word >> pid;) out.push_back(pid);
    return out;
}

}  // namespace

TEST_CASE("a compiler that crashes, aborts, hangs or eats memory in the JIT helper is SDM_ERROR_JIT naming how; the host lives and serves",
          "[isolation][hostile]") {
    TempDir dir;
    fake({kH200});
    EnvGuard jit("SDM_NVJITLINK", SDM_TEST_FAKE_NVJITLINK);
    EnvGuard cubin("SDM_FAKE_NVJITLINK_CUBIN", data_path("kernels.sm_90.cubin"));
    EnvGuard count("SDM_FAKE_NVJITLINK_COUNT", dir.path + "/links");
    auto h = host(dir.path + "/cache", SDM_ISOLATION_DEFAULT, 1500, uint64_t{512} << 20);
    struct Case {
        const char* marker;
        const char* expect;
    };
    // In a sanitizer build the helper's own sanitizer reports the fault and ends the helper (exit
    // status 1, or SIGABRT under abort_on_error) before the kernel's SIGSEGV would: the report is
    // what the message must carry then.
    const char* crash = kSanitized ? "in the JIT helper" : "was killed by signal 11 (SIGSEGV); the host is unharmed";
    std::vector<Case> cases{{"SDM_FAKE_JIT_CRASH", crash},
                            {"SDM_FAKE_JIT_ABORT", "was killed by signal 6 (SIGABRT); the host is unharmed"},
                            {"SDM_FAKE_JIT_SPIN", "ran past its time limit of 1.5 s and was killed"},
                            {"SDM_FAKE_JIT_SLEEP", "ran past its time limit of 1.5 s and was killed"},
                            {"SDM_FAKE_JIT_FAIL", "ptxas fatal   : the fake's SDM_FAKE_JIT_FAIL marker"}};
    if (!kSanitized) cases.push_back({"SDM_FAKE_JIT_HOG", "out of memory after"});  // under the 512 MiB limit
    for (const auto& c : cases) {
        INFO(c.marker);
        const Fetch f = fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, ptx_with(c.marker)), (std::string(c.marker) + ".sdma").c_str());
        CHECK(f.status == SDM_ERROR_JIT);
        CHECK_THAT(f.message, Catch::Contains("nvJitLink") && Catch::Contains(c.expect));
        CHECK(fake_image_loads() == 0);  // nothing reached the driver
    }
    // The same host links and serves the next module, and every link ran in another process.
    const Fetch good = fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, ptx_with("nothing the fake acts on")), "good.sdma");
    CHECK(good.status == SDM_OK);
    CHECK(fake_image_loads() == 1);
    const auto pids = link_pids(dir.path + "/links");
    CHECK(pids.size() == cases.size() + 1);
    for (const long pid : pids) CHECK(pid != static_cast<long>(::getpid()));
    // The crashes left no core file in the working directory and nothing in the cache.
    CHECK(stats_of(h->rt.get()).builds == cases.size() + 1);
}

TEST_CASE("a link in this process (never) is bounded by its watchdog: the fetch returns at the limit, the next key is served", "[isolation]") {
    TempDir dir;
    fake({kH200});
    EnvGuard jit("SDM_NVJITLINK", SDM_TEST_FAKE_NVJITLINK);
    EnvGuard cubin("SDM_FAKE_NVJITLINK_CUBIN", data_path("kernels.sm_90.cubin"));
    EnvGuard count("SDM_FAKE_NVJITLINK_COUNT", dir.path + "/links");
    // (The driver's JIT forbidden: it would take the PTX nvJitLink gave up on. The fake sleeps, not
    // spins: the abandoned link stays asleep until the test process ends.)
    auto h = host(dir.path + "/cache", SDM_ISOLATION_NEVER, 500, 0, SDM_SIGNATURES_DEFAULT, {}, SDM_JIT_NO_DRIVER);
    const Fetch hung = fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, ptx_with("SDM_FAKE_JIT_SLEEP")), "hung.sdma");
    CHECK(hung.status == SDM_ERROR_JIT);
    CHECK_THAT(hung.message, Catch::Contains("ran past its time limit of 0.5 s") && Catch::Contains("cannot be stopped") &&
                                 Catch::Contains("SDM_JIT_ISOLATION=always"));
    const Fetch good = fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, ptx_with("in the process")), "good.sdma");
    CHECK(good.status == SDM_OK);
    const auto pids = link_pids(dir.path + "/links");
    REQUIRE(pids.size() == 2);
    for (const long pid : pids) CHECK(pid == static_cast<long>(::getpid()));
}

TEST_CASE("the isolation policy: auto isolates LTO-IR and PTX no trusted key signed, always every link, never none", "[isolation][policy]") {
    TempDir dir;
    fake({kH200});
    EnvGuard jit("SDM_NVJITLINK", SDM_TEST_FAKE_NVJITLINK);
    EnvGuard cubin("SDM_FAKE_NVJITLINK_CUBIN", data_path("kernels.sm_90.cubin"));
    const std::string links = dir.path + "/links";
    EnvGuard count("SDM_FAKE_NVJITLINK_COUNT", links);
    const long self = static_cast<long>(::getpid());
    int n = 0;
    // Each fetch is a new archive (so a new cache key): true when its link ran in the helper.
    const auto isolated = [&](Host& h, archive::Kind kind, const ByteVector& archive) {
        const Fetch f = fetch(h.rt.get(), archive, ("a" + std::to_string(n++) + ".sdma").c_str());
        INFO(f.message);
        REQUIRE(f.status == SDM_OK);
        return link_pids(links).back() != self;
        (void)kind;
    };
    const auto ptx = [&] { return archive_of(archive::Kind::ptx, 90, ptx_with("ptx " + std::to_string(n))); };
    const auto lto = [&] {
        ByteVector b = data_file("kernels.lto_90.ltoir");
        b.push_back(std::byte{static_cast<uint8_t>(n)});  // another key each time (the fake ignores the bytes)
        return archive_of(archive::Kind::ltoir, 90, b);
    };
    auto automatic = host(dir.path + "/cache", SDM_ISOLATION_AUTO);
    CHECK(isolated(*automatic, archive::Kind::ptx, ptx()));
    CHECK(isolated(*automatic, archive::Kind::ltoir, lto()));
    auto always = host(dir.path + "/cache", SDM_ISOLATION_ALWAYS);
    CHECK(isolated(*always, archive::Kind::ptx, ptx()));
    auto never = host(dir.path + "/cache", SDM_ISOLATION_NEVER);
    CHECK_FALSE(isolated(*never, archive::Kind::ptx, ptx()));
    CHECK_FALSE(isolated(*never, archive::Kind::ltoir, lto()));
    if (crypto::available()) {
        // PTX whose signature a trusted key verified links in the process under auto; LTO-IR never does.
        const crypto::KeyPair key = crypto::generate_key_pair().value();
        const auto signed_archive = [&](const ByteVector& a) { return archive::sign_archive(a, "signed.sdma", key.secret_key).value(); };
        auto trusting = host(dir.path + "/cache", SDM_ISOLATION_AUTO, 0, 0, SDM_SIGNATURES_REQUIRE, {key.public_key});
        CHECK_FALSE(isolated(*trusting, archive::Kind::ptx, signed_archive(ptx())));
        CHECK(isolated(*trusting, archive::Kind::ltoir, signed_archive(lto())));
        CHECK(count_containing(trusting->log, "isolated: LTO-IR, whose IR sdm cannot check") == 1);
    }
    CHECK(count_containing(automatic->log, "isolated: PTX from an archive no trusted key signed") == 1);
}

TEST_CASE("the JIT helper's settings: a missing helper names the fix; the environment's policy and limits, and what does not parse", "[isolation][policy]") {
    TempDir dir;
    fake({kH200});
    {
        EnvGuard helper("SDM_JIT_HELPER", dir.path + "/no-such-helper");
        auto h = host(dir.path + "/cache", SDM_ISOLATION_ALWAYS);
        const Fetch f = fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, ptx_with("x")), "k.sdma");
        CHECK(f.status == SDM_ERROR_JIT);
        CHECK_THAT(f.message, Catch::Contains("SDM_JIT_HELPER=" + dir.path + "/no-such-helper does not exist; point it at sdm-jit-helper or unset it"));
    }
    {
        EnvGuard policy("SDM_JIT_ISOLATION", "sometimes");
        EnvGuard time("SDM_JIT_TIME_LIMIT", "soon");
        EnvGuard memory("SDM_JIT_MEMORY_LIMIT", "12");
        auto h = host(dir.path + "/cache", SDM_ISOLATION_DEFAULT);
        CHECK(count_containing(h->log, "SDM_JIT_ISOLATION='sometimes' is not auto, always or never; every JIT runs isolated (always)") == 1);
        CHECK(count_containing(h->log, "SDM_JIT_TIME_LIMIT='soon' is not a number of seconds") == 1);
        CHECK(count_containing(h->log, "SDM_JIT_MEMORY_LIMIT='12' is not a size of at least 64M") == 1);
    }
    // The host's parameters are checked: an unknown policy, a memory limit no compiler fits in.
    for (const auto& [isolation, memory, expect] : std::vector<std::tuple<uint32_t, uint64_t, std::string>>{
             {7, 0, "jit_isolation 7 is not SDM_ISOLATION_DEFAULT, _AUTO, _ALWAYS or _NEVER"},
             {SDM_ISOLATION_AUTO, 1 << 20, "jit_memory_limit_bytes 1048576 is below 64 MiB"}}) {
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.jit_isolation = isolation;
        p.jit_memory_limit_bytes = memory;
        sdm_runtime* r = nullptr;
        sdm_error* e = nullptr;
        CHECK(sdm_runtime_create(&p, &r, &e) == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(sdm_error_message(e), Catch::Contains(expect));
        sdm_error_destroy(e);
    }
}

TEST_CASE("a cyclic params.next chain is refused, not walked until memory runs out", "[isolation][hostile]") {
    sdm_chain a{}, b{};
    a.type = 7;
    a.next = &b;
    b.type = 8;
    b.next = &a;
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.next = &a;
    sdm_runtime* r = nullptr;
    sdm_error* e = nullptr;
    CHECK(sdm_runtime_create(&p, &r, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("params.next holds more than 64 extensions"));
    sdm_error_destroy(e);
}

TEST_CASE("the real nvJitLink on a mutated LTO-IR (it crashes on these) and on PTX it would take minutes over: errors, the host alive", "[isolation][hostile][nvjitlink]") {
    TempDir dir;
    fake({kH200});
    auto h = host(dir.path + "/cache", SDM_ISOLATION_AUTO, 3000);
    // Bytes inside the IR, which no check can read: nvJitLink 13.0 dies of SIGSEGV or SIGABRT on
    // each of these one-byte changes (found by tests like fuzz_isolated_jit).
    const ByteVector good = data_file("kernels.lto_90.ltoir");
    int signalled = 0;
    bool linked_once = false;
    for (const auto& [at, value] : std::vector<std::pair<size_t, uint8_t>>{{2203, 0x00}, {2189, 0x00}, {2154, 0xff}, {2245, 0xff}}) {
        ByteVector mutated = good;
        mutated[at] = std::byte{value};
        const Fetch f = fetch(h->rt.get(), archive_of(archive::Kind::ltoir, 90, mutated), ("m" + std::to_string(at) + ".sdma").c_str());
        INFO(f.message);
        if (f.message.find("nvJitLink was not found") != std::string::npos) {
            WARN("nvJitLink is not available here");
            return;
        }
        CHECK((f.status == SDM_ERROR_JIT || f.status == SDM_OK));
        linked_once |= f.status == SDM_OK;
        // (In a sanitizer build the helper's sanitizer reports the fault and ends it with a status.)
        signalled += f.message.find("was killed by signal") != std::string::npos ||
                     (kSanitized && f.message.find("in the JIT helper") != std::string::npos && f.message.find("exited with status") != std::string::npos);
    }
    CHECK(signalled > 0);
    (void)linked_once;
    // A chain of 40,000 dependent FMAs over 2,000 live registers: 24 KB of archive that nvJitLink
    // takes minutes and hundreds of MB over. Killed at the limit, a clear error.
    const std::string ptx = forge::fma_chain_ptx();
    const ByteVector chain(reinterpret_cast<const std::byte*>(ptx.data()), reinterpret_cast<const std::byte*>(ptx.data()) + ptx.size());
    const ByteVector archive = archive_of(archive::Kind::ptx, 90, chain);
    CHECK(archive.size() < 64 * 1024);
    const Fetch f = fetch(h->rt.get(), archive, "chain.sdma");
    CHECK(f.status == SDM_ERROR_JIT);
    CHECK_THAT(f.message, Catch::Contains("ran past its time limit of 3.0 s and was killed"));
    // And the host serves on.
    CHECK(fetch(h->rt.get(), archive_of(archive::Kind::ptx, 90, data_file("kernels.compute_90.ptx")), "good.sdma").status == SDM_OK);
}
