// Loading through the C ABI and the fake driver: selection, the cubin / cache / nvJitLink /
// driver-JIT paths, one load for many threads, per-device modules, graph capture, kernels a
// module lacks, preload, and unloading at destroy. The H200 runs the same in tests/gpu.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "sdm/sdm.h"
#include "fake_runtime.hpp"
#include "archive/manifest.hpp"
#include "runtime/archives/readahead.hpp"
#include "runtime/archives/reference_memo.hpp"
#include "archive/writer.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace sdm;

using namespace sdm::test;

TEST_CASE_METHOD(FakeRuntime, "cubins: the best one for the device, small compressed ones decoded in memory and never cached", "[modules]") {
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    const auto info = info_of(rt.get(), 0, "scale");
    CHECK(info.image_kind == 1);
    CHECK(info.image_sm == 90);  // the sm_90a cubin, chosen before sm_90
    CHECK(info.source == 1);     // decompressed from the archive
    CHECK(std::string(info.module) == "kernels");
    CHECK(std::string(info.signature) == "ptr,f32,i32");
    sdm_kernel* k = nullptr;
    REQUIRE(sdm_kernel_get(rt.get(), 0, "scale", nullptr, &k, nullptr) == SDM_OK);
    void* function = nullptr;
    REQUIRE(sdm_kernel_function(k, &function, nullptr) == SDM_OK);
    CHECK(function != nullptr);
    // A cubin under 64 KiB is not cached: nothing was written, and a second process decodes it
    // again (cheaper for it than a cache entry: docs/CACHE.md).
    CHECK(stats_of(rt.get()).bytes_written == 0);
    CHECK(stats_of(rt.get()).builds == 0);
    restart();
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    CHECK(info_of(rt.get(), 0, "axpy").source == 1);
    CHECK(stats_of(rt.get()).hits == 0);
    CHECK(stats_of(rt.get()).misses == 0);
}

TEST_CASE_METHOD(FakeRuntime, "a compressed cubin is decoded into memory, never into the cache: a first run writes nothing", "[modules][cache]") {
    // tests/data/chains.sm_90.cubin: 320 KiB of real nvcc output, zstd in the archive. The cache
    // holds JIT outputs only: a decoded copy on disk multiplied an imported library many times over.
    mount(rt.get(), make_archive("chains", {"chains.sm_90.cubin=sm_90"}, {"chain1", "chain2"}, 1, Matrix::none), "chains.sdma");
    CHECK(info_of(rt.get(), 0, "chain1").source == 1);  // decoded from the archive
    CHECK(stats_of(rt.get()).bytes_written == 0);
    CHECK(stats_of(rt.get()).misses == 0);  // the cache was not even asked
    restart();
    mount(rt.get(), make_archive("chains", {"chains.sm_90.cubin=sm_90"}, {"chain1", "chain2"}, 1, Matrix::none), "chains.sdma");
    CHECK(info_of(rt.get(), 0, "chain2").source == 1);  // decoded again: nothing was cached
    CHECK(stats_of(rt.get()).bytes_written == 0);
}

TEST_CASE_METHOD(FakeRuntime, "a fetch resolves the kernel it asks for, not every kernel of its module; preload resolves them all", "[modules][lazy]") {
    // One module of two kernels: the first fetch loads it and asks the driver for one function,
    // the second for the other; the image's own entry points said both are there.
    mount(rt.get(), make_archive("kernels", {"sm_90"}, {"axpy", "scale"}), "k.sdma");
    info_of(rt.get(), 0, "scale");
    CHECK(fake_image_loads() == 1);
    CHECK(fake_calls("cuModuleGetFunction") == 1);
    info_of(rt.get(), 0, "axpy");
    CHECK(fake_image_loads() == 1);
    CHECK(fake_calls("cuModuleGetFunction") == 2);
    info_of(rt.get(), 0, "scale");  // served before: no driver call
    CHECK(fake_calls("cuModuleGetFunction") == 2);
    // sdm_preload is eager: a fresh runtime's preload resolves both.
    restart();
    mount(rt.get(), make_archive("kernels", {"sm_90"}, {"axpy", "scale"}), "k.sdma");
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(fake_calls("cuModuleGetFunction") == 2);  // (the counters start again at the new runtime's cuInit)
    // A kernel the manifest lists and the image lacks: the module is refused at its load, naming
    // it, from the image's entry points, before any function is asked for.
    restart();
    mount(rt.get(), make_archive("kernels", {"sm_90"}, {"axpy", "scale", "absent"}), "absent.sdma");
    std::string message;
    info_of(rt.get(), 0, "scale", SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("lacks kernel(s) absent that the manifest lists"));
    CHECK(fake_calls("cuModuleGetFunction") == 0);
    CHECK(fake_calls("@modules") == 0);  // unloaded again
}

TEST_CASE("a module load reads its own kernels' manifest records, found by module, not the other modules'", "[modules][lazy]") {
    // Module "one" of two kernels beside module "many" of 20,000: the load of "one" reads two
    // records (its log says how many), and resolves the one kernel asked for.
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"one", archive::Kind::cubin, 90, archive::Variant::base, test::data_file("kernels.sm_90.cubin")}));
    REQUIRE(writer.add({"many", archive::Kind::cubin, 90, archive::Variant::base, test::data_file("templates.sm_90.cubin")}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels.push_back({"scale", "one", {archive::ParamType::ptr}, {}, {}});
    m.kernels.push_back({"axpy", "one", {archive::ParamType::ptr}, {}, {}});
    for (size_t i = 0; i < 20000; ++i) m.kernels.push_back({"k" + std::to_string(i), "many", {archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    const ByteVector bytes = writer.finish().value();
    FakeRuntime f({.log = true});
    mount(f.rt.get(), bytes, "a.sdma");
    info_of(f.rt.get(), 0, "scale");
    CHECK(count_containing(f.log, "load of module one: ") == 1);
    CHECK(count_containing(f.log, "2 kernels listed") == 1);
    CHECK(fake_calls("cuModuleGetFunction") == 1);
}

TEST_CASE("ManifestIndex::of_module: a module's kernels by binary search, sorted by name", "[modules][lazy][manifest]") {
    archive::Manifest m;
    m.kernel_abi_major = 1;
    for (const auto& [name, module] : std::vector<std::pair<std::string, std::string>>{{"z", "b"}, {"a", "b"}, {"m", "a"}, {"c", "c"}, {"b", "b"}})
        m.kernels.push_back({name, module, {archive::ParamType::ptr}, {}, {}});
    const ByteVector encoded = archive::encode_manifest(m).value();
    const auto index = archive::ManifestIndex::build(encoded).value();
    const auto names = [&](std::string_view module) {
        std::vector<std::string> out;
        for (const auto* k : index.of_module(module)) out.emplace_back(k->name);
        return out;
    };
    CHECK(names("b") == std::vector<std::string>{"a", "b", "z"});
    CHECK(names("a") == std::vector<std::string>{"m"});
    CHECK(names("c") == std::vector<std::string>{"c"});
    CHECK(names("d").empty());
    CHECK(names("").empty());
}

TEST_CASE("16 threads asking at once cause one load; each device gets its own module", "[modules][concurrency]") {
    FakeRuntime f({.devices = {kH200, kA100}});
    sdm_runtime* rt = f.rt.get();
    REQUIRE(sdm_archive_mount_file(rt, SDM_TEST_ARCHIVE, nullptr) == SDM_OK);
    int32_t version = 0;
    REQUIRE(sdm_driver_version(rt, &version, nullptr) == SDM_OK);  // cuInit restarts the fake's counters
    const int64_t before = fake_image_loads();
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    std::atomic<sdm_kernel*> first{nullptr};
    for (int t = 0; t < 16; ++t)
        threads.emplace_back([&, t] {
            sdm_kernel* k = nullptr;
            if (sdm_kernel_get(rt, 0, t % 2 ? "scale" : "axpy", nullptr, &k, nullptr) == SDM_OK) ++ok;
        });
    for (auto& t : threads) t.join();
    CHECK(ok == 16);
    CHECK(fake_image_loads() - before == 1);
    const auto a100 = info_of(rt, 1, "scale");
    CHECK(a100.image_sm == 80);
    CHECK(a100.ordinal == 1);
    CHECK(fake_image_loads() - before == 2);
    CHECK(fake_calls("@modules") == 2);
}

TEST_CASE_METHOD(FakeRuntime, "PTX: linked by nvJitLink for the device and cached; the next process hits", "[modules][jit]") {
    const auto ptx_only = make_archive("jit", {"compute_80", "compute_90"});
    mount(rt.get(), ptx_only, "ptx.sdma");
    const auto info = info_of(rt.get(), 0, "scale");
    CHECK(info.image_kind == 2);
    CHECK(info.image_sm == 90);  // compute_90: compute_80 is not eligible on the modern class
    CHECK(info.loaded_sm == 90);
    CHECK(info.source == 3);
    CHECK(stats_of(rt.get()).builds == 1);
    restart();
    mount(rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(rt.get(), 0, "scale").source == 2);
    CHECK(stats_of(rt.get()).builds == 0);
    CHECK(stats_of(rt.get()).hits == 1);
}

TEST_CASE("a backend that fails is not the end: nvJitLink refuses a newer PTX ISA, the driver's JIT takes it; every failure is said", "[modules][jit]") {
    // PTX of ISA 9.9, newer than CUDA 13.0's nvJitLink (9.0) reads, on a 13.9 driver that reads
    // it: a driver newer than the toolkit's nvJitLink JITs what nvJitLink refuses.
    ByteVector ptx = test::data_file("kernels.compute_90.ptx");
    const std::string text(reinterpret_cast<const char*>(ptx.data()), ptx.size());
    std::string newer = text;
    newer.replace(newer.find(".version 9.0"), 12, ".version 9.9");
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"jit", archive::Kind::ptx, 90, archive::Variant::base,
                        ByteVector(reinterpret_cast<const std::byte*>(newer.data()), reinterpret_cast<const std::byte*>(newer.data()) + newer.size())}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.hardware_matrix = true;
    m.kernels.push_back({"scale", "jit", {archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    const ByteVector bytes = writer.finish().value();

    // (In the process: the driver's JIT takes no unsigned PTX under the default isolation.)
    FakeRuntime f({.jit_flags = SDM_JIT_NO_PTX_COMPILER, .log = true, .jit_isolation = SDM_ISOLATION_NEVER});
    fake_configure({.devices = {kH200}, .driver_version = 13090});
    mount(f.rt.get(), bytes, "isa99.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 4);  // the driver's JIT
    CHECK(count_containing(f.log, "nvJitLink failed to build ptx jit, compute_90") == 1);
    CHECK(count_containing(f.log, "trying the next backend") == 1);
    CHECK(stats_of(f.rt.get()).bytes_written == 0);  // nothing cached: the failed link wrote nothing, the driver's JIT loads as it builds

    // When the driver's JIT fails too, the error carries both.
    fake_configure({.devices = {kH200}, .driver_version = 13090, .disable_jit = true});
    f.restart();
    mount(f.rt.get(), bytes, "isa99.sdma");
    std::string message;
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
    CHECK_THAT(message, Catch::Contains("every backend that ran failed") && Catch::Contains("nvJitLink failed") &&
                            Catch::Contains("the driver's JIT") && Catch::Contains("CUDA_ERROR_JIT_COMPILER_NOT_FOUND") &&
                            Catch::Contains("nvPTXCompiler is forbidden by the host"));
}

TEST_CASE("a link cached under one driver is a miss under another; CUDA_CACHE_DISABLE=1 turns the cache off", "[modules][jit][cache]") {
    const auto ptx_only = make_archive("jit", {"compute_90"});
    FakeRuntime f({.log = true});
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 3);
    fake_configure({.devices = {kH200}, .driver_version = 13010});
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 3);  // built again: the key names the driver
    CHECK(stats_of(f.rt.get()).builds == 1);
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 2);  // and that build is a hit under the same driver

    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    const auto info = info_of(f.rt.get(), 0, "scale");
    ::unsetenv("CUDA_CACHE_DISABLE");
    CHECK(info.source == 3);
    CHECK(stats_of(f.rt.get()).hits == 0);
    CHECK(stats_of(f.rt.get()).bytes_written == 0);
    CHECK(count_containing(f.log, "CUDA_CACHE_DISABLE is on") == 1);
}

TEST_CASE("old-arch PTX is refused on the modern class and taken on an A100", "[modules][select]") {
    FakeRuntime f({.devices = {kH200, kA100}});
    mount(f.rt.get(), make_archive("old", {"compute_80"}), "old.sdma");
    std::string message;
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_NO_IMAGE, &message);
    CHECK_THAT(message, Catch::Contains("module old of archive old.sdma has no image for device 0 (NVIDIA H200") &&
                            Catch::Contains("compute_80 older than compute_90"));
    const auto a100 = info_of(f.rt.get(), 1, "scale");
    CHECK(a100.loaded_sm == 80);
    CHECK(a100.source == 3);
}

TEST_CASE("the driver's JIT when nvJitLink may not run; its log on failure", "[modules][jit]") {
    FakeRuntime f({.jit_flags = kDriverJitOnly});
    const auto ptx_only = make_archive("jit", {"compute_90"});
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == 4);
    std::string message;
    fake_set_disable_jit(true);
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
    CHECK_THAT(message, Catch::Contains("the driver's JIT of ptx jit, compute_90") && Catch::Contains("CUDA_ERROR_JIT_COMPILER_NOT_FOUND"));
    fake_set_disable_jit(false);
    f.options.jit_flags = kDriverJitOnly | SDM_JIT_NO_DRIVER;
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
    CHECK_THAT(message, Catch::Contains("needs a JIT, and no backend may run"));
}

TEST_CASE("nvPTXCompiler takes PTX when nvJitLink may not (when built in), cached; else the driver's JIT", "[modules][jit]") {
    FakeRuntime f({.jit_flags = SDM_JIT_NO_NVJITLINK});
    const auto ptx_only = make_archive("jit", {"compute_90"});
    std::string message;
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == (SDM_TEST_PTX_COMPILER ? 6u : 4u));
    f.options.jit_flags = SDM_JIT_NO_NVJITLINK | SDM_JIT_NO_DRIVER;
    f.restart();
    mount(f.rt.get(), ptx_only, "ptx.sdma");
    if (SDM_TEST_PTX_COMPILER) {
        CHECK(info_of(f.rt.get(), 0, "scale").source == 2);  // the compile above was cached
        CHECK(stats_of(f.rt.get()).hits == 1);
    } else {
        (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
        CHECK_THAT(message, Catch::Contains("this libsdm was built without nvPTXCompiler") && Catch::Contains("forbidden by the host"));
    }
    // Forbidding nvPTXCompiler too leaves nothing, and the message says so for each backend.
    RuntimePtr none = make_runtime(f.cache_dir, kDriverJitOnly | SDM_JIT_NO_DRIVER);
    mount(none.get(), ptx_only, "ptx.sdma");
    (void)info_of(none.get(), 0, "scale", SDM_ERROR_JIT, &message);
    CHECK_THAT(message, Catch::Contains("nvJitLink is forbidden by the host") && Catch::Contains("nvPTXCompiler is forbidden by the host") &&
                            Catch::Contains("the driver's JIT is forbidden by the host"));
}

TEST_CASE_METHOD(FakeRuntime, "a load that would JIT during graph capture is refused; cubins and warm caches load", "[modules][capture]") {
    fake_set_capturing(true);
    const auto ptx_only = make_archive("jit", {"compute_90"});
    mount(rt.get(), ptx_only, "ptx.sdma");
    std::string message;
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_GRAPH_CAPTURE, &message);
    CHECK_THAT(message, Catch::Contains("capturing a CUDA graph") && Catch::Contains("sdm_preload"));
    REQUIRE(sdm_archive_mount_file(rt.get(), SDM_TEST_ARCHIVE, nullptr) == SDM_OK);  // newer mount serves axpy from a cubin
    CHECK(info_of(rt.get(), 0, "axpy").image_kind == 1);
    fake_set_capturing(false);
    restart();
    mount(rt.get(), ptx_only, "ptx.sdma");
    (void)info_of(rt.get(), 0, "scale");  // links and caches
    fake_set_capturing(true);
    restart();
    mount(rt.get(), ptx_only, "ptx.sdma");
    CHECK(info_of(rt.get(), 0, "scale").source == 2);  // no JIT needed: allowed during capture
}

TEST_CASE_METHOD(FakeRuntime, "a module lacking a listed kernel fails naming it, and its cached image is evicted", "[modules]") {
    mount(rt.get(), make_archive("ghostly", {"compute_90"}, {"axpy", "scale", "ghost"}), "ghost.sdma");
    std::string message;
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("module ghostly of archive ghost.sdma") && Catch::Contains("lacks kernel(s) ghost") &&
                           Catch::Contains("cache entry was removed"));
    size_t entries = 0;
    for (const auto& e : fs::recursive_directory_iterator(cache_dir))
        if (e.path().extension() == ".sdmc") ++entries;
    CHECK(entries == 0);
    (void)info_of(rt.get(), 0, "nowhere", SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("kernel nowhere is in no mounted archive"));
}

TEST_CASE_METHOD(FakeRuntime, "a device link's input is refused by name before the driver sees it", "[modules][hostile]") {
    // link_input.cu's -rdc cubin (a kernel calling operators defined elsewhere, as cuSPARSE's SpMMOp
    // kernels do), packed as if it were a module: the driver cannot load it alone.
    mount(rt.get(), make_archive("linked", {"link_input.sm_90.cubin=sm_90"}, {"_Z5fixupPiPKii"}, 1, Matrix::none), "linked.sdma");
    std::string message;
    (void)info_of(rt.get(), 0, "_Z5fixupPiPKii", SDM_ERROR_UNSUPPORTED, &message);
    CHECK_THAT(message, Catch::Contains("is a relocatable cubin that calls 2 function(s) it does not define (_Z6add_opii, _Z8epilogueii)") &&
                           Catch::Contains("it is not loaded"));
    CHECK(fake_calls("cuModuleLoadData") + fake_calls("cuLibraryLoadData") == 0);  // (counted since the fetch's cuInit)
    CHECK(fake_calls("@modules") == 0);
}

TEST_CASE_METHOD(FakeRuntime, "preload loads every module, linking in parallel; destroy unloads them all", "[modules][preload]") {
    mount(rt.get(), make_archive("one", {"compute_90"}), "one.sdma");
    mount(rt.get(), make_archive("three", {"sm_90a"}, {"axpy"}), "three.sdma");
    int32_t version = 0;
    REQUIRE(sdm_driver_version(rt.get(), &version, nullptr) == SDM_OK);  // cuInit restarts the fake's counters
    const int64_t before = fake_image_loads();
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(fake_image_loads() - before == 2);  // modules one and three (three serves axpy: newer mount)
    CHECK(info_of(rt.get(), 0, "axpy").image_sm == 90);
    CHECK(std::string(info_of(rt.get(), 0, "axpy").module) == "three");
    CHECK(fake_image_loads() - before == 2);  // already loaded
    const char* names[] = {"scale"};
    CHECK(sdm_preload(rt.get(), 0, names, 1, nullptr) == SDM_OK);
    const char* missing[] = {"nope"};
    CHECK(sdm_preload(rt.get(), 0, missing, 1, nullptr) == SDM_ERROR_NOT_FOUND);
    CHECK(fake_calls("@modules") == 2);
    rt.reset();
    CHECK(fake_calls("@modules") == 0);
    CHECK(fake_calls("@contexts") == 0);
}

TEST_CASE_METHOD(FakeRuntime, "preload loads every name it can and reports the ones it could not", "[modules][preload]") {
    mount(rt.get(), make_archive("one", {"sm_90"}, {"scale"}), "one.sdma");
    mount(rt.get(), make_archive("two", {"sm_80"}, {"axpy"}), "two.sdma");  // no image for the H200
    const char* names[] = {"nope", "scale", "axpy", "missing"};
    sdm_error* e = nullptr;
    CHECK(sdm_preload(rt.get(), 0, names, 4, &e) == SDM_ERROR_NOT_FOUND);  // the first failure's status
    CHECK_THAT(sdm_error_message(e), Catch::Contains("kernel nope") &&
                                         Catch::Contains("3 kernels did not preload (axpy, missing, nope); the others did"));
    sdm_error_destroy(e);
    CHECK(fake_calls("@modules") == 1);  // scale's module loaded all the same
    const int64_t loads = fake_image_loads();
    (void)info_of(rt.get(), 0, "scale");
    CHECK(fake_image_loads() == loads);
}

TEST_CASE("a device outside the matrix gets no module of an archive that follows it", "[modules]") {
    FakeRuntime f({.devices = {{"Tesla T4", 7, 5, 65536, 40, 4194304}}});
    mount(f.rt.get(), make_archive("kernels", {"sm_90", "compute_90"}, {"scale"}, 1, Matrix::follows), "sdm.sdma");
    std::string message;
    (void)info_of(f.rt.get(), 0, "scale", SDM_ERROR_UNSUPPORTED_DEVICE, &message);
    CHECK_THAT(message, Catch::Contains("Tesla T4"));
    CHECK(fake_image_loads() == 0);
}

TEST_CASE_METHOD(FakeRuntime, "an exception inside a load, in preload's workers, is the call's error; nothing stays loaded", "[modules][preload]") {
    fake_throw("cuModuleGetFunction", 1);  // read at the runtime's cuInit (its first driver call, below)
    mount(rt.get(), make_archive("one", {"sm_90"}), "one.sdma");
    mount(rt.get(), make_archive("two", {"sm_90"}, {"axpy"}), "two.sdma");
    sdm_error* e = nullptr;
    CHECK(sdm_preload(rt.get(), 0, nullptr, 0, &e) == SDM_ERROR_OUT_OF_MEMORY);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("out of memory while preloading kernel"));
    sdm_error_destroy(e);
    CHECK(fake_calls("@modules") == 1);  // of the two modules, the one whose load threw was unloaded
    fake_clear_failures();
    CHECK(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);  // and loads the next time
    CHECK(fake_calls("@modules") == 2);
}

TEST_CASE("a runtime that loaded nothing goes without calling the driver", "[modules]") {
    TempDir dir;
    fake({kH200});
    fake_reset();
    {
        RuntimePtr rt = make_runtime(dir.path);
        mount(rt.get(), make_archive("one", {"sm_90"}), "one.sdma");
    }
    CHECK(fake_calls("cuInit") == 0);
    CHECK(fake_calls("cuModuleUnload") == 0);
}

TEST_CASE("a prefix base is decoded once for every entry that references it, within a bound", "[modules][memo]") {
    const auto bytes = test::build_archive();  // sm_80 coded against sm_86, sm_90 against sm_90a, ...
    const auto a = archive::Archive::open_memory(bytes, "memo.sdma").value();
    std::vector<size_t> referrers;
    for (size_t i = 0; i < a.entries().size(); ++i)
        if (a.entries()[i].codec == archive::Codec::zstd_prefix && a.entries()[a.entries()[i].ref].codec != archive::Codec::stored) referrers.push_back(i);
    REQUIRE_FALSE(referrers.empty());
    sdm::runtime::ReferenceMemo memo;
    for (size_t i : referrers) CHECK(memo.read(a, i).value() == a.read(i).value());
    const size_t base = a.entries()[referrers.front()].ref;
    CHECK(memo.get(a, base).value() == memo.get(a, base).value());  // the same decoded bytes, kept
    sdm::runtime::ReferenceMemo tiny(1);
    CHECK(tiny.get(a, base).value() != tiny.get(a, base).value());  // past the bound: decoded each time, not kept
    CHECK(tiny.read(a, referrers.front()).value() == a.read(referrers.front()).value());
    // Bytes that are not the reference's fail the entry's checksum.
    ByteVector wrong = a.read(base).value();
    wrong[wrong.size() / 2] ^= std::byte{1};
    const auto refused = a.read_against(referrers.front(), wrong);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::archive_corrupt);
}


namespace {

// Modules m0..m(n-1), each an sm_90 cubin (compressed: the writer's min_saving is 0) and a
// compute_90 PTX; a manifest listing each module's "scale" as mI_scale is not needed here.
ByteVector modules_archive(size_t n) {
    archive::WriterOptions o;
    o.prefix = o.dictionary = false;
    archive::ArchiveWriter writer(o);
    for (size_t i = 0; i < n; ++i) {
        const std::string name = "m" + std::to_string(i);
        REQUIRE(writer.add({name, archive::Kind::cubin, 90, archive::Variant::base, test::data_file("kernels.sm_90.cubin")}));
        REQUIRE(writer.add({name, archive::Kind::ptx, 90, archive::Variant::base, test::data_file("kernels.compute_90.ptx")}));
    }
    return writer.finish().value();
}

}  // namespace

TEST_CASE("decoding ahead: the next modules' same target, taken by their loads, bounded, stopped with its archive", "[modules][readahead]") {
    const ByteVector bytes = modules_archive(4);
    const auto a = archive::Archive::open_memory(bytes, "m.sdma").value();
    const auto cubin = [&](size_t i) { return a.find("m" + std::to_string(i), archive::Kind::cubin, 90, archive::Variant::base).value(); };
    REQUIRE(a.entries()[cubin(0)].codec == archive::Codec::zstd);
    // The next modules in the archive's order, the same kind and target (not their PTX).
    CHECK(runtime::next_in_order(a, cubin(0), 2) == std::vector<size_t>{cubin(1), cubin(2)});
    CHECK(runtime::next_in_order(a, cubin(2), 5) == std::vector<size_t>{cubin(3)});
    CHECK(runtime::next_in_order(a, cubin(3), 2).empty());
    CHECK(runtime::next_in_order(a, cubin(0), 0).empty());
    runtime::ReferenceMemo memo;
    {
        runtime::Readahead ahead;
        ahead.start(a, memo, cubin(1));
        ahead.start(a, memo, cubin(1));  // once
        CHECK(ahead.read(a, memo, cubin(1)).value() == a.read(cubin(1)).value());
        CHECK(ahead.hits() <= 1);  // taken decoded, or still queued (then decoded by the read itself)
        CHECK(ahead.read(a, memo, cubin(2)).value() == a.read(cubin(2)).value());  // never started: decoded here
        // Many queued and never taken, then the archive goes: the workers stop, nothing hangs.
        for (size_t i = 0; i < 4; ++i) ahead.start(a, memo, cubin(i));
    }
    {
        runtime::Readahead tiny(16);  // smaller than any image: nothing is decoded ahead
        tiny.start(a, memo, cubin(1));
        CHECK(tiny.read(a, memo, cubin(1)).value() == a.read(cubin(1)).value());
        CHECK(tiny.hits() == 0);
    }
    {
        // A decode ahead waited for: the worker has it before the read asks.
        runtime::Readahead ahead;
        ahead.start(a, memo, cubin(3));
        for (int waited = 0; waited < 10000 && !ahead.ready(cubin(3)); ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(ahead.ready(cubin(3)));
        bool decoded_ahead = false;
        CHECK(ahead.read(a, memo, cubin(3), &decoded_ahead).value() == a.read(cubin(3)).value());
        CHECK(decoded_ahead);
        CHECK(ahead.hits() == 1);
    }
}

TEST_CASE("decoding ahead: an entry coded against a reference counts the reference; one past the bound is left to its load", "[modules][readahead][hostile]") {
    const auto bytes = test::build_archive();  // sm_80 coded against sm_86, sm_90 against sm_90a, ...
    const auto a = archive::Archive::open_memory(bytes, "ref.sdma").value();
    size_t referrer = a.entries().size();
    for (size_t i = 0; i < a.entries().size() && referrer == a.entries().size(); ++i)
        if (a.entries()[i].codec == archive::Codec::zstd_prefix && a.entries()[a.entries()[i].ref].codec != archive::Codec::stored) referrer = i;
    REQUIRE(referrer < a.entries().size());
    const uint64_t own = a.entries()[referrer].raw_size, reference = a.entries()[a.entries()[referrer].ref].raw_size;
    runtime::ReferenceMemo memo;
    {
        // Room for the entry, not for the entry and its reference: not decoded ahead (a reference
        // of a GiB would otherwise be decoded by every worker, for every module ahead).
        runtime::Readahead ahead(own + reference - 1);
        ahead.start(a, memo, referrer);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a worker, had one started, would have it by now
        CHECK_FALSE(ahead.ready(referrer));
        bool decoded_ahead = true;
        CHECK(ahead.read(a, memo, referrer, &decoded_ahead).value() == a.read(referrer).value());  // the fetch decodes it, reference and all
        CHECK_FALSE(decoded_ahead);
        CHECK(ahead.hits() == 0);
    }
    {
        runtime::Readahead ahead(own + reference);  // room for both: decoded ahead
        ahead.start(a, memo, referrer);
        for (int waited = 0; waited < 10000 && !ahead.ready(referrer); ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(ahead.ready(referrer));
        CHECK(ahead.read(a, memo, referrer).value() == a.read(referrer).value());
        CHECK(ahead.hits() == 1);
    }
}

TEST_CASE("decoding ahead: a damaged entry decoded ahead is its load's error, named; the other loads serve", "[modules][readahead][hostile]") {
    ByteVector bytes = modules_archive(3);
    const auto damaged = [&] {
        const auto a = archive::Archive::open_memory(bytes, "m.sdma").value();
        return a.find("m1", archive::Kind::cubin, 90, archive::Variant::base).value();
    }();
    {
        const auto a = archive::Archive::open_memory(bytes, "m.sdma").value();
        const archive::Entry& e = a.entries()[damaged];
        bytes[e.data_offset + e.stored_size / 2] ^= std::byte{0x40};  // the payload, behind no re-sealed checksum
    }
    const auto a = archive::Archive::open_memory(bytes, "m.sdma").value();
    runtime::ReferenceMemo memo;
    runtime::Readahead ahead;
    for (size_t i : runtime::next_in_order(a, a.find("m0", archive::Kind::cubin, 90, archive::Variant::base).value(), 2)) ahead.start(a, memo, i);
    const auto bad = ahead.read(a, memo, damaged);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == ErrorCode::archive_corrupt);
    CHECK_THAT(bad.error().message, Catch::Contains("m1"));
    const size_t m2 = a.find("m2", archive::Kind::cubin, 90, archive::Variant::base).value();
    CHECK(ahead.read(a, memo, m2).value() == a.read(m2).value());
}

TEST_CASE("checking ahead: a stored image's checksum is computed by a worker once, and a damaged one is still its load's error", "[modules][readahead][hostile]") {
    archive::WriterOptions o;
    o.prefix = o.dictionary = false;
    o.store_cubins = true;
    archive::ArchiveWriter writer(o);
    for (size_t i = 0; i < 3; ++i)
        REQUIRE(writer.add({"m" + std::to_string(i), archive::Kind::cubin, 90, archive::Variant::base, test::data_file("kernels.sm_90.cubin")}));
    ByteVector bytes = writer.finish().value();
    const auto index_of = [&](const archive::Archive& a, size_t i) {
        return a.find("m" + std::to_string(i), archive::Kind::cubin, 90, archive::Variant::base).value();
    };
    {
        const auto a = archive::Archive::open_memory(bytes, "s.sdma").value();
        REQUIRE(a.entries()[index_of(a, 0)].codec == archive::Codec::stored);
        CHECK(runtime::next_in_order(a, index_of(a, 0), 2) == std::vector<size_t>{index_of(a, 1), index_of(a, 2)});  // stored ones too
        runtime::ReferenceMemo memo;
        {
            runtime::Readahead ahead;  // by default a stored image this small is left to its load
            ahead.start(a, memo, index_of(a, 1));
            CHECK_FALSE(ahead.ready(index_of(a, 1)));
            bool checked_ahead = true;
            ahead.settle(index_of(a, 1), &checked_ahead);
            CHECK_FALSE(checked_ahead);
        }
        runtime::Readahead ahead(size_t{64} << 20, 2, 0);
        ahead.start(a, memo, index_of(a, 1));
        for (int waited = 0; waited < 10000 && !ahead.ready(index_of(a, 1)); ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(ahead.ready(index_of(a, 1)));
        bool checked_ahead = false;
        ahead.settle(index_of(a, 1), &checked_ahead);
        CHECK(checked_ahead);
        CHECK_FALSE(ahead.ready(index_of(a, 1)));  // taken: nothing is held for a stored entry
        CHECK(a.view(index_of(a, 1)).value().size() == a.entries()[index_of(a, 1)].stored_size);
        ahead.start(a, memo, index_of(a, 2));
        ahead.settle(index_of(a, 2));  // queued or running: waited for or dropped; the view checks it then
        CHECK(a.view(index_of(a, 2)));
        ahead.settle(index_of(a, 0), &checked_ahead);  // never started: nothing to wait for
        CHECK_FALSE(checked_ahead);
    }
    // A stored payload damaged behind its checksum: the worker's check fails, is not remembered,
    // and the load's own view reports it, naming the module; the others serve.
    {
        const auto a = archive::Archive::open_memory(bytes, "s.sdma").value();
        const archive::Entry& e = a.entries()[index_of(a, 1)];
        bytes[e.data_offset + e.stored_size / 2] ^= std::byte{0x40};
    }
    const auto a = archive::Archive::open_memory(bytes, "s.sdma").value();
    runtime::ReferenceMemo memo;
    runtime::Readahead ahead(size_t{64} << 20, 2, 0);
    for (size_t i : runtime::next_in_order(a, index_of(a, 0), 2)) ahead.start(a, memo, i);
    ahead.settle(index_of(a, 1));
    const auto bad = a.view(index_of(a, 1));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == ErrorCode::archive_corrupt);
    CHECK_THAT(bad.error().message, Catch::Contains("m1"));
    CHECK_FALSE(a.view(index_of(a, 1)));  // every time
    ahead.settle(index_of(a, 2));
    CHECK(a.view(index_of(a, 2)));
}

TEST_CASE("decoding ahead through the runtime: a host fetching module after module finds the next ones decoded", "[modules][readahead]") {
    // Three modules of different kernels, compressed, fetched in the archive's order with a pause
    // between (a worker's start is not instant on a loaded machine): the later loads take images
    // decoded ahead, and every kernel is served.
    archive::WriterOptions o;
    o.prefix = o.dictionary = false;
    archive::ArchiveWriter writer(o);
    REQUIRE(writer.add({"m0", archive::Kind::cubin, 90, archive::Variant::base, test::data_file("kernels.sm_90.cubin")}));
    REQUIRE(writer.add({"m1", archive::Kind::cubin, 90, archive::Variant::base, test::data_file("params.sm_90.cubin")}));
    REQUIRE(writer.add({"m2", archive::Kind::cubin, 90, archive::Variant::base, test::data_file("templates.sm_90.cubin")}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    const std::vector<std::pair<std::string, std::string>> kernels{
        {"scale", "m0"}, {"no_params", "m1"}, {"_ZN8sdm_test4fillIfLi256EEEvPT_S1_", "m2"}};
    for (const auto& [name, module] : kernels) m.kernels.push_back({name, module, {}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    const ByteVector bytes = writer.finish().value();
    FakeRuntime f({.log = true});
    mount(f.rt.get(), bytes, "m.sdma");
    for (const auto& [name, module] : kernels) {
        info_of(f.rt.get(), 0, name.c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(count_containing(f.log, "load of module m0: context") == 1);
    CHECK(count_containing(f.log, "image (decoded ahead)") == 2);  // m1 and m2
    // Off (SDM_READAHEAD=0): every load decodes its own.
    setenv("SDM_READAHEAD", "0", 1);
    FakeRuntime off({.log = true});
    mount(off.rt.get(), bytes, "m.sdma");
    for (const auto& [name, module] : kernels) info_of(off.rt.get(), 0, name.c_str());
    unsetenv("SDM_READAHEAD");
    CHECK(count_containing(off.log, "image (decoded ahead)") == 0);
    CHECK(count_containing(off.log, "load of module m2: ") == 1);
    // A value that is not a count (or past 16) is warned of at creation and read as the default.
    for (const char* bad : {"two", "17", "-1", "2x"}) {  // (empty is unset, as for every variable)
        INFO(bad);
        setenv("SDM_READAHEAD", bad, 1);
        FakeRuntime odd({.log = true});
        unsetenv("SDM_READAHEAD");
        CHECK(count_containing(odd.log, "is not a number of modules from 0 to 16; decoding ") == 1);
        mount(odd.rt.get(), bytes, "m.sdma");
        for (const auto& [name, module] : kernels) info_of(odd.rt.get(), 0, name.c_str());
    }
}
