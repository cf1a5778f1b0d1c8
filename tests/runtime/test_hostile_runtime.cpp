// Hostile inputs at run time, through the C ABI and the fake driver: paths that are not regular
// files (in SDM_ARCHIVE_PATH, SDM_PLUGIN_PATH and the API), images whose headers point outside
// them (from the archive and from a planted cache entry), cache levels others may write, a
// signature check that must not hold a reference, cluster shapes that overflow, NULL arguments.
// Archives the writer would refuse are built by tests/forge, which recomputes every checksum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/jit/cache.hpp"
#include "common/crypto.hpp"
#include "common/digest.hpp"
#include "archive/image.hpp"
#include "fake_runtime.hpp"
#include "forge/forge.hpp"
#include "common/hash.hpp"
#include "archive/archive.hpp"
#include "sdm/sdm.h"
#include "archive/signing.hpp"
#include "support.hpp"
#include "xxh3_preimage.hpp"

namespace fs = std::filesystem;
using namespace sdm;
using namespace sdm::test;

namespace {

forge::Bytes fdata(const std::string& name) {
    const auto b = test::data_file(name);
    return forge::Bytes(reinterpret_cast<const uint8_t*>(b.data()), reinterpret_cast<const uint8_t*>(b.data()) + b.size());
}

// An archive holding `cubin` as module "kernels", sm_90 (stored or zstd), and a manifest listing "scale".
forge::Bytes archive_with(const forge::Bytes& cubin, uint8_t codec) {
    forge::Archive a;
    a.kernel_abi_major = 1;
    forge::Record r{"kernels", forge::kind::cubin, codec, 90, 0, 0, forge::kNoRef, cubin, {}, {}, {}, {}};
    a.records.push_back(r);
    const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")}));
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    return forge::write(a);
}

constexpr uint32_t kSourceNvJitLink = 3;  // sdm_kernel_info::source: built by nvJitLink, not read from the cache (2)

// The key of the one entry a cache directory holds (its fan-out folder and file name are its hex).
Hash128 only_entry_key(const std::string& cache_dir) {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(cache_dir))
        if (e.is_regular_file() && e.path().extension() == ".sdmc") found.push_back(e.path().parent_path().filename().string() + e.path().stem().string());
    REQUIRE(found.size() == 1);
    REQUIRE(found[0].size() == 32);
    return {std::stoull(found[0].substr(0, 16), nullptr, 16), std::stoull(found[0].substr(16), nullptr, 16)};
}

// The 64-byte image the real driver (libcuda 580.159.04) crashes on: a cubin's ELF header alone,
// its program and section header tables 512 MiB past its end.
forge::Bytes hostile_header() {
    const forge::Bytes cubin = fdata("kernels.sm_90.cubin");
    forge::Bytes h(cubin.begin(), cubin.begin() + 64);
    const uint64_t far = uint64_t{512} << 20;
    for (int i = 0; i < 8; ++i) h[32 + static_cast<size_t>(i)] = h[40 + static_cast<size_t>(i)] = static_cast<uint8_t>(far >> (8 * i));
    return h;
}

std::string status_and_message(sdm_runtime* rt, const char* kernel, sdm_status* status) {
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    *status = sdm_kernel_get(rt, 0, kernel, nullptr, &k, &e);
    std::string message = sdm_error_message(e);
    sdm_error_destroy(e);
    return message;
}

// "scale" of the golden archive on a fake H200, and its plan for N = 2^20.
struct ScaleKernel : FakeRuntime {
    sdm_kernel* kernel{nullptr};
    sdm_plan plan{};
    ScaleKernel() {
        REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
        REQUIRE(sdm_kernel_get(rt.get(), 0, "scale", nullptr, &kernel, nullptr) == SDM_OK);
        int64_t n = 1 << 20;
        plan.struct_size = sizeof plan;
        REQUIRE(sdm_plan_select(kernel, &n, 1, &plan, nullptr) == SDM_OK);
    }
};

void mount_bytes(sdm_runtime* rt, const forge::Bytes& b, const char* label) {
    sdm_error* e = nullptr;
    if (sdm_archive_mount_memory(rt, b.data(), b.size(), label, &e) != SDM_OK) FAIL(sdm_error_message(e));
}

}  // namespace

TEST_CASE("SDM_ARCHIVE_PATH: a FIFO, /dev/zero, a directory and a missing file are skipped and logged; creation neither fails nor blocks", "[hostile][files]") {
    TempDir dir;
    fake({kH200});
    const std::string fifo = dir.path + "/fifo.sdma";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_directory(dir.path + "/dir.sdma");
    const std::string good = dir.path + "/good.sdma";
    forge::write_file(good, archive_with(fdata("kernels.sm_90.cubin"), forge::codec::zstd));
    EnvGuard path("SDM_ARCHIVE_PATH", fifo + ":/dev/zero:" + dir.path + "/dir.sdma:" + dir.path + "/missing.sdma:" + good);
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
    uint32_t count = 0;
    REQUIRE(sdm_archive_count(rt.get(), &count, nullptr) == SDM_OK);
    CHECK(count == 1);
    const auto logged = [&](const std::string& text) {
        return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find("skipped archive") != std::string::npos && l.find(text) != std::string::npos; });
    };
    CHECK(logged(fifo + " is a FIFO (named pipe), not a regular file"));
    CHECK(logged("/dev/zero is a character device, not a regular file"));
    CHECK(logged(dir.path + "/dir.sdma is a directory, not a regular file"));
    CHECK(logged("missing.sdma: No such file or directory"));
    CHECK(info_of(rt.get(), 0, "scale").image_sm == 90);
}

TEST_CASE("the API refuses archives and plugins that are not regular files, without blocking", "[hostile][files]") {
    TempDir dir;
    fake({kH200});
    const std::string fifo = dir.path + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
             {fifo, "is a FIFO (named pipe)"}, {"/dev/zero", "is a character device"}, {dir.path, "is a directory"}}) {
        INFO(path);
        sdm_error* e = nullptr;
        CHECK(sdm_archive_mount_file(rt.get(), path.c_str(), &e) == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(sdm_error_message(e), Catch::Contains(path + " " + what));
        sdm_error_destroy(e);
        CHECK(sdm_plugin_load(rt.get(), path.c_str(), &e) != SDM_OK);
        CHECK_THAT(sdm_error_message(e), Catch::Contains(path + " " + what) && Catch::Contains("sdm loads only regular files"));
        sdm_error_destroy(e);
    }
    // SDM_PLUGIN_PATH: skipped and logged like a broken plugin.
    EnvGuard plugins("SDM_PLUGIN_PATH", fifo + ":/dev/zero");
    std::vector<std::string> log;
    RuntimePtr rt2 = make_runtime(dir.path + "/cache", 0, 0, &log);
    CHECK(std::count_if(log.begin(), log.end(), [](const std::string& l) { return l.find("skipped plugin") != std::string::npos; }) == 2);
}

TEST_CASE("a cubin whose ELF header points past its end never reaches the driver", "[hostile][images]") {
    TempDir dir;
    fake({kH200});
    for (const uint8_t codec : {forge::codec::stored, forge::codec::zstd}) {
        INFO("codec " << int(codec));
        RuntimePtr rt = make_runtime(dir.path + "/cache" + std::to_string(codec));
        mount_bytes(rt.get(), archive_with(hostile_header(), codec), "hostile.sdma");
        int32_t version = 0;
        REQUIRE(sdm_driver_version(rt.get(), &version, nullptr) == SDM_OK);
        sdm_status status = SDM_OK;
        const std::string message = status_and_message(rt.get(), "scale", &status);
        CHECK(status == SDM_ERROR_ARCHIVE_CORRUPT);
        CHECK_THAT(message, Catch::Contains("cubin kernels, sm_90 (entry 0) of archive hostile.sdma") &&
                                Catch::Contains("the program header table [536870912, +") && Catch::Contains("lies outside the image of 64 bytes") && Catch::Contains("it is not loaded"));
        CHECK(fake_image_loads() == 0);
    }
}

TEST_CASE("a fatbin wrapping a hostile cubin, stored or compressed inside it, never reaches the driver", "[hostile][images][fatbin]") {
    TempDir dir;
    fake({kH200});
    const forge::Bytes good = fdata("kernels.sm_90.cubin");
    int n = 0;
    for (const auto& hostile : forge::hostile_cubins(good)) {
        for (const bool inner_zstd : {false, true}) {
            for (const uint8_t codec : {forge::codec::stored, forge::codec::zstd}) {
                INFO(hostile.name << (inner_zstd ? ", zstd inside the fatbin" : ", stored inside the fatbin") << ", archive codec " << int(codec));
                const forge::FatbinEntry inner = inner_zstd ? forge::FatbinEntry{2, 90, 0x8011, forge::zstd(hostile.bytes), hostile.bytes.size(), 1, 8}
                                                            : forge::FatbinEntry{2, 90, 0x11, hostile.bytes, 0, 1, 8};
                forge::Archive a;
                a.kernel_abi_major = 1;
                a.records.push_back({"kernels", forge::kind::fatbin, codec, 0, 0, 0, forge::kNoRef, forge::fatbin({inner}), {}, {}, {}, {}});
                const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")}));
                a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
                RuntimePtr rt = make_runtime(dir.path + "/cache" + std::to_string(n++));
                mount_bytes(rt.get(), forge::write(a), "hostile.sdma");
                sdm_status status = SDM_OK;
                const std::string message = status_and_message(rt.get(), "scale", &status);
                CHECK(status == SDM_ERROR_ARCHIVE_CORRUPT);
                CHECK_THAT(message, Catch::Contains("fatbin kernels (entry 0) of archive hostile.sdma") && Catch::Contains("fatbin entry 0 (sm_90") &&
                                        Catch::Contains(hostile.expect) && Catch::Contains("it is not loaded"));
                CHECK(fake_image_loads() == 0);
            }
        }
    }
}

TEST_CASE("a cache entry that passes its checksum but is not a well-formed image is removed and the image built again", "[hostile][images][cache]") {
    TempDir dir;
    fake({kH200});
    const std::string cache_dir = dir.path + "/cache";
    const auto ptx = make_archive("kernels", {"compute_90"}, {"scale"}, 1, Matrix::none);
    {
        RuntimePtr rt = make_runtime(cache_dir);
        mount(rt.get(), ptx, "ptx.sdma");
        REQUIRE(info_of(rt.get(), 0, "scale").source == kSourceNvJitLink);  // linked, and its cubin cached
    }
    // Plant, under the key of that link's output, the hostile header with a valid entry checksum
    // (a process that can write the directory can do this).
    const Hash128 key = only_entry_key(cache_dir);
    runtime::CacheOptions o;
    o.directory = cache_dir;
    auto cache = runtime::Cache::open(o).value();
    const forge::Bytes hostile = hostile_header();
    REQUIRE(cache->put(key, {reinterpret_cast<const std::byte*>(hostile.data()), hostile.size()}));
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(cache_dir, 0, 0, &log);
    mount(rt.get(), ptx, "ptx.sdma");
    const auto info = info_of(rt.get(), 0, "scale");
    CHECK(info.source == kSourceNvJitLink);  // linked again, not the planted entry
    CHECK(std::any_of(log.begin(), log.end(), [](const std::string& l) {
        return l.find("the cache entry for ptx kernels, compute_90") != std::string::npos && l.find("it was removed, and the image is built again") != std::string::npos;
    }));
    CHECK(stats_of(rt.get()).bad_entries == 1);
    CHECK(fake_image_loads() == 1);  // the driver saw the linked cubin only
    // What is cached now is a real cubin again.
    const auto again = cache->get(key).value();
    CHECK(archive::inspect_image(archive::Kind::cubin, again));
}

TEST_CASE("a cache level others may write is never read: the image is built again, and the log says why", "[hostile][cache]") {
    TempDir dir;
    fake({kH200});
    const std::string cache_dir = dir.path + "/cache";
    const auto ptx = make_archive("kernels", {"compute_90"}, {"scale"}, 1, Matrix::none);
    {
        RuntimePtr rt = make_runtime(cache_dir);
        mount(rt.get(), ptx, "ptx.sdma");
        REQUIRE(info_of(rt.get(), 0, "scale").source == kSourceNvJitLink);
    }
    // Another user plants, in the fan-out folder made writable to them, the sm_80 cubin (which
    // cannot run on the H200) under the link output's key, with a valid checksum.
    const Hash128 key = only_entry_key(cache_dir);
    const std::string fan = cache_dir + "/v1/" + key.hex().substr(0, 2);
    {
        runtime::CacheOptions o;
        o.directory = cache_dir;
        auto cache = runtime::Cache::open(o).value();
        REQUIRE(cache->put(key, test::data_file("kernels.sm_80.cubin")));
    }
    REQUIRE(::chmod(fan.c_str(), 0777) == 0);
    std::vector<std::string> log;
    RuntimePtr rt = make_runtime(cache_dir, 0, 0, &log);
    mount(rt.get(), ptx, "ptx.sdma");
    const auto info = info_of(rt.get(), 0, "scale");
    CHECK(info.source == kSourceNvJitLink);
    CHECK(stats_of(rt.get()).hits == 0);
    CHECK(std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find(fan + " is group- or world-writable (mode 0777)") != std::string::npos; }));
    ::chmod(fan.c_str(), 0700);
}

TEST_CASE_METHOD(FakeRuntime, "a signature mismatch takes no reference: a reload unloads the old module at once", "[hostile][reload]") {
    const std::string path = dir.path + "/k.sdma";
    const auto write = [&](const sdm::ByteVector& b) {
        std::ofstream(path + ".tmp", std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
        fs::rename(path + ".tmp", path);
    };
    write(make_archive("kernels", {"sm_90"}));
    REQUIRE(sdm_archive_mount_file(rt.get(), path.c_str(), nullptr) == SDM_OK);
    sdm_kernel* k = nullptr;
    REQUIRE(sdm_kernel_get(rt.get(), 0, "scale", nullptr, &k, nullptr) == SDM_OK);
    REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    for (int i = 0; i < 3; ++i) {
        sdm_error* e = nullptr;
        CHECK(sdm_kernel_get_checked(rt.get(), 0, "scale", "ptr,ptr,i64", nullptr, &k, &e) == SDM_ERROR_MISMATCH);
        sdm_error_destroy(e);
    }
    CHECK(fake_calls("@modules") == 1);
    write(make_archive("kernels", {"sm_90a"}));
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK);
    CHECK(reloaded == 1);
    CHECK(fake_calls("@modules") == 0);  // no reference was left behind: the old module went with the reload
    // A mismatch on a kernel not loaded yet loads nothing.
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_get_checked(rt.get(), 0, "axpy", "f64", nullptr, &k, &e) == SDM_ERROR_MISMATCH);
    sdm_error_destroy(e);
    CHECK(fake_calls("@modules") == 0);
}

TEST_CASE("cluster shapes are checked one dimension at a time, before any product: none launches as \"no cluster\"", "[hostile][launch]") {
    ScaleKernel scale;
    const sdm_kernel* k = scale.kernel;
    void* y = nullptr;
    float factor = 2;
    int count = 4;
    void* args[] = {&y, &factor, &count};
    const int64_t launched = fake_calls("cuLaunchKernelEx");
    const std::vector<std::pair<std::array<uint32_t, 3>, std::string>> shapes = {
        {{65536, 65536, 1}, "grid x 1024 is not a multiple of cluster x 65536"},  // 2^32: wrapped to 0, once launched as "no cluster"
        {{1, 65536, 65536}, "grid y 1 is not a multiple of cluster y 65536"},
        {{1, 1, 65536}, "grid z 1 is not a multiple of cluster z 65536"},
        {{4294967295u, 4294967295u, 4294967295u}, "grid x 1024 is not a multiple of cluster x 4294967295"},
        {{3, 1, 1}, "is not a multiple of cluster x 3"},
    };
    for (const auto& [cluster, why] : shapes) {
        sdm_plan p = scale.plan;
        p.grid = 1024;
        for (int i = 0; i < 3; ++i) p.cluster[i] = cluster[static_cast<size_t>(i)];
        sdm_error* e = nullptr;
        CHECK(sdm_launch(k, &p, nullptr, args, 3, &e) == SDM_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel scale cannot launch with") && Catch::Contains(why));
        sdm_error_destroy(e);
    }
    CHECK(fake_calls("cuLaunchKernelEx") == launched);
}

TEST_CASE("NULL arguments are named, not counted as a wrong number", "[hostile][launch][messages]") {
    ScaleKernel scale;
    const sdm_kernel* k = scale.kernel;
    const sdm_plan& plan = scale.plan;
    sdm_error* e = nullptr;
    CHECK(sdm_launch(k, &plan, nullptr, nullptr, 3, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("takes 3 argument(s) (ptr,f32,i32), but args is NULL"));
    sdm_error_destroy(e);
    float factor = 2;
    int count = 4;
    void* args[] = {nullptr, &factor, &count};
    CHECK(sdm_launch(k, &plan, nullptr, args, 3, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("args[0] (its ptr argument) is NULL"));
    sdm_error_destroy(e);
}

TEST_CASE("polling for a new archive costs its size, however its entries reference each other", "[hostile][reload][cost]") {
    // A reload verifies the new file in full. Sixteen entries prefix-coded against one 16 MiB PTX
    // module, against a baseline of the same entries each coded alone: the poll that mounts it
    // must cost about the same (before the fix, each referencing entry decoded the big one again).
    const auto build = [](bool referenced, int count = 16) { return forge::shared_reference_archive(16u << 20, count, referenced, true); };
    TempDir dir;
    fake({kH200});
    const auto poll_cost = [&](const forge::Bytes& next) {
        const std::string path = dir.path + "/k.sdma";
        forge::write_file(path, build(false, 1));  // what runs before the poll: another version
        return test::run_in_child([&] {
            RuntimePtr rt = make_runtime(dir.path + "/cache");
            if (sdm_archive_mount_file(rt.get(), path.c_str(), nullptr) != SDM_OK) return false;
            forge::write_file(path + ".new", next);
            fs::rename(path + ".new", path);
            uint32_t reloaded = 0;
            return sdm_runtime_poll_archives(rt.get(), &reloaded, nullptr) == SDM_OK && reloaded == 1;
        });
    };
    const auto baseline = poll_cost(build(false));
    const auto attack = poll_cost(build(true));
    REQUIRE(baseline.ok);
    REQUIRE(attack.ok);
    INFO("baseline " << baseline.cpu_seconds << " s, attack " << attack.cpu_seconds << " s");
    CHECK(attack.cpu_seconds <= 2.0 * baseline.cpu_seconds + 0.05);
}

namespace {

// The longest PROGBITS section of a cubin whose name starts ".text": code, which no check reads.
std::pair<uint64_t, uint64_t> code_section(const forge::Bytes& cubin) {
    const Bytes b(reinterpret_cast<const std::byte*>(cubin.data()), cubin.size());
    const uint64_t shoff = load_u64(b, 40);
    const uint16_t shnum = load_u16(b, 60), shstrndx = load_u16(b, 62);
    const uint64_t names = load_u64(b, shoff + size_t{shstrndx} * 64 + 24);
    std::pair<uint64_t, uint64_t> best{0, 0};
    for (uint16_t s = 1; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * 64;
        const std::string_view name(reinterpret_cast<const char*>(cubin.data() + names + load_u32(b, sh)));
        if (load_u32(b, sh + 4) == 1 && name.starts_with(".text") && load_u64(b, sh + 32) > best.second) best = {load_u64(b, sh + 24), load_u64(b, sh + 32)};
    }
    return best;
}

std::string blake2b_hex(const forge::Bytes& b) {
    return crypto::digest_hex(crypto::blake2b(Bytes(reinterpret_cast<const std::byte*>(b.data()), b.size())).value());
}

// The BLAKE2b-256 of every cubin the fake driver was handed, from its image log, in order.
std::vector<std::string> loaded_images(const std::string& log) {
    std::vector<std::string> out;
    std::ifstream in(log);
    for (std::string xxh3, blake2b; in >> xxh3 >> blake2b;) out.push_back(blake2b);
    return out;
}

forge::Bytes one_module_archive(uint8_t kind, const forge::Bytes& image, uint16_t sm, const std::string& kernel) {
    forge::Archive a;
    a.kernel_abi_major = 1;
    a.records.push_back({"kernels", kind, forge::codec::zstd, sm, 0, 0, forge::kNoRef, image, {}, {}, {}, {}});
    const auto m = forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel(kernel, "kernels", "")}));
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    return forge::write(a);
}

RuntimePtr policy_host(const std::string& cache, uint32_t policy, const std::vector<crypto::PublicKey>& trusted, const std::string& image_log) {
    FakeConfig c;
    c.devices = {kH200};
    c.image_log = image_log;
    fake_configure(c);
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.cuda_driver = SDM_FAKE_CUDA_PATH;
    p.cache_dir = cache.c_str();
    p.log_level = SDM_LOG_OFF;
    p.signature_policy = policy;
    forge::Bytes keys;
    for (const auto& k : trusted) keys.insert(keys.end(), k.begin(), k.end());
    p.trusted_keys = keys.empty() ? nullptr : keys.data();
    p.trusted_key_count = static_cast<uint32_t>(trusted.size());
    sdm_runtime* r = nullptr;
    REQUIRE(sdm_runtime_create(&p, &r, nullptr) == SDM_OK);
    return RuntimePtr(r);
}

// The victim's host under each policy the victim can be served under: off and warn (the victim
// unsigned), require (signed by the trusted key). Without signing in this build, off only.
struct VictimPolicy {
    const char* name;
    uint32_t policy;
    bool sign;
};
std::vector<VictimPolicy> victim_policies() {
    std::vector<VictimPolicy> out{{"off", SDM_SIGNATURES_OFF, false}};
    if (crypto::available()) {
        out.push_back({"warn", SDM_SIGNATURES_WARN, false});
        out.push_back({"require", SDM_SIGNATURES_REQUIRE, true});
    }
    return out;
}

}  // namespace

TEST_CASE("an XXH3 second preimage of a cached cubin is never served to the other archive's host, under every policy", "[hostile][cache][preimage]") {
    // A vendor's cubin and an attacker's with the same size and XXH3-128 (and XXH3-64): the
    // attacker's code in the victim's .text, a 128-byte bridge, then the victim's own bytes. Both
    // are well-formed cubins over 64 KiB, compressed: what the cache kept decoded, keyed by XXH3.
    const forge::Bytes victim = fdata("chains.sm_90.cubin");
    const auto [text_at, text_size] = code_section(victim);
    REQUIRE(text_size > 4096);
    size_t bridge = static_cast<size_t>((text_at + 1024 + 63) / 64 * 64);
    if (bridge % 1024 == 960) bridge += 64;
    forge::Bytes attacker = victim;
    for (size_t i = static_cast<size_t>(text_at); i < bridge; ++i) attacker[i] ^= 0x5a;  // the attacker's own code
    const auto forged = test::xxh3_second_preimage(victim, attacker, bridge);
    REQUIRE(forged);
    REQUIRE(forged->size() == victim.size());
    REQUIRE(*forged != victim);
    const Bytes v(reinterpret_cast<const std::byte*>(victim.data()), victim.size()), f(reinterpret_cast<const std::byte*>(forged->data()), forged->size());
    REQUIRE(xxh3_128(v) == xxh3_128(f));
    REQUIRE(xxh3_64(v) == xxh3_64(f));
    const auto info = archive::inspect_cubin(f);
    REQUIRE(info);  // the forgery is a cubin sdm's checks accept
    const std::string kernel = info->kernels.front();
    const forge::Bytes evil = one_module_archive(forge::kind::cubin, *forged, 90, kernel);
    const crypto::KeyPair key = crypto::available() ? crypto::generate_key_pair().value() : crypto::KeyPair{};

    for (const auto& victim_policy : victim_policies()) {
        INFO("the victim's host: policy " << victim_policy.name);
        TempDir dir;
        const std::string cache = dir.path + "/cache", log = dir.path + "/images.log";
        forge::Bytes vendor = one_module_archive(forge::kind::cubin, victim, 90, kernel);
        if (victim_policy.sign) {
            const auto s = archive::sign_archive(Bytes(reinterpret_cast<const std::byte*>(vendor.data()), vendor.size()), "vendor.sdma", key.secret_key).value();
            vendor.assign(reinterpret_cast<const uint8_t*>(s.data()), reinterpret_cast<const uint8_t*>(s.data()) + s.size());
        }
        // The attacker's application runs first on the shared cache, then the vendor's host; then
        // the other way round on a fresh cache.
        for (const bool attacker_first : {true, false}) {
            INFO((attacker_first ? "the attacker's host first" : "the vendor's host first"));
            fs::remove_all(cache);
            fs::remove(log);
            const auto run = [&](const forge::Bytes& archive, uint32_t policy, const char* label) {
                RuntimePtr rt = policy_host(cache, policy, {key.public_key}, log);
                mount_bytes(rt.get(), archive, label);
                sdm_status status = SDM_OK;
                const std::string message = status_and_message(rt.get(), kernel.c_str(), &status);
                INFO(message);
                REQUIRE(status == SDM_OK);
                return loaded_images(log).back();
            };
            const uint32_t policy = victim_policy.policy;
            std::string vendor_loaded, attacker_loaded;
            if (attacker_first) {
                attacker_loaded = run(evil, SDM_SIGNATURES_OFF, "evil.sdma");
                vendor_loaded = run(vendor, policy, "vendor.sdma");
            } else {
                vendor_loaded = run(vendor, policy, "vendor.sdma");
                attacker_loaded = run(evil, SDM_SIGNATURES_OFF, "evil.sdma");
            }
            CHECK(vendor_loaded == blake2b_hex(victim));
            CHECK(attacker_loaded == blake2b_hex(*forged));
        }
    }
}

TEST_CASE("an XXH3 second preimage of a JIT input, or a declared checksum, never gets the other's linked cubin; sdm diff calls them different", "[hostile][cache][jit][preimage]") {
    // Two PTX modules of kernel "scale" with different bodies, the same size and XXH3-128: the
    // attacker's header and kernel, a line comment holding the bridge, then the victim's own text
    // (the rest of its comment line and its comments). ptxas refuses the bridge's bytes (it reads
    // only ASCII), so the attacker's link fails; what must hold is that its host is not served the
    // vendor's cubin for it (a key of the declared XXH3 was the same key), nor the other way round.
    const std::string header = ".version 9.0\n.target sm_90\n.address_size 64\n";
    const auto kernel = [](const std::string& op) {
        return ".visible .entry scale(.param .u64 p, .param .f32 f, .param .u32 n)\n{\n.reg .b64 %rd<3>;\n.reg .f32 %f<3>;\n"
               "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nld.param.f32 %f1, [f];\nld.global.f32 %f2, [%rd2];\n" +
               op + " %f2, %f2, %f1;\nst.global.f32 [%rd2], %f2;\nret;\n}\n";
    };
    const size_t bridge = 896;
    const auto padded = [&](std::string text, size_t to, const std::string& last) {
        while (text.size() + last.size() < to) text += std::string(std::min<size_t>(60, to - last.size() - text.size() - 1), '/') + "\n";
        text.resize(to - last.size(), '/');
        return text + last;
    };
    std::string victim_text = padded(header + kernel("mul.f32"), bridge, "//") + std::string(400, 'v') + "\n";
    for (int i = 0; i < 20; ++i) victim_text += "// the vendor's comment line " + std::to_string(i) + "\n";
    const std::string attacker_prefix = padded(header + kernel("add.f32"), bridge, "// ");
    const forge::Bytes victim(victim_text.begin(), victim_text.end());
    const auto forged = test::xxh3_second_preimage_avoiding(victim, forge::Bytes(attacker_prefix.begin(), attacker_prefix.end()), bridge, bridge - 4,
                                                            std::string_view("\0\n\r", 3));
    REQUIRE(forged);
    const Bytes v(reinterpret_cast<const std::byte*>(victim.data()), victim.size()), f(reinterpret_cast<const std::byte*>(forged->data()), forged->size());
    REQUIRE(xxh3_128(v) == xxh3_128(f));
    REQUIRE(archive::inspect_ptx(f));  // sdm's header checks pass: only the compiler refuses it
    const forge::Bytes vendor = one_module_archive(forge::kind::ptx, victim, 90, "scale"), evil = one_module_archive(forge::kind::ptx, *forged, 90, "scale");
    // And an archive that declares the vendor's checksum and size for other bytes (the attacker's
    // module without a bridge, so no collision): its record's raw bytes are the vendor's (what
    // raw_hash and raw_size are computed over), its payload the other module.
    forge::Bytes other(attacker_prefix.begin(), attacker_prefix.end());
    other.resize(bridge + 128, '/');
    other.insert(other.end(), victim.begin() + static_cast<std::ptrdiff_t>(bridge + 128), victim.end());
    forge::Archive declared;
    declared.kernel_abi_major = 1;
    declared.records.push_back({"kernels", forge::kind::ptx, forge::codec::zstd, 90, 0, 0, forge::kNoRef, victim, forge::zstd(other), {}, {}, {}});
    declared.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef,
                                forge::manifest(forge::concat({forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "")})), {}, {}, {}, {}});
    const forge::Bytes liar = forge::write(declared);

    TempDir dir;
    const std::string cache = dir.path + "/cache", log = dir.path + "/images.log";
    struct Outcome {
        sdm_status status;
        std::string message;
        sdm_cache_stats stats;
        size_t loads;
    };
    const auto run = [&](const forge::Bytes& archive, const char* label) {
        RuntimePtr rt = policy_host(cache, SDM_SIGNATURES_OFF, {}, log);
        mount_bytes(rt.get(), archive, label);
        Outcome o{};
        o.message = status_and_message(rt.get(), "scale", &o.status);
        o.stats = stats_of(rt.get());
        o.loads = loaded_images(log).size();
        return o;
    };
    const Outcome first = run(vendor, "vendor.sdma");
    if (first.status != SDM_OK && first.message.find("nvJitLink was not found") != std::string::npos) {
        WARN("nvJitLink is not available here: nothing is linked");
        return;
    }
    REQUIRE(first.status == SDM_OK);
    REQUIRE(first.stats.builds == 1);
    // The attacker's host: its own input is linked (and refused by ptxas), never served the vendor's.
    const Outcome attacker = run(evil, "evil.sdma");
    CHECK(attacker.status == SDM_ERROR_JIT);
    CHECK_THAT(attacker.message, Catch::Contains("non-ASCII"));
    CHECK(attacker.stats.hits == 0);
    CHECK(attacker.loads == first.loads);  // the driver was handed nothing for it
    // The liar's host: its payload is read, and fails its declared checksum; never a hit.
    const Outcome lied = run(liar, "liar.sdma");
    CHECK(lied.status == SDM_ERROR_ARCHIVE_CORRUPT);
    CHECK(lied.stats.hits == 0);
    CHECK(lied.loads == first.loads);
    // The vendor's own link still serves it.
    const Outcome again = run(vendor, "vendor.sdma");
    CHECK(again.status == SDM_OK);
    CHECK(again.stats.hits == 1);
    // On a fresh cache the other way round: the attacker first caches nothing the vendor gets.
    fs::remove_all(cache);
    CHECK(run(evil, "evil.sdma").status == SDM_ERROR_JIT);
    const Outcome vendor_after = run(vendor, "vendor.sdma");
    CHECK(vendor_after.status == SDM_OK);
    CHECK(vendor_after.stats.builds == 1);

    // sdm diff: equal checksums do not make equal images.
    forge::write_file(dir.path + "/vendor.sdma", vendor);
    forge::write_file(dir.path + "/evil.sdma", evil);
    const std::string diff = dir.path + "/diff.txt";
    const int rc = std::system((std::string(SDM_TEST_TOOL) + " diff " + dir.path + "/vendor.sdma " + dir.path + "/evil.sdma >" + diff).c_str());
    CHECK(WEXITSTATUS(rc) == 1);
    std::ifstream in(diff);
    const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(said, Catch::Contains("~ kernels:compute_90") && Catch::Contains("1 changed"));
}
