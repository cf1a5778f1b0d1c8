// Loading a module whose image is a fatbin (runtime/load/image_source.cpp, issue 38), through the C ABI
// and the fake driver: sdm chooses inside the fatbin by the rules for bare images; the driver gets
// only its cubin (the image log shows the inner cubin's bytes, never the container); its PTX goes
// through sdm's own JIT backends, with their isolation, time limit, SDM_JIT_NO_DRIVER and graph
// capture check; raw LTO-IR inside a fatbin is refused by the runtime and by `sdm verify`.
// The misbehaving compiler is tests/fake_nvjitlink, loaded through SDM_NVJITLINK.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "fake_runtime.hpp"
#include "forge/forge.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm;
using namespace sdm::test;

namespace {

const FakeDevice kB200{"NVIDIA B200", 10, 0, 232448, 148, 132120576};

forge::Bytes fdata(const std::string& name) {
    const auto b = data_file(name);
    return forge::Bytes(reinterpret_cast<const uint8_t*>(b.data()), reinterpret_cast<const uint8_t*>(b.data()) + b.size());
}

forge::Bytes text(const std::string& s) { return forge::Bytes(s.begin(), s.end()); }

// Fatbin entries as nvcc writes them: a cubin (zstd inside, as nvcc's default), PTX (its NUL
// ends it), and a raw LTO-IR, which nvcc never writes.
forge::FatbinEntry cubin_entry(const std::string& file, uint32_t arch) {
    const forge::Bytes cubin = fdata(file);
    return {2, arch, 0x8011, forge::zstd(cubin), cubin.size(), 1, 8};
}
forge::FatbinEntry ptx_entry(forge::Bytes ptx, uint32_t arch = 90) {
    ptx.push_back(0);
    return {1, arch, 0x11, ptx, 0, 9, 0};
}
forge::FatbinEntry raw_ltoir_entry() { return {8, 90, 0x11, fdata("kernels.lto_90.ltoir"), 0, 1, 8}; }

// The test kernels' compute_90 PTX with `marker` in a comment (the fake nvJitLink's instruction).
forge::Bytes ptx_with(const std::string& marker) {
    forge::Bytes ptx = fdata("kernels.compute_90.ptx");
    const forge::Bytes line = text("// " + marker + "\n");
    ptx.insert(ptx.end(), line.begin(), line.end());
    return ptx;
}

// An archive whose module "kernels" is the fatbin of `entries` (forge writes what the writer
// refuses), and a manifest listing "scale" and `also` there.
ByteVector fatbin_archive(const std::vector<forge::FatbinEntry>& entries, const std::vector<std::string>& also = {}) {
    forge::Archive a;
    a.kernel_abi_major = 1;
    a.records.push_back({"kernels", forge::kind::fatbin, forge::codec::stored, 0, 0, 0, forge::kNoRef, forge::fatbin(entries), {}, {}, {}, {}});
    std::vector<forge::Bytes> records{forge::kernel_abi(1, 0), forge::kernel("scale", "kernels", "ptr,f32,i32")};
    for (const auto& name : also) records.push_back(forge::kernel(name, "kernels", "ptr"));
    const auto m = forge::manifest(forge::concat(records));
    a.records.push_back({"manifest", forge::kind::manifest, forge::codec::stored, 0, 0, 0, forge::kNoRef, m, {}, {}, {}, {}});
    const forge::Bytes b = forge::write(a);
    return ByteVector(reinterpret_cast<const std::byte*>(b.data()), reinterpret_cast<const std::byte*>(b.data()) + b.size());
}

// The fake driver on `device`, logging every cubin it loads to `image_log`.
void fake_logging(const FakeDevice& device, const std::string& image_log) {
    FakeConfig c;
    c.devices = {device};
    c.image_log = image_log;
    fake_configure(c);
}

// The first word of each line of the image log: the XXH3-128 of each cubin the driver read.
std::vector<std::string> loaded_hashes(const std::string& image_log) {
    std::vector<std::string> out;
    std::ifstream in(image_log);
    for (std::string hash, blake; in >> hash >> blake;) out.push_back(hash);
    return out;
}

std::string xxh3_hex(const std::string& file) { return xxh3_128(data_file(file)).hex(); }

// The sdm tool's output (both streams) with `arguments`; its exit status in `status`.
std::string tool_output(const std::string& arguments, int* status) {
    FILE* p = ::popen((std::string(SDM_TEST_TOOL) + " " + arguments + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    std::string output;
    for (char buffer[4096]; std::fgets(buffer, sizeof buffer, p) != nullptr;) output += buffer;
    *status = ::pclose(p);
    return output;
}

}  // namespace

TEST_CASE("a fatbin's cubin goes to the driver alone; on a newer device sdm links its PTX", "[fatbin][modules]") {
    TempDir dir;
    const std::string images = dir.path + "/images";
    const ByteVector archive = fatbin_archive({cubin_entry("kernels.sm_90.cubin", 90), ptx_entry(fdata("kernels.compute_90.ptx"))});
    std::vector<std::string> log;
    SECTION("sm_90 device: the inner cubin, decoded, is what the driver reads") {
        fake_logging(kH200, images);
        RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
        mount(rt.get(), archive, "fatbin.sdma");
        const sdm_kernel_info info = info_of(rt.get(), 0, "scale");
        CHECK(info.source == SDM_IMAGE_SOURCE_FATBIN);
        CHECK(info.loaded_sm == 90);
        CHECK(loaded_hashes(images) == std::vector<std::string>{xxh3_hex("kernels.sm_90.cubin")});
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);  // no PTX went to the driver's JIT
        CHECK(count_containing(log, "its entry 0 (sm_90, zstd) is chosen (cubin for exactly this capability)") == 1);
    }
    SECTION("sm_100 device: the inner PTX is linked by nvJitLink, through the cache, and only the cubin it built reaches the driver") {
        fake_logging(kB200, images);
        RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
        mount(rt.get(), archive, "fatbin.sdma");
        const sdm_kernel_info info = info_of(rt.get(), 0, "scale");
        CHECK(info.source == SDM_IMAGE_SOURCE_NVJITLINK);
        CHECK(info.loaded_sm == 100);
        const auto loaded = loaded_hashes(images);
        REQUIRE(loaded.size() == 1);  // an ELF cubin (the log has ELF images only), not the sm_90 one
        CHECK(loaded[0] != xxh3_hex("kernels.sm_90.cubin"));
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        CHECK(count_containing(log, "its entry 1 (compute_90) is chosen (PTX linked for this capability)") == 1);
        // The next process finds the link in the cache, keyed by the inner PTX.
        RuntimePtr next = make_runtime(dir.path + "/cache");
        mount(next.get(), archive, "fatbin.sdma");
        CHECK(info_of(next.get(), 0, "scale").source == SDM_IMAGE_SOURCE_CACHE);
    }
    SECTION("CUDA_FORCE_PTX_JIT=1 applies inside the fatbin: its PTX, not its cubin") {
        fake_logging(kH200, images);
        EnvGuard force("CUDA_FORCE_PTX_JIT", "1");
        RuntimePtr rt = make_runtime(dir.path + "/cache");
        mount(rt.get(), archive, "fatbin.sdma");
        CHECK(info_of(rt.get(), 0, "scale").source == SDM_IMAGE_SOURCE_NVJITLINK);
        const auto loaded = loaded_hashes(images);
        REQUIRE(loaded.size() == 1);
        CHECK(loaded[0] != xxh3_hex("kernels.sm_90.cubin"));
    }
}

TEST_CASE("a fatbin's cubin is checked against the manifest: a kernel it lacks refuses the module", "[fatbin][modules]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    mount(rt.get(), fatbin_archive({cubin_entry("kernels.sm_90.cubin", 90)}, {"missing_kernel"}), "lacking.sdma");
    std::string message;
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_NOT_FOUND, &message);
    CHECK_THAT(message, Catch::Contains("module kernels of archive lacking.sdma") && Catch::Contains("lacks kernel(s) missing_kernel that the manifest lists"));
    CHECK(fake_calls("@modules") == 0);  // unloaded again
}

TEST_CASE("a fatbin with no image for the device is SDM_ERROR_NO_IMAGE naming the module, its contents, the device and the fix", "[fatbin][modules]") {
    TempDir dir;
    fake({kH200});
    RuntimePtr rt = make_runtime(dir.path + "/cache");
    mount(rt.get(), fatbin_archive({cubin_entry("kernels.sm_80.cubin", 80)}), "old.sdma");
    std::string message;
    (void)info_of(rt.get(), 0, "scale", SDM_ERROR_NO_IMAGE, &message);
    CHECK_THAT(message, Catch::Contains("module kernels of fatbin kernels (entry 0) of archive old.sdma has no image for device 0 (NVIDIA H200") &&
                            Catch::Contains("it holds sm_80") && Catch::Contains("Add a cubin for sm_90 or PTX for compute_90") &&
                            Catch::Contains("the driver never gets the fatbin whole"));
    CHECK(fake_image_loads() == 0);
}

TEST_CASE("raw LTO-IR in a fatbin is refused by the runtime, sdm verify and sdm import, and never reaches a compiler", "[fatbin][hostile]") {
    TempDir dir;
    fake({kH200});
    // With a cubin that fits beside it too: the container is refused whole.
    for (const auto& entries : {std::vector<forge::FatbinEntry>{raw_ltoir_entry()},
                                std::vector<forge::FatbinEntry>{cubin_entry("kernels.sm_90.cubin", 90), raw_ltoir_entry()}}) {
        INFO(entries.size() << " entries");
        const ByteVector archive = fatbin_archive(entries);
        RuntimePtr rt = make_runtime(dir.path + "/cache");
        mount(rt.get(), archive, "lto.sdma");
        std::string message;
        (void)info_of(rt.get(), 0, "scale", SDM_ERROR_ARCHIVE_CORRUPT, &message);
        const std::string entry = "fatbin entry " + std::to_string(entries.size() - 1) + " (lto_90)";
        CHECK_THAT(message, Catch::Contains("fatbin kernels (entry 0) of archive lto.sdma") && Catch::Contains(entry) &&
                                Catch::Contains("raw LTO-IR, which nvcc never writes in a fatbin") && Catch::Contains("it is not loaded"));
        CHECK(fake_image_loads() == 0);
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        // sdm verify: the same check, the same words; and sdm import of the fatbin as a file.
        const std::string file = dir.path + "/lto.sdma", fatbin = dir.path + "/lto.fatbin";
        drop(file, archive);
        forge::write_file(fatbin, forge::fatbin(entries));
        for (const std::string& arguments : {"verify " + file, "import -q -o " + dir.path + "/imported.sdma " + fatbin}) {
            int status = 0;
            const std::string output = tool_output(arguments, &status);
            INFO(arguments << ": " << output);
            CHECK(status != 0);
            CHECK_THAT(output, Catch::Contains("entry " + std::to_string(entries.size() - 1) + " (lto_90)") &&
                                   Catch::Contains("raw LTO-IR, which nvcc never writes in a fatbin"));
        }
    }
}

TEST_CASE("a fatbin's PTX is linked under the isolation policy and the time limit: a hung link is SDM_ERROR_JIT, the driver's JIT never runs",
          "[fatbin][isolation][hostile]") {
    TempDir dir;
    fake({kH200});
    EnvGuard jit("SDM_NVJITLINK", SDM_TEST_FAKE_NVJITLINK);
    EnvGuard cubin("SDM_FAKE_NVJITLINK_CUBIN", data_path("kernels.sm_90.cubin"));
    EnvGuard limit("SDM_JIT_TIME_LIMIT", "1.5");
    int n = 0;
    for (const uint32_t isolation : {uint32_t{SDM_ISOLATION_ALWAYS}, uint32_t{SDM_ISOLATION_AUTO}}) {
        INFO("isolation " << isolation);
        std::vector<std::string> log;
        // (nvPTXCompiler, where this build has it, would compile the PTX the fake nvJitLink hangs on.)
        RuntimePtr rt = make_runtime(dir.path + "/cache", SDM_JIT_NO_PTX_COMPILER, 0, &log, 0, isolation);
        // Only PTX fits the H200 (the cubin is sm_80), as a fatbin of slow PTX would be served.
        mount(rt.get(), fatbin_archive({cubin_entry("kernels.sm_80.cubin", 80), ptx_entry(ptx_with("SDM_FAKE_JIT_SPIN " + std::to_string(n++)))}),
              "spin.sdma");
        std::string message;
        (void)info_of(rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
        CHECK_THAT(message, Catch::Contains("fatbin kernels (entry 0) of archive spin.sdma, its entry 1 (compute_90)") &&
                                Catch::Contains("ran past its time limit of 1.5 s and was killed"));
        CHECK_THAT(message, Catch::Contains("the driver's JIT compiles inside this process"));  // passed over, with why
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        CHECK(fake_image_loads() == 0);
        // The host serves on.
        mount(rt.get(), make_archive("kernels", {"sm_90"}, {"scale"}, 1, Matrix::none), "good.sdma");
        CHECK(info_of(rt.get(), 0, "scale").source == SDM_IMAGE_SOURCE_ARCHIVE_CUBIN);
    }
}

TEST_CASE("a fatbin's PTX reaches the driver's JIT only as a bare PTX entry would: SDM_JIT_NO_DRIVER and graph capture hold", "[fatbin][jit]") {
    TempDir dir;
    fake({kH200});
    const ByteVector archive = fatbin_archive({ptx_entry(fdata("kernels.compute_90.ptx"))});
    SECTION("SDM_JIT_NO_DRIVER with no other backend: SDM_ERROR_JIT, nothing compiled") {
        RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly | SDM_JIT_NO_DRIVER);
        mount(rt.get(), archive, "ptx.sdma");
        std::string message;
        (void)info_of(rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
        CHECK_THAT(message, Catch::Contains("no backend may run") && Catch::Contains("the driver's JIT is forbidden by the host"));
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        CHECK(fake_image_loads() == 0);
    }
    SECTION("the driver's JIT allowed (isolation never): it gets the PTX text, not the fatbin") {
        RuntimePtr rt = make_runtime(dir.path + "/cache", kDriverJitOnly);
        mount(rt.get(), archive, "ptx.sdma");
        CHECK(info_of(rt.get(), 0, "scale").source == SDM_IMAGE_SOURCE_DRIVER_JIT);
        CHECK(fake_calls("cuModuleLoadDataEx") == 1);  // the fake takes ELF or PTX text only
        CHECK(fake_image_loads() == 0);
    }
    SECTION("while the stream is capturing a graph: SDM_ERROR_GRAPH_CAPTURE before any JIT") {
        fake_set_capturing(true);
        RuntimePtr rt = make_runtime(dir.path + "/cache");
        mount(rt.get(), archive, "ptx.sdma");
        std::string message;
        (void)info_of(rt.get(), 0, "scale", SDM_ERROR_GRAPH_CAPTURE, &message);
        CHECK_THAT(message, Catch::Contains("needs a JIT of fatbin kernels (entry 0) of archive ptx.sdma, its entry 0 (compute_90)") &&
                                Catch::Contains("capturing a CUDA graph"));
        fake_set_capturing(false);
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        CHECK(fake_image_loads() == 0);
    }
}

TEST_CASE("the real nvJitLink on a fatbin's slow PTX, under always and auto: stopped at the time limit, the host alive", "[fatbin][isolation][nvjitlink]") {
    TempDir dir;
    fake({kH200});
    EnvGuard limit("SDM_JIT_TIME_LIMIT", "2");
    const ByteVector archive = fatbin_archive({ptx_entry(text(forge::fma_chain_ptx()))});
    for (const uint32_t isolation : {uint32_t{SDM_ISOLATION_ALWAYS}, uint32_t{SDM_ISOLATION_AUTO}}) {
        INFO("isolation " << isolation);
        RuntimePtr rt = make_runtime(dir.path + "/cache", SDM_JIT_NO_PTX_COMPILER, 0, nullptr, 0, isolation);
        mount(rt.get(), archive, "chain.sdma");
        std::string message;
        (void)info_of(rt.get(), 0, "scale", SDM_ERROR_JIT, &message);
        if (message.find("nvJitLink was not found") != std::string::npos) {
            WARN("nvJitLink is not available here");
            return;
        }
        CHECK_THAT(message, Catch::Contains("in the JIT helper") && Catch::Contains("ran past its time limit of 2.0 s and was killed"));
        CHECK(fake_calls("cuModuleLoadDataEx") == 0);
        CHECK(fake_image_loads() == 0);
    }
}
