// A user's kernels launched and found the way their authors wrote them (ABI 1.3), through the C ABI
// and the fake driver, on tests/data/launch.sm_90.cubin (launch.cu) as `sdm import` archives it:
// 3-D grids and blocks, cooperative launches checked against the device and the occupancy,
// priorities, attributes the host adds, zero fields as defaults, plans for kernels without rules;
// module globals found, copied, missing, and after a reload; C++ names (demangled, name
// expressions, ambiguity, a 16 KiB name, hints); signatures derived from images against typed
// ones; the kernel listing across layers. tests/gpu/test_gpu_user_kernels.cpp runs the same
// kernels on a GPU.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <cuda.h>

#include "archive/cxx_names.hpp"
#include "fake_runtime.hpp"
#include "runtime/kernel/kernel_names.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

struct UserKernels : FakeRuntime {
    explicit UserKernels(FakeRuntimeOptions o = {}) : FakeRuntime(std::move(o)) { mount(rt.get(), launch_archive(), "launch.sdma"); }
    sdm_kernel* get(const char* name, sdm_status expect = SDM_OK, std::string* message = nullptr, const char* signature = nullptr) {
        sdm_kernel* k = nullptr;
        sdm_error* e = nullptr;
        const sdm_status s = sdm_kernel_get_checked(rt.get(), 0, name, signature, nullptr, &k, &e);
        if (message != nullptr) *message = sdm_error_message(e);
        if (s != expect) FAIL(name << ": " << sdm_status_string(s) << ": " << sdm_error_message(e));
        sdm_error_destroy(e);
        return k;
    }
};

sdm_plan plan_of(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz) {
    sdm_plan p{};
    p.struct_size = sizeof p;
    p.grid = gx, p.grid_y = gy, p.grid_z = gz;
    p.block = bx, p.block_y = by, p.block_z = bz;
    return p;
}

// sdm_launch with the status expected; the message.
std::string launch(const sdm_kernel* k, const sdm_plan& p, std::vector<void*> args, sdm_status expect = SDM_OK) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_launch(k, &p, nullptr, args.data(), static_cast<uint32_t>(args.size()), &e);
    std::string message = sdm_error_message(e);
    sdm_error_destroy(e);
    if (s != expect) FAIL(sdm_status_string(s) << ": " << message);
    return message;
}

}  // namespace

TEST_CASE("3-D grids and blocks, the cooperative flag and a priority reach cuLaunchKernelEx exactly", "[launch][config]") {
    UserKernels u;
    sdm_kernel* matmul = u.get("matmul_tiled");
    void* a = nullptr;
    int n = 100;
    sdm_plan p = plan_of(7, 7, 1, 16, 16, 1);
    launch(matmul, p, {&a, &a, &a, &n});
    sdm_fake_cuda_launch l = fake_last_launch();
    CHECK((l.grid[0] == 7 && l.grid[1] == 7 && l.grid[2] == 1));
    CHECK((l.block[0] == 16 && l.block[1] == 16 && l.block[2] == 1));
    CHECK(l.attribute_count == 0);  // no cluster, PDL, cooperative or priority: no attribute
    // Three dimensions everywhere, a cluster in y, a priority.
    p = plan_of(4, 6, 3, 8, 4, 2);
    p.cluster[1] = 2;
    p.priority = -3;
    launch(matmul, p, {&a, &a, &a, &n});
    l = fake_last_launch();
    CHECK((l.grid[0] == 4 && l.grid[1] == 6 && l.grid[2] == 3 && l.block[0] == 8 && l.block[1] == 4 && l.block[2] == 2));
    CHECK((l.cluster[0] == 1 && l.cluster[1] == 2 && l.cluster[2] == 1));
    CHECK(l.priority == -3);
    CHECK(l.cooperative == 0);
    // Cooperative: every block resident at once (the fake's model: 8 blocks of 256 threads per SM, 132 SMs).
    sdm_kernel* grid_sum = u.get("grid_sum");
    void* partial = nullptr;
    void* total = nullptr;
    p = plan_of(132 * 8, 1, 1, 256, 1, 1);
    p.flags = SDM_PLAN_COOPERATIVE;
    launch(grid_sum, p, {&partial, &total});
    l = fake_last_launch();
    CHECK(l.cooperative == 1);
    CHECK(l.grid[0] == 1056);
    CHECK((l.attribute_count == 1 && l.attribute_ids[0] == CU_LAUNCH_ATTRIBUTE_COOPERATIVE));
    CHECK(fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == 1);
    launch(grid_sum, p, {&partial, &total});
    CHECK(fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == 1);  // remembered per shape
}

TEST_CASE("the fake driver records the parameter buffer a launch hands the kernel, in the image's layout", "[launch][config]") {
    UserKernels u;
    fake_set_record_params(true);
    sdm_kernel* matmul = u.get("matmul_tiled");  // (const float*, const float*, float*, int): b64,b64,b64,b32
    uint64_t a = 0x7F0000001000, b = 0x7F0000002000, c = 0x7F0000003000;
    int32_t n = -7;
    launch(matmul, plan_of(1, 1, 1, 32, 1, 1), {&a, &b, &c, &n});
    std::vector<unsigned char> expected(28);
    std::memcpy(expected.data(), &a, 8);
    std::memcpy(expected.data() + 8, &b, 8);
    std::memcpy(expected.data() + 16, &c, 8);
    std::memcpy(expected.data() + 24, &n, 4);
    CHECK(fake_last_params() == expected);
    fake_set_record_params(false);
}

TEST_CASE("a cooperative grid that cannot be co-resident is refused with the figures, not launched", "[launch][config][hostile]") {
    UserKernels u;
    sdm_kernel* grid_sum = u.get("grid_sum");
    void* partial = nullptr;
    void* total = nullptr;
    sdm_plan p = plan_of(132 * 8 + 1, 1, 1, 256, 1, 1);
    p.flags = SDM_PLAN_COOPERATIVE;
    const int64_t launched = fake_calls("cuLaunchKernelEx");
    const std::string why = launch(grid_sum, p, {&partial, &total}, SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(why, Catch::Contains("kernel grid_sum cannot launch cooperatively with grid 1057, block 256") &&
                        Catch::Contains("its 1057 blocks cannot all be resident on device 0 (NVIDIA H200)") &&
                        Catch::Contains("8 block(s) of 256 threads and 0 B of dynamic shared memory per SM x 132 SMs = 1056") &&
                        Catch::Contains("launch at most 1056 blocks"));
    // In two dimensions the product counts; a block that fits nowhere (the driver says 0 per SM) too.
    p = plan_of(33, 33, 1, 256, 1, 1);
    p.flags = SDM_PLAN_COOPERATIVE;
    CHECK_THAT(launch(grid_sum, p, {&partial, &total}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("its 1089 blocks cannot all be resident"));
    fake_set_occupancy(0);
    p = plan_of(1, 1, 1, 1024, 1, 1);
    p.flags = SDM_PLAN_COOPERATIVE;
    CHECK_THAT(launch(grid_sum, p, {&partial, &total}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("which holds 0 block(s) of 1024 threads"));
    fake_set_occupancy(std::nullopt);
    CHECK(fake_calls("cuLaunchKernelEx") == launched);
    // The same grid without the flag is the host's business: it launches.
    launch(grid_sum, plan_of(132 * 8 + 1, 1, 1, 256, 1, 1), {&partial, &total});
}

TEST_CASE("a cooperative launch on a device without them is refused naming the attribute", "[launch][config][hostile]") {
    UserKernels u({.devices = {{"NVIDIA H200 (no cooperative launch)", 9, 0, 232448, 132, 62914560}}});
    sdm_kernel* grid_sum = u.get("grid_sum");
    void* partial = nullptr;
    void* total = nullptr;
    sdm_plan p = plan_of(4, 1, 1, 32, 1, 1);
    p.flags = SDM_PLAN_COOPERATIVE;
    CHECK_THAT(launch(grid_sum, p, {&partial, &total}, SDM_ERROR_INVALID_ARGUMENT),
               Catch::Contains("kernel grid_sum cannot launch cooperatively on device 0") &&
                   Catch::Contains("does not support cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)"));
    launch(grid_sum, plan_of(4, 1, 1, 32, 1, 1), {&partial, &total});  // not cooperative: launches
}

TEST_CASE("dimensions out of range are refused naming the dimension, its value and its limit", "[launch][config][hostile]") {
    UserKernels u;
    sdm_kernel* matmul = u.get("matmul_tiled");
    void* a = nullptr;
    int n = 1;
    const std::vector<std::pair<sdm_plan, std::string>> cases = {
        {plan_of(0, 1, 1, 16, 1, 1), "grid x of 0 (1..2147483647)"},
        {plan_of(2147483648u, 1, 1, 16, 1, 1), "grid x of 2147483648 (1..2147483647)"},
        {plan_of(1, 65536, 1, 16, 1, 1), "grid y of 65536 (1..65535)"},
        {plan_of(1, 1, 4294967295u, 16, 1, 1), "grid z of 4294967295 (1..65535)"},
        {plan_of(1, 1, 1, 0, 1, 1), "block x of 0 (1..1024)"},
        {plan_of(1, 1, 1, 1, 1025, 1), "block y of 1025 (1..1024)"},
        {plan_of(1, 1, 1, 1, 1, 65), "block z of 65 (1..64)"},
        {plan_of(1, 1, 1, 32, 32, 2), "block 32x32x2 of 2048 threads (at most 1024)"},
        {plan_of(1024, 1024, 1024, 1024, 1024, 64), "block 1024x1024x64 of 67108864 threads (at most 1024)"},
    };
    const int64_t launched = fake_calls("cuLaunchKernelEx");
    for (const auto& [p, why] : cases) {
        INFO(why);
        CHECK_THAT(launch(matmul, p, {&a, &a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("kernel matmul_tiled cannot launch with") && Catch::Contains(why));
    }
    CHECK(fake_calls("cuLaunchKernelEx") == launched);
    sdm_plan p = plan_of(1, 1, 1, 16, 1, 1);
    p.priority = 3;  // H200's range is -5 (greatest) to 0
    CHECK_THAT(launch(matmul, p, {&a, &a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT),
               Catch::Contains("launch priority 3 is outside the context's range -5 (greatest) to 0 (least"));
}

TEST_CASE("zero fields are the defaults: {0} with a grid and a block launches; a 1.1-sized plan launches in one dimension", "[launch][config][abi]") {
    UserKernels u;
    sdm_kernel* k = u.get("scale_by_table");
    void* a = nullptr;
    int n = 1;
    sdm_plan p{};  // cluster 0x0x0, y and z 0, priority 0, no chain
    p.struct_size = sizeof p;
    p.grid = 3;
    p.block = 64;
    launch(k, p, {&a, &a, &n});
    sdm_fake_cuda_launch l = fake_last_launch();
    CHECK((l.grid[0] == 3 && l.grid[1] == 1 && l.grid[2] == 1 && l.block[0] == 64 && l.block[1] == 1 && l.block[2] == 1));
    CHECK(l.attribute_count == 0);  // no cluster attribute for 0x0x0
    // A host of ABI 1.1: the struct ends at reserved0; what follows in memory is not read.
    struct {
        sdm_plan plan;
        unsigned char garbage[64];
    } old{};
    old.plan.struct_size = 48;
    old.plan.grid = 5;
    old.plan.block = 32;
    old.plan.flags = SDM_PLAN_COOPERATIVE;  // unknown to 1.1: bit 1 is not read from a 1.1 struct
    std::memset(old.garbage, 0xff, sizeof old.garbage);
    old.plan.grid_y = old.plan.block_z = 0xffffffffu;
    launch(k, old.plan, {&a, &a, &n});
    l = fake_last_launch();
    CHECK((l.grid[0] == 5 && l.grid[1] == 1 && l.grid[2] == 1 && l.block[2] == 1));
    CHECK(l.cooperative == 0);
}

TEST_CASE("launch attributes the host adds are passed on after sdm's own; repeats and too many are refused", "[launch][config]") {
    UserKernels u;
    sdm_kernel* k = u.get("scale_by_table");
    void* a = nullptr;
    int n = 1;
    CUlaunchAttribute extra[2]{};
    extra[0].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
    extra[0].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    extra[1].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    extra[1].value.sharedMemCarveout = 50;
    sdm_launch_attributes attrs{};
    attrs.struct_size = sizeof attrs;
    attrs.type = SDM_CHAIN_LAUNCH_ATTRIBUTES;
    attrs.attributes = extra;
    attrs.count = 2;
    sdm_chain unknown{};  // a later minor's extension: skipped
    unknown.struct_size = sizeof unknown;
    unknown.type = 9999;
    unknown.next = reinterpret_cast<const sdm_chain*>(&attrs);
    sdm_plan p = plan_of(2, 1, 1, 32, 1, 1);
    p.priority = -1;
    p.next = &unknown;
    launch(k, p, {&a, &a, &n});
    const sdm_fake_cuda_launch l = fake_last_launch();
    REQUIRE(l.attribute_count == 3);
    CHECK(l.attribute_ids[0] == CU_LAUNCH_ATTRIBUTE_PRIORITY);
    CHECK(l.attribute_ids[1] == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
    CHECK(l.attribute_ids[2] == CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
    // One a plan field sets, more than 16, a struct too small, a cycle.
    extra[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    CHECK_THAT(launch(k, p, {&a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("launch attribute 2 in sdm_launch_attributes is one sdm_plan sets"));
    std::vector<CUlaunchAttribute> many(17, extra[0]);
    attrs.attributes = many.data();
    attrs.count = 17;
    CHECK_THAT(launch(k, p, {&a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("17 attributes in all, at most 16"));
    attrs.count = 1;
    attrs.struct_size = 8;
    CHECK_THAT(launch(k, p, {&a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("sdm_launch_attributes.struct_size is 8"));
    attrs.struct_size = sizeof attrs;
    attrs.count = 0;
    attrs.next = &unknown;  // attrs -> unknown -> attrs -> ...
    CHECK_THAT(launch(k, p, {&a, &a, &n}, SDM_ERROR_INVALID_ARGUMENT), Catch::Contains("a chain of more than 64 extensions"));
}

TEST_CASE("sdm_plan_for_elements: the driver's block size, blocks covering the elements", "[launch][config][plan]") {
    UserKernels u;
    sdm_kernel* k = u.get("scale_by_table");
    sdm_plan p{};
    p.struct_size = sizeof p;
    sdm_error* e = nullptr;
    REQUIRE(sdm_plan_for_elements(k, 1000000, 0, &p, &e) == SDM_OK);
    CHECK(p.block == 1024);  // the fake's suggestion: the largest block of the most resident threads
    CHECK(p.grid == 977);    // ceil(1000000 / 1024)
    CHECK((p.grid_y == 1 && p.grid_z == 1 && p.block_y == 1 && p.block_z == 1));
    CHECK(p.rule == -1);
    CHECK(p.occupancy == 2);
    CHECK(fake_calls("cuOccupancyMaxPotentialBlockSize") == 1);
    void* a = nullptr;
    int n = 1000000;
    launch(k, p, {&a, &a, &n});
    CHECK(sdm_plan_for_elements(k, 0, 0, &p, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("a plan for 0 elements"));
    sdm_error_destroy(e);
    CHECK(sdm_plan_for_elements(k, uint64_t{1} << 62, 0, &p, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("blocks, over the grid's 2147483647 in x"));
    sdm_error_destroy(e);
    CHECK(sdm_plan_for_elements(k, 10, 300000, &p, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("300000 B of dynamic shared memory per block, over the 232448 B"));
    sdm_error_destroy(e);
}

TEST_CASE("globals: found with their sizes, written and read on a stream, missing, a kernel's name, out of range", "[globals]") {
    UserKernels u;
    sdm_kernel* k = u.get("scale_by_table");
    uint64_t address = 0, bytes = 0;
    sdm_error* e = nullptr;
    REQUIRE(sdm_global_get(k, "coefficients", &address, &bytes, &e) == SDM_OK);
    CHECK(address != 0);
    CHECK(bytes == 64);  // __constant__ float coefficients[16]
    REQUIRE(sdm_global_get(k, "launches", nullptr, &bytes, &e) == SDM_OK);
    CHECK(bytes == 4);
    const int64_t lookups = fake_calls("cuModuleGetGlobal");
    float in[16], out[16] = {};
    for (int i = 0; i < 16; ++i) in[i] = static_cast<float>(i) * 0.5f;
    REQUIRE(sdm_global_write(k, "coefficients", 0, in, sizeof in, nullptr, &e) == SDM_OK);
    REQUIRE(sdm_global_read(k, "coefficients", 0, out, sizeof out, nullptr, &e) == SDM_OK);
    CHECK(std::memcmp(in, out, sizeof in) == 0);
    REQUIRE(sdm_global_read(k, "coefficients", 60, out, 4, nullptr, &e) == SDM_OK);  // the last element
    CHECK(out[0] == 7.5f);
    CHECK(fake_calls("cuModuleGetGlobal") == lookups);  // remembered per module
    // A name the module does not define, a kernel's, an empty one, a range past the end.
    CHECK(sdm_global_get(k, "coefficient", &address, &bytes, &e) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("module launch of archive launch.sdma (as loaded for kernel scale_by_table) defines no global variable coefficient"));
    sdm_error_destroy(e);
    CHECK(sdm_global_get(k, "grid_sum", &address, &bytes, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("grid_sum is a kernel of module launch, not a global variable"));
    sdm_error_destroy(e);
    CHECK(sdm_global_get(k, "", &address, &bytes, &e) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error_destroy(e);
    CHECK(sdm_global_write(k, "coefficients", 60, in, 8, nullptr, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("global coefficients of module launch is 64 bytes: a copy of 8 bytes at offset 60 runs past it"));
    sdm_error_destroy(e);
    CHECK(sdm_global_write(k, "coefficients", UINT64_MAX, in, 8, nullptr, &e) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error_destroy(e);
    const std::string huge(65536, 'g');  // one past the longest name an archive may list
    CHECK(sdm_global_get(k, huge.c_str(), &address, &bytes, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("a global's name of 65536 bytes (1..65535)"));
    sdm_error_destroy(e);
}

TEST_CASE("globals after a reload: the new image's on the next fetch, the old handle's until it is released", "[globals][reload]") {
    FakeRuntime f;
    const std::string path = f.dir.path + "/launch.sdma";
    drop(path, launch_archive());
    REQUIRE(sdm_archive_mount_file(f.rt.get(), path.c_str(), nullptr) == SDM_OK);
    sdm_kernel* old = kernel_of(f.rt.get(), "scale_by_table");
    const float one = 1.f;
    REQUIRE(sdm_global_write(old, "coefficients", 0, &one, 4, nullptr, nullptr) == SDM_OK);
    uint64_t old_address = 0;
    REQUIRE(sdm_global_get(old, "coefficients", &old_address, nullptr, nullptr) == SDM_OK);
    drop(path, launch_archive("2"));  // a new version of the archive: the same cubin, other bytes
    uint32_t reloaded = 0;
    REQUIRE(sdm_runtime_reload(f.rt.get(), &reloaded, nullptr) == SDM_OK);
    REQUIRE(reloaded == 1);
    sdm_kernel* fresh = kernel_of(f.rt.get(), "scale_by_table");
    uint64_t new_address = 0;
    REQUIRE(sdm_global_get(fresh, "coefficients", &new_address, nullptr, nullptr) == SDM_OK);
    CHECK(new_address != old_address);  // another image, another variable
    float value = -1.f;
    REQUIRE(sdm_global_read(fresh, "coefficients", 0, &value, 4, nullptr, nullptr) == SDM_OK);
    CHECK(value == 0.f);  // its initial value, not what was written to the old one
    REQUIRE(sdm_global_read(old, "coefficients", 0, &value, 4, nullptr, nullptr) == SDM_OK);
    CHECK(value == 1.f);  // the old handle still reaches the old image
    REQUIRE(sdm_kernel_release(f.rt.get(), old, nullptr) == SDM_OK);
    sdm_error* e = nullptr;
    CHECK(sdm_global_get(old, "coefficients", &old_address, nullptr, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("was released and its module unloaded"));
    sdm_error_destroy(e);
}

TEST_CASE("C++ names: the declaration as c++filt prints it, a name expression, a base name, whitespace normalised", "[names]") {
    UserKernels u;
    sdm_kernel_info info{};
    info.struct_size = sizeof info;
    const auto name_of = [&](const char* asked) {
        REQUIRE(sdm_kernel_info_get(u.get(asked), &info, nullptr) == SDM_OK);
        return std::string(info.name);
    };
    const std::string fill_f = "_ZN8sdm_test4fillIfLi256EEEvPT_S1_", reduce = "_ZN8sdm_test6reduceIiEEvPKT_PS1_i";
    CHECK(name_of("void sdm_test::fill<float, 256>(float*, float)") == fill_f);  // c++filt's line
    CHECK(name_of("sdm_test::fill<float, 256>(float*, float)") == fill_f);       // without the return type
    CHECK(name_of("fill<float,256>(float *, float)") == fill_f);
    CHECK(name_of("sdm_test::fill<float, 256>") == fill_f);                      // a CuPy name expression
    CHECK(name_of("  fill < float , 256 > ") == fill_f);
    CHECK(name_of("fill<int, 256>") == "_ZN8sdm_test4fillIiLi256EEEvPT_S1_");
    CHECK(name_of("sdm_test::reduce<int>(int const*, int*, int)") == reduce);
    CHECK(name_of("reduce") == reduce);  // one instantiation has that name
    CHECK(name_of(fill_f.c_str()) == fill_f);  // the mangled name as listed
    CHECK(name_of("matmul_tiled") == "matmul_tiled");
    // Fetched again by another spelling: the same handle.
    CHECK(u.get("sdm_test::fill<float, 256>") == u.get(fill_f.c_str()));
}

TEST_CASE("C++ names: ambiguity lists the candidates; an unparsable expression and a near miss are explained", "[names][hostile]") {
    UserKernels u;
    std::string why;
    (void)u.get("fill", SDM_ERROR_AMBIGUOUS, &why);
    CHECK_THAT(why, Catch::Contains("kernel name 'fill' matches 2 kernels") && Catch::Contains("void sdm_test::fill<float, 256>(float*, float) (_ZN8sdm_test4fillIfLi256EEEvPT_S1_)") &&
                        Catch::Contains("void sdm_test::fill<int, 256>(int*, int) (_ZN8sdm_test4fillIiLi256EEEvPT_S1_)"));
    (void)u.get("sdm_test::fill<float", SDM_ERROR_INVALID_ARGUMENT, &why);
    CHECK_THAT(why, Catch::Contains("kernel name 'sdm_test::fill<float' does not parse as a C++ name: an unclosed '<'"));
    (void)u.get("fill<float, 256>)", SDM_ERROR_INVALID_ARGUMENT, &why);
    CHECK_THAT(why, Catch::Contains("a ')' without its '('"));
    (void)u.get("fil<float, 256>", SDM_ERROR_NOT_FOUND, &why);
    CHECK_THAT(why, Catch::Contains("kernel fil<float, 256> is in no mounted archive (mounted: launch.sdma)") &&
                        Catch::Contains("the closest: void sdm_test::fill<") && Catch::Contains("sdm_kernel_list_create or `sdm ls --demangle ARCHIVE`"));
    (void)u.get("matmul_tild", SDM_ERROR_NOT_FOUND, &why);
    CHECK_THAT(why, Catch::Contains("the closest: matmul_tiled"));
    // A 16 KiB name: not found in bounded time, shown shortened.
    const std::string long_name = "ns::k<" + std::string(16 * 1024, 'x') + ">";
    (void)u.get(long_name.c_str(), SDM_ERROR_NOT_FOUND, &why);
    CHECK_THAT(why, Catch::Contains("... (16391 bytes) is in no mounted archive"));
    CHECK(why.size() < 2048);
}

TEST_CASE("a 16 KiB kernel name is fetched and listed as it is", "[names]") {
    FakeRuntime f;
    mount(f.rt.get(), make_archive("long", {"kernels_long.sm_90.cubin=sm_90"}, {"long_" + std::string(16384 - 5, 'x')}, 1, Matrix::none), "long.sdma");
    const std::string name = "long_" + std::string(16384 - 5, 'x');
    (void)kernel_of(f.rt.get(), name.c_str());
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(f.rt.get(), SDM_LIST_SERVED, &list, nullptr) == SDM_OK);
    sdm_kernel_entry entry{};
    entry.struct_size = sizeof entry;
    REQUIRE(sdm_kernel_list_get(list, 0, &entry, nullptr) == SDM_OK);
    CHECK(std::string(entry.name) == name);
    CHECK(std::string(entry.demangled).empty());  // extern "C"
    sdm_kernel_list_destroy(list);
}

TEST_CASE("derived signatures agree with typed ones of their layout; the first parameter that differs is named", "[names][signatures]") {
    UserKernels u;
    std::string why;
    // scale_by_table(const float*, float*, int) imported as b64,b64,b32.
    (void)u.get("scale_by_table", SDM_OK, nullptr, "ptr,ptr,i32");
    (void)u.get("scale_by_table", SDM_OK, nullptr, "u64, ptr, f32");  // b32 takes any 4-byte type
    (void)u.get("sdm_test::fill<float, 256>", SDM_OK, nullptr, "ptr,f32");
    (void)u.get("scale_by_table", SDM_ERROR_MISMATCH, &why, "ptr,ptr,i64");
    CHECK_THAT(why, Catch::Contains("kernel scale_by_table of archive launch.sdma: parameter 2 is b32 (4 bytes at offset 16) in the archive's signature (b64,b64,b32), "
                                    "but the host passes i64 (8 bytes at offset 16) in (ptr,ptr,i64)") &&
                        Catch::Contains("derived from the image") && !Catch::Contains("Use an archive built for this host"));
    (void)u.get("scale_by_table", SDM_ERROR_MISMATCH, &why, "ptr,ptr");
    CHECK_THAT(why, Catch::Contains("takes 3 parameter(s) (b64,b64,b32), but the host was built for 2 (ptr,ptr)"));
}

TEST_CASE("the kernel listing: one archive's (shadowed names marked) or what the runtime serves, across layers", "[names][listing]") {
    FakeRuntime f;
    mount(f.rt.get(), make_archive("one", {"sm_90"}, {"axpy", "scale"}, 1, Matrix::none), "base.sdma");
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    mount(f.rt.get(), make_archive("two", {"sm_90"}, {"scale"}, 1, Matrix::none), "overlay.sdma");
    const auto names = [&](uint32_t archive) {
        sdm_kernel_list* list = nullptr;
        sdm_error* e = nullptr;
        REQUIRE(sdm_kernel_list_create(f.rt.get(), archive, &list, &e) == SDM_OK);
        uint32_t n = 0;
        REQUIRE(sdm_kernel_list_count(list, &n, nullptr) == SDM_OK);
        std::vector<std::string> out;
        for (uint32_t i = 0; i < n; ++i) {
            sdm_kernel_entry entry{};
            entry.struct_size = sizeof entry;
            REQUIRE(sdm_kernel_list_get(list, i, &entry, nullptr) == SDM_OK);
            out.push_back(std::string(entry.name) + "@" + std::to_string(entry.archive_index) + (entry.shadowed ? " shadowed" : "") + " " + entry.signature + " " +
                          entry.targets + (entry.demangled[0] != '\0' ? std::string(" = ") + entry.demangled : ""));
        }
        sdm_kernel_entry past{};
        past.struct_size = sizeof past;
        CHECK(sdm_kernel_list_get(list, n, &past, &e) == SDM_ERROR_INVALID_ARGUMENT);
        sdm_error_destroy(e);
        sdm_kernel_list_destroy(list);
        return out;
    };
    const auto base = names(0);
    CHECK(base == std::vector<std::string>{"axpy@0 ptr sm_90", "scale@0 shadowed ptr sm_90"});
    const auto served = names(SDM_LIST_SERVED);
    REQUIRE(served.size() == 8);  // axpy, scale (the overlay's), the launch archive's six
    CHECK(served[0] == "_ZN8sdm_test4fillIfLi256EEEvPT_S1_@1 b64,b32 sm_90 = void sdm_test::fill<float, 256>(float*, float)");
    CHECK(served[3] == "axpy@0 ptr sm_90");
    CHECK(served[6] == "scale@2 ptr sm_90");
    sdm_kernel_list* list = nullptr;
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_list_create(f.rt.get(), 3, &list, &e) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(sdm_error_message(e), Catch::Contains("there is no mounted archive 3 (3 mounted"));
    sdm_error_destroy(e);
    sdm_kernel_list_destroy(nullptr);
}

namespace {

// A mangled name of `levels` template instantiations, each with two back-references to the one
// before: `levels` * ~10 bytes that demangle to 2^levels times as many (a demangler bomb).
std::string exponential_name(int levels, const std::string& function = "f") {
    const auto seq = [](size_t i) {
        if (i == 0) return std::string("S_");
        std::string digits;
        for (--i;; i /= 36) {
            digits.insert(digits.begin(), "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 36]);
            if (i < 36) break;
        }
        return "S" + digits + "_";
    };
    std::string s = "_Z" + std::to_string(function.size()) + function + "1a";
    size_t current = 0, next = 1;
    for (int k = 0; k < levels; ++k) {
        const std::string name = "t" + std::to_string(k);
        s += std::to_string(name.size()) + name + "I" + seq(current) + seq(current) + "E";
        current = next + 1;
        next += 2;
    }
    return s;
}

}  // namespace

TEST_CASE("a demangler bomb in an archive's kernel names: demangled in the helper, left out, logged; the other names still index", "[names][hostile]") {
    if (kSanitized) {  // a sanitizer build sets no address-space limit on the helper: the bomb would take the machine's memory
        WARN("skipped under a sanitizer");
        return;
    }
    const std::string bomb = exponential_name(40);
    REQUIRE(bomb.size() < 1024);  // short enough for the demangler to try: 2^40 times longer demangled
    setenv("SDM_JIT_TIME_LIMIT", "2", 1);  // the helper's limit (the demangler's is at most 10 s)
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    unsetenv("SDM_JIT_TIME_LIMIT");
    mount(f.rt.get(), make_archive("m", {"sm_90"}, {bomb, "_ZN8sdm_test4fillIfLi256EEEvPT_S1_", "_ZN8sdm_test4fillIiLi256EEEvPT_S1_"}, 1, Matrix::none),
          "bomb.sdma");
    sdm_kernel_list* list = nullptr;
    REQUIRE(sdm_kernel_list_create(f.rt.get(), 0, &list, nullptr) == SDM_OK);
    std::vector<std::string> demangled;
    for (uint32_t i = 0; i < 3; ++i) {
        sdm_kernel_entry entry{};
        entry.struct_size = sizeof entry;
        REQUIRE(sdm_kernel_list_get(list, i, &entry, nullptr) == SDM_OK);
        demangled.emplace_back(entry.demangled);
    }
    sdm_kernel_list_destroy(list);
    CHECK(demangled[0].empty());  // the bomb ("_Z1f..." sorts first): not demangled
    CHECK(demangled[1] == "void sdm_test::fill<float, 256>(float*, float)");
    CHECK(demangled[2] == "void sdm_test::fill<int, 256>(int*, int)");
    CHECK(count_containing(f.log, "1 kernel name(s) of archive bomb.sdma were not demangled (they are found by their mangled names only): the demangler in the JIT helper") == 1);
    for (const auto& line : f.log)
        if (line.find("not demangled") != std::string::npos) INFO(line);
    // The other names are found by their C++ spelling; the bomb by its mangled name.
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    CHECK(sdm_kernel_get(f.rt.get(), 0, "fill", nullptr, &k, &e) == SDM_ERROR_AMBIGUOUS);
    sdm_error_destroy(e);
}

namespace {

// sdm_kernel_get's status for `name`; its message in `message`.
sdm_status lookup(sdm_runtime* rt, const std::string& name, std::string& message) {
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_kernel_get(rt, 0, name.c_str(), nullptr, &k, &e);
    message = sdm_error_message(e);
    sdm_error_destroy(e);
    return s;
}

// Whether `name` resolves to a kernel an archive lists: the archives these tests make list kernels
// their image lacks, so the fetch of one it resolves to is that error, not "in no mounted archive".
bool resolves(sdm_runtime* rt, const std::string& name) {
    std::string message;
    const sdm_status s = lookup(rt, name, message);
    INFO(message);
    return s == SDM_OK || message.find("lacks kernel(s)") != std::string::npos;
}

}  // namespace

TEST_CASE("a mangled name no archive lists is not demangled: not found at once, its hint from the mangled names", "[names][hostile]") {
    // A demangler bomb of about 330 bytes (2^30 times longer demangled: minutes and gigabytes in the
    // demangler), its base name "fil" near the archive's "fill".
    const std::string bomb = exponential_name(30, "fil");
    REQUIRE(bomb.size() > 300);
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    mount(f.rt.get(), launch_archive(), "launch.sdma");
    std::string why;
    CHECK(lookup(f.rt.get(), bomb, why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("is in no mounted archive (mounted: launch.sdma); the closest: _ZN8sdm_test4fillI"));
    CHECK(count_containing(f.log, "demangling") == 0);  // no index was built for the hint: no helper ran
    // The base name of a mangled symbol, parsed without the demangler.
    CHECK(sdm::archive::mangled_base_name("_ZN8sdm_test4fillIfLi256EEEvPT_S1_") == "fill");
    CHECK(sdm::archive::mangled_base_name("_ZN8sdm_test6reduceIiEEvPKT_PS1_i") == "reduce");
    CHECK(sdm::archive::mangled_base_name("_ZN2ns1AIN3std6vectorIiEEE3runILi4EEEvv") == "run");
    CHECK(sdm::archive::mangled_base_name("_Z6kernelPf") == "kernel");
    CHECK(sdm::archive::mangled_base_name(bomb) == "fil");
    CHECK(sdm::archive::mangled_base_name("matmul_tiled") == "matmul_tiled");
    CHECK(sdm::archive::mangled_base_name("_ZN999999999999999999999") == "_ZN999999999999999999999");  // a length past the end: no name
    // A C++ spelling still builds the index, and the hint then shows the declarations.
    CHECK(lookup(f.rt.get(), "fil<float, 256>", why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("the closest: void sdm_test::fill<"));
    CHECK(lookup(f.rt.get(), bomb, why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("the closest: void sdm_test::fill<"));
}

TEST_CASE("names that keep the demangler busy: one archive's demangling has a total time budget, paid once", "[names][hostile]") {
    if (kSanitized) {  // a sanitizer build sets no address-space limit on the helper: a bomb would take the machine's memory
        WARN("skipped under a sanitizer");
        return;
    }
    setenv("SDM_JIT_TIME_LIMIT", "1", 1);  // each helper run's limit; the archive's total is twice that
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    unsetenv("SDM_JIT_TIME_LIMIT");
    std::vector<std::string> names;
    for (int i = 0; i < 6; ++i) names.push_back(exponential_name(40, "b" + std::to_string(i)));  // each keeps a run busy past its limit
    names.push_back("_ZN8sdm_test4fillIfLi256EEEvPT_S1_");  // sorts after the bombs
    mount(f.rt.get(), make_archive("m", {"sm_90"}, names, 1, Matrix::none), "busy.sdma");
    std::string why;
    CHECK(lookup(f.rt.get(), "no_such_kernel<int>", why) == SDM_ERROR_NOT_FOUND);
    // Six names that each take a run's whole limit: the 2 s budget ends after two or three runs,
    // not six (nor 60 s of a 10 s limit each).
    const int runs = count_containing(f.log, "kernel name(s) of archive busy.sdma in the JIT helper");
    CHECK(runs >= 2);
    CHECK(runs <= 3);
    CHECK(count_containing(f.log, "7 kernel name(s) of archive busy.sdma were not demangled (they are found by their mangled names only)") == 1);
    CHECK(count_containing(f.log, "the archive's demangling time budget of 2000 ms was spent") == 1);
    // The index is built: another lookup (and a listing) runs no helper again.
    CHECK(lookup(f.rt.get(), "fill<float, 256>", why) == SDM_ERROR_NOT_FOUND);  // fill was left out by the budget...
    CHECK_THAT(why, Catch::Contains("the closest: _ZN8sdm_test4fillIfLi256EEEvPT_S1_"));  // ...and is still near, by its mangled name
    CHECK(demangled_listing(f.rt.get(), 0).size() == 7);
    CHECK(count_containing(f.log, "kernel name(s) of archive busy.sdma in the JIT helper") == runs);
    CHECK(resolves(f.rt.get(), "_ZN8sdm_test4fillIfLi256EEEvPT_S1_"));  // found by its mangled name
}

TEST_CASE("names that demangle to much: the archive's demangled bytes stay within a budget of its names' size", "[names][hostile]") {
    // 40 names of about 128 bytes that each demangle to about 61 KB: 2.4 MB demangled of 5 KB.
    std::vector<std::string> names;
    size_t mangled_bytes = 0;
    for (int i = 0; i < 40; ++i) {
        names.push_back(exponential_name(12, "g" + std::to_string(100 + i)));
        mangled_bytes += names.back().size();
    }
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    mount(f.rt.get(), make_archive("m", {"sm_90"}, names, 1, Matrix::none), "wide.sdma");
    const auto demangled = demangled_listing(f.rt.get(), 0);
    REQUIRE(demangled.size() == 40);
    size_t bytes = 0, kept = 0;
    for (const auto& d : demangled) {
        bytes += d.size();
        kept += d.empty() ? 0 : 1;
    }
    const size_t budget = sdm::runtime::demangled_bytes_budget(mangled_bytes);
    CHECK(budget == (size_t{1} << 20) + 16 * mangled_bytes);
    CHECK(bytes <= budget);
    CHECK(kept >= 10);  // the budget is spent on names, not refused at once
    CHECK(kept < 40);
    CHECK(demangled[0].starts_with("g100(a, t0<a, a>"));
    CHECK(count_containing(f.log, "kernel name(s) of archive wide.sdma were not demangled (they are found by their mangled names only): " +
                                      std::to_string(40 - kept) + " more: their demangled names would pass the archive's budget of") == 1);
    // The names left out are found by their mangled names.
    CHECK(resolves(f.rt.get(), names.back()));
    CHECK(sdm::runtime::demangled_bytes_budget(size_t{1} << 40) == size_t{64} << 20);  // the hard cap
}

TEST_CASE("deeply qualified names index a bounded number of spellings each", "[names][hostile]") {
    // 200 levels (the demangler's own guard refuses much longer symbols): every qualification
    // indexed would be 200 keys of each level per name, each up to the name's length.
    const auto deep = [](const std::string& leaf) {
        std::string s = "_ZN";
        for (int i = 0; i < 200; ++i) s += std::to_string(std::to_string(i).size() + 1) + "n" + std::to_string(i);
        return s + std::to_string(leaf.size()) + leaf + "Ev";
    };
    std::string qualified;
    for (int i = 0; i < 200; ++i) qualified += "n" + std::to_string(i) + "::";
    const std::string declaration = qualified + "f(int)";  // the spellings view it
    const auto spellings = sdm::archive::cxx_spellings(declaration);
    CHECK(spellings.signatures.size() == sdm::archive::kMaxQualifications);
    CHECK(spellings.expressions.size() == sdm::archive::kMaxQualifications);
    CHECK(spellings.signatures.front() == qualified + "f(int)");  // the whole name
    CHECK(spellings.signatures.back() == "f(int)");             // and the shortest
    FakeRuntime f({.jit_isolation = SDM_ISOLATION_AUTO});
    mount(f.rt.get(), make_archive("m", {"sm_90"}, {deep("f"), deep("g")}, 1, Matrix::none), "deep.sdma");
    REQUIRE(demangled_listing(f.rt.get(), 0).front() == qualified + "f()");
    CHECK(resolves(f.rt.get(), qualified + "f()"));  // the whole declaration
    CHECK(resolves(f.rt.get(), "n198::n199::f()"));  // a short qualification
    CHECK(resolves(f.rt.get(), "g"));                // the name expression of the shortest qualification
    CHECK_FALSE(resolves(f.rt.get(), qualified.substr(qualified.find("n100::")) + "f()"));  // 100 levels: not indexed
    std::string why;
    CHECK(lookup(f.rt.get(), qualified.substr(qualified.find("n100::")) + "f()", why) == SDM_ERROR_NOT_FOUND);
    CHECK_THAT(why, Catch::Contains("is in no mounted archive"));
}

TEST_CASE("a demangler run that answers every name but ends badly: each name is taken, nothing is read past them", "[names][hostile]") {
    // A helper that writes more results than it was asked for, then exits 1: run_demangler judges
    // such a run incomplete, and the caller must not look for a name it died on past the last.
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    const std::string helper = f.dir.path + "/answers-then-fails";
    {
        std::ofstream script(helper);
        script << "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do printf 'x\\000' >&4; done\nexit 1\n";
    }
    std::filesystem::permissions(helper, std::filesystem::perms::owner_all);
    setenv("SDM_JIT_HELPER", helper.c_str(), 1);
    mount(f.rt.get(), make_archive("m", {"sm_90"}, {"_ZN8sdm_test4fillIfLi256EEEvPT_S1_", "_ZN8sdm_test4fillIiLi256EEEvPT_S1_"}, 1, Matrix::none), "ends.sdma");
    const auto demangled = demangled_listing(f.rt.get(), 0);
    unsetenv("SDM_JIT_HELPER");
    CHECK(demangled == std::vector<std::string>{"x", "x"});  // what the helper answered, for each name asked
    CHECK(count_containing(f.log, "kernel name(s) of archive ends.sdma in the JIT helper") == 1);
    CHECK(count_containing(f.log, "were not demangled") == 0);
}
