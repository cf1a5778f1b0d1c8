// The footprint report (sdm_footprint_get, sdm_module_list_*; ABI 1.5): each loaded module's device
// bytes are its cubin's sections in device memory, computed here again by a walk of the ELF of our
// own (<elf.h>), and the totals are the sums of the entries; modules the driver's JIT loaded count
// as unknown; retired modules say so; the kernel cache counts only once it was opened; hostile
// arguments are refused.
#include <catch2/catch.hpp>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

std::vector<unsigned char> read_data(const std::string& name) {
    std::ifstream in(std::string(SDM_TEST_DATA) + "/" + name, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The cubin's SHF_ALLOC sections but shared, local and parameter memory, summed.
uint64_t expected_device_bytes(const std::vector<unsigned char>& cubin) {
    REQUIRE(cubin.size() >= sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    std::memcpy(&eh, cubin.data(), sizeof eh);
    REQUIRE(eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) <= cubin.size());
    const auto section = [&](size_t i) {
        Elf64_Shdr sh;
        std::memcpy(&sh, cubin.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
        return sh;
    };
    const Elf64_Shdr names = section(eh.e_shstrndx);
    uint64_t total = 0;
    int counted = 0;
    for (size_t i = 1; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = section(i);
        if ((sh.sh_flags & SHF_ALLOC) == 0) continue;
        const std::string name(reinterpret_cast<const char*>(cubin.data() + names.sh_offset + sh.sh_name));
        if (name.rfind(".nv.shared.", 0) == 0 || name.rfind(".nv.constant0.", 0) == 0 || name.rfind(".nv.local.", 0) == 0) continue;
        total += sh.sh_size;
        ++counted;
    }
    REQUIRE(counted >= 2);  // the kernels' code at least
    return total;
}

sdm_footprint footprint_of(sdm_runtime* rt) {
    sdm_footprint f{};
    f.struct_size = sizeof f;
    REQUIRE(sdm_footprint_get(rt, &f, nullptr) == SDM_OK);
    return f;
}

struct Entry {
    std::string module, archive;
    uint64_t device_bytes, host_bytes, references;
    uint32_t kernels, state;
};

std::vector<Entry> modules_of(sdm_runtime* rt) {
    sdm_module_list* list = nullptr;
    REQUIRE(sdm_module_list_create(rt, &list, nullptr) == SDM_OK);
    uint32_t count = 0;
    REQUIRE(sdm_module_list_count(list, &count, nullptr) == SDM_OK);
    std::vector<Entry> out;
    for (uint32_t i = 0; i < count; ++i) {
        sdm_module_entry e{};
        e.struct_size = sizeof e;
        REQUIRE(sdm_module_list_get(list, i, &e, nullptr) == SDM_OK);
        out.push_back({e.module, e.archive, e.device_bytes, e.host_bytes, e.references, e.kernels, e.state});
    }
    sdm_module_list_destroy(list);
    return out;
}

}  // namespace

TEST_CASE_METHOD(FakeRuntime, "a loaded module's device bytes are its cubin's, and the totals are the entries' sums", "[footprint]") {
    const auto bytes = make_archive("kernels", {"sm_90"});
    mount(rt.get(), bytes, "k.sdma");
    sdm_footprint f = footprint_of(rt.get());
    CHECK(f.module_count == 0);
    CHECK(f.device_bytes == 0);
    CHECK(f.archive_memory_bytes >= bytes.size());  // sdm's copy of the archive
    CHECK(f.archive_mapped_bytes == 0);
    CHECK(f.cache_bytes == 0);  // never opened: a stored cubin needs no cache

    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    const uint64_t expected = expected_device_bytes(read_data("kernels.sm_90.cubin"));
    auto entries = modules_of(rt.get());
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].module == "kernels");
    CHECK(entries[0].archive == "k.sdma");
    CHECK(entries[0].device_bytes == expected);
    CHECK(entries[0].references == 1);
    CHECK(entries[0].kernels == 1);
    CHECK(entries[0].state == SDM_MODULE_SERVING);
    sdm_kernel* axpy = kernel_of(rt.get(), "axpy");
    entries = modules_of(rt.get());
    CHECK(entries[0].kernels == 2);
    CHECK(entries[0].references == 2);

    mount(rt.get(), make_archive("chains", {"chains.sm_90.cubin=sm_90"}, {"chain1"}, 1, Matrix::none), "c.sdma");
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");
    const uint64_t chains = expected_device_bytes(read_data("chains.sm_90.cubin"));
    f = footprint_of(rt.get());
    CHECK(f.module_count == 2);
    CHECK(f.device_bytes == expected + chains);
    CHECK(f.unknown_device_modules == 0);
    entries = modules_of(rt.get());
    REQUIRE(entries.size() == 2);
    CHECK(entries[1].device_bytes == chains);
    for (sdm_kernel* k : {scale, axpy, chain}) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    CHECK(footprint_of(rt.get()).module_count == 2);  // current modules stay loaded without references
}

TEST_CASE_METHOD(FakeRuntime, "a module of an unmounted archive still held shows as retired, and leaves the footprint when released", "[footprint]") {
    mount(rt.get(), make_archive("kernels", {"sm_90"}), "k.sdma");
    sdm_kernel* held = kernel_of(rt.get(), "scale");
    REQUIRE(sdm_archive_unmount(rt.get(), "k.sdma", nullptr, nullptr) == SDM_OK);
    auto entries = modules_of(rt.get());
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].state == SDM_MODULE_RETIRED);
    CHECK(entries[0].references == 1);
    CHECK(footprint_of(rt.get()).archive_memory_bytes == 0);  // the archive is no longer mounted
    REQUIRE(sdm_kernel_release(rt.get(), held, nullptr) == SDM_OK);
    CHECK(footprint_of(rt.get()).module_count == 0);
    CHECK(footprint_of(rt.get()).device_bytes == 0);
}

TEST_CASE("a module the driver's JIT loaded has unknown device bytes; a module linked by nvJitLink has its cubin's", "[footprint]") {
    FakeRuntime f({.jit_flags = kDriverJitOnly});
    mount(f.rt.get(), make_archive("jit", {"compute_90"}), "ptx.sdma");
    CHECK(info_of(f.rt.get(), 0, "scale").source == SDM_IMAGE_SOURCE_DRIVER_JIT);
    const sdm_footprint fp = footprint_of(f.rt.get());
    CHECK(fp.module_count == 1);
    CHECK(fp.unknown_device_modules == 1);
    CHECK(fp.device_bytes == 0);

    FakeRuntime linked;
    mount(linked.rt.get(), make_archive("jit", {"compute_90"}), "ptx.sdma");
    CHECK(info_of(linked.rt.get(), 0, "scale").source == SDM_IMAGE_SOURCE_NVJITLINK);
    const sdm_footprint lf = footprint_of(linked.rt.get());
    CHECK(lf.unknown_device_modules == 0);
    CHECK(lf.device_bytes > 0);
    CHECK(lf.cache_bytes > 0);  // the link was stored, in a cache this runtime opened
}

TEST_CASE_METHOD(FakeRuntime, "footprint calls refuse what is not theirs", "[footprint][hostile]") {
    sdm_footprint f{};
    f.struct_size = 8;  // below the 1.5 size
    sdm_error* e = nullptr;
    CHECK(sdm_footprint_get(rt.get(), &f, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("sdm_footprint"));
    sdm_error_destroy(e);
    CHECK(sdm_footprint_get(rt.get(), nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_footprint_get(nullptr, &f, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_module_list_create(rt.get(), nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_module_list* list = nullptr;
    REQUIRE(sdm_module_list_create(rt.get(), &list, nullptr) == SDM_OK);
    sdm_module_entry entry{};
    entry.struct_size = sizeof entry;
    CHECK(sdm_module_list_get(list, 0, &entry, nullptr) == SDM_ERROR_INVALID_ARGUMENT);  // empty
    entry.struct_size = 4;
    CHECK(sdm_module_list_get(list, 0, &entry, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_module_list_count(list, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    rt.reset();  // the list outlives its runtime
    uint32_t count = 99;
    CHECK(sdm_module_list_count(list, &count, nullptr) == SDM_OK);
    CHECK(count == 0);
    sdm_module_list_destroy(list);
    sdm_module_list_destroy(nullptr);
}
