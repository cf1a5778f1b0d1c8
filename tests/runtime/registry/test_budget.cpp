// A device-memory budget (SDM_DEVICE_MEMORY_BUDGET, sdm_runtime_params.device_memory_budget; ABI
// 1.5): a load past it evicts the least recently used idle module of the device, never one in use,
// captured, or whose CUfunction the host took; the evicted module's handles stay the host's and
// reload it at their next use (the log says so); its queued work finishes before it is unloaded.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <map>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

// Three archives, one module each, of the test cubins: kernels, chains, launch.
struct Archives {
    sdm::ByteVector kernels = make_archive("kernels", {"sm_90"}, {"scale", "axpy"}, 1, Matrix::none);
    sdm::ByteVector chains = make_archive("chains", {"chains.sm_90.cubin=sm_90"}, {"chain1", "chain2"}, 1, Matrix::none);
    sdm::ByteVector launch = launch_archive();  // module "launch"
};

std::map<std::string, sdm_module_entry> modules_of(sdm_runtime* rt, std::vector<std::string>* strings) {
    sdm_module_list* list = nullptr;
    REQUIRE(sdm_module_list_create(rt, &list, nullptr) == SDM_OK);
    uint32_t count = 0;
    REQUIRE(sdm_module_list_count(list, &count, nullptr) == SDM_OK);
    std::map<std::string, sdm_module_entry> out;
    for (uint32_t i = 0; i < count; ++i) {
        sdm_module_entry e{};
        e.struct_size = sizeof e;
        REQUIRE(sdm_module_list_get(list, i, &e, nullptr) == SDM_OK);
        strings->push_back(e.module);
        out[e.module] = e;
        out[e.module].module = nullptr;
        out[e.module].archive = nullptr;
    }
    sdm_module_list_destroy(list);
    return out;
}

// A use that goes through sdm's guard without launching: the kernel's attributes.
sdm_status touch(const sdm_kernel* k) {
    sdm_kernel_attributes a{};
    a.struct_size = sizeof a;
    return sdm_kernel_attributes_get(k, &a, nullptr);
}

// A runtime with a budget of `budget` bytes per device, the three archives mounted.
RuntimePtr budgeted(const TempDir& dir, const Archives& a, uint64_t budget, std::vector<std::string>* log) {
    ::setenv("SDM_DEVICE_MEMORY_BUDGET", std::to_string(budget).c_str(), 1);
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, log);
    ::unsetenv("SDM_DEVICE_MEMORY_BUDGET");
    mount(rt.get(), a.kernels, "kernels.sdma");
    mount(rt.get(), a.chains, "chains.sdma");
    mount(rt.get(), a.launch, "launch.sdma");
    return rt;
}

// Each module's device bytes, loaded without a budget: as its image declares them (what the
// footprint reports), and as the device shows them (the fake's cuMemGetInfo: more, in pages).
struct Sizes {
    std::map<std::string, uint64_t> declared;
    std::map<std::string, uint64_t> device;
    uint64_t at(const std::string& module) const { return device.at(module); }  // what a budget counts
};
Sizes sizes(const TempDir& dir, const Archives& a) {
    RuntimePtr rt = budgeted(dir, a, 0, nullptr);
    Sizes out;
    int64_t before = fake_calls("@device0_memory");
    for (const auto& [k, module] : {std::pair{"scale", "kernels"}, std::pair{"chain1", "chains"}}) {
        REQUIRE(sdm_kernel_release(rt.get(), kernel_of(rt.get(), k), nullptr) == SDM_OK);
        out.device[module] = static_cast<uint64_t>(fake_calls("@device0_memory") - before);
        before = fake_calls("@device0_memory");
    }
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    out.device["launch"] = static_cast<uint64_t>(fake_calls("@device0_memory") - before);
    std::vector<std::string> strings;
    for (const auto& [name, e] : modules_of(rt.get(), &strings)) out.declared[name] = e.device_bytes;
    REQUIRE(out.declared.size() == 3);
    for (const auto& [name, bytes] : out.declared) {
        REQUIRE(bytes > 0);
        REQUIRE(out.device.at(name) > bytes);  // the driver takes more than the image declares
    }
    return out;
}

}  // namespace

TEST_CASE("a load past the budget evicts the least recently used idle module; its handle reloads it at its next use", "[budget]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    const auto bytes = sizes(dir, a);
    std::vector<std::string> log;
    // Any two fit (launch is much the largest), not the three.
    RuntimePtr rt = budgeted(dir, a, bytes.at("launch") + std::max(bytes.at("kernels"), bytes.at("chains")), &log);
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");
    REQUIRE(launch_scale(scale) == SDM_OK);
    REQUIRE(touch(chain) == SDM_OK);  // chains used last: kernels is the least recently used
    CHECK(fake_calls("@modules") == 2);
    sdm_kernel_list* listing = nullptr;
    REQUIRE(sdm_kernel_list_create(rt.get(), 2, &listing, nullptr) == SDM_OK);
    sdm_kernel_entry entry{};
    entry.struct_size = sizeof entry;
    REQUIRE(sdm_kernel_list_get(listing, 0, &entry, nullptr) == SDM_OK);
    const std::string third = entry.name;
    sdm_kernel_list_destroy(listing);
    sdm_kernel* named = kernel_of(rt.get(), third.c_str());  // the third module: past the budget
    CHECK(fake_calls("@modules") == 2);                          // one went
    CHECK(count_containing(log, "evicted module kernels") == 1);
    std::vector<std::string> strings;
    auto m = modules_of(rt.get(), &strings);
    CHECK(m.at("kernels").state == SDM_MODULE_EVICTED);
    CHECK(m.at("kernels").device_bytes == 0);
    CHECK(m.at("chains").state == SDM_MODULE_SERVING);
    sdm_footprint f{};
    f.struct_size = sizeof f;
    REQUIRE(sdm_footprint_get(rt.get(), &f, nullptr) == SDM_OK);
    CHECK(f.device_bytes == bytes.declared.at("chains") + bytes.declared.at("launch"));  // the footprint: what the images declare
    CHECK(static_cast<uint64_t>(fake_calls("@device0_memory")) <= bytes.at("launch") + bytes.at("chains"));

    // The evicted module's handle still launches: its next use reloads it (the fake driver fails a
    // launch of an unloaded module's function), and that load evicts the least recently used again.
    REQUIRE(launch_scale(scale) == SDM_OK);
    CHECK(count_containing(log, "reloaded module kernels") == 1);
    CHECK(count_containing(log, "evicted module chains") == 1);  // used before the third was loaded
    CHECK(fake_calls("@modules") == 2);
    // A fetch of the evicted module's other kernel reloads it as well.
    sdm_kernel* chain2 = kernel_of(rt.get(), "chain2");
    CHECK(count_containing(log, "reloaded module chains") == 1);
    CHECK(count_containing(log, "evicted module launch") == 1);  // loaded before kernels' last use
    REQUIRE(touch(chain2) == SDM_OK);
    REQUIRE(touch(chain) == SDM_OK);  // the first handle of it too, with its function resolved again
    for (sdm_kernel* k : {scale, chain, chain2, named}) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    rt.reset();
    CHECK(fake_calls("@modules") == 0);
}

TEST_CASE("a module whose CUfunction the host took is never evicted; a budget that cannot be kept is said once", "[budget]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    const auto bytes = sizes(dir, a);
    std::vector<std::string> log;
    RuntimePtr rt = budgeted(dir, a, bytes.at("kernels"), &log);
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    void* function = nullptr;
    REQUIRE(sdm_kernel_function(scale, &function, nullptr) == SDM_OK);  // the host may launch it anywhere now
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");
    CHECK(fake_calls("@modules") == 2);
    CHECK(count_containing(log, "evicted module kernels") == 0);
    CHECK(count_containing(log, "is not kept") == 1);
    // chains, idle and the least recently used of the others, goes when the third comes.
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(count_containing(log, "evicted module kernels") == 0);
    CHECK(count_containing(log, "is not kept") == 1);  // said once per device
    for (sdm_kernel* k : {scale, chain}) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
}

TEST_CASE("an evicted module's queued work finishes before it is unloaded", "[budget]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    const auto bytes = sizes(dir, a);
    FakeConfig config;
    config.devices = {kH200};
    config.hold_work = true;
    fake_configure(config);
    std::vector<std::string> log;
    RuntimePtr rt = budgeted(dir, a, bytes.at("kernels"), &log);
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    REQUIRE(launch_scale(scale, reinterpret_cast<CUstream>(0x1000)) == SDM_OK);  // queued, not run
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");                          // evicts kernels
    CHECK(count_containing(log, "evicted module kernels") == 1);
    CHECK(fake_calls("@modules") == 2);       // still loaded: its work is queued
    CHECK(fake_calls("@unloaded_busy") == 0);
    fake_finish_work();
    REQUIRE(touch(chain) == SDM_OK);
    REQUIRE(sdm_kernel_release(rt.get(), chain, nullptr) == SDM_OK);  // a release looks at what drains
    CHECK(fake_calls("@modules") == 1);
    CHECK(fake_calls("@unloaded_busy") == 0);  // no module went under queued work
    REQUIRE(sdm_kernel_release(rt.get(), scale, nullptr) == SDM_OK);
}

TEST_CASE("without a budget nothing is evicted, and a bad budget is warned of and ignored", "[budget][hostile]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    std::vector<std::string> log;
    ::setenv("SDM_DEVICE_MEMORY_BUDGET", "lots", 1);
    RuntimePtr rt = make_runtime(dir.path + "/cache", 0, 0, &log);
    ::unsetenv("SDM_DEVICE_MEMORY_BUDGET");
    CHECK(count_containing(log, "SDM_DEVICE_MEMORY_BUDGET='lots'") == 1);
    mount(rt.get(), a.kernels, "kernels.sdma");
    mount(rt.get(), a.chains, "chains.sdma");
    mount(rt.get(), a.launch, "launch.sdma");
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);
    CHECK(fake_calls("@modules") == 3);
    CHECK(count_containing(log, "evicted module") == 0);
}

TEST_CASE("8 threads using kernels of three modules under a budget for two: every use finds its module loaded", "[budget][concurrency]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    const auto bytes = sizes(dir, a);
    RuntimePtr rt = budgeted(dir, a, bytes.at("launch") + std::max(bytes.at("kernels"), bytes.at("chains")), nullptr);
    std::vector<sdm_kernel*> kernels = {kernel_of(rt.get(), "scale"), kernel_of(rt.get(), "chain1")};
    sdm_kernel_list* listing = nullptr;
    REQUIRE(sdm_kernel_list_create(rt.get(), 2, &listing, nullptr) == SDM_OK);
    sdm_kernel_entry entry{};
    entry.struct_size = sizeof entry;
    REQUIRE(sdm_kernel_list_get(listing, 0, &entry, nullptr) == SDM_OK);
    kernels.push_back(kernel_of(rt.get(), entry.name));
    sdm_kernel_list_destroy(listing);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> uses{0}, failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 8; ++t)
        workers.emplace_back([&, t] {  // (no Catch assertion on these threads)
            for (size_t i = static_cast<size_t>(t); !stop.load(); ++i) {
                const sdm_kernel* k = kernels[i % kernels.size()];
                sdm_status s = SDM_OK;
                if (k == kernels[0]) {  // a launch: the fake driver fails one of an unloaded module's function
                    s = launch_scale_quietly(k);
                } else {
                    sdm_kernel_attributes attributes{};
                    attributes.struct_size = sizeof attributes;
                    s = sdm_kernel_attributes_get(k, &attributes, nullptr);
                }
                ++uses;
                if (s != SDM_OK) ++failures;
            }
        });
    const char* seconds = std::getenv("SDM_STRESS_SECONDS");
    std::this_thread::sleep_for(std::chrono::milliseconds(seconds != nullptr ? static_cast<int64_t>(std::atof(seconds) * 1000) : 1000));
    stop = true;
    for (auto& w : workers) w.join();
    const int64_t loads = fake_calls("cuModuleLoadData");
    std::printf("8 threads under a budget: %lld uses, %lld failures, %lld module loads\n", static_cast<long long>(uses.load()),
                static_cast<long long>(failures.load()), static_cast<long long>(loads));
    CHECK(failures.load() == 0);
    CHECK(loads >= 4);  // kernels, evicted when the third module came, was reloaded by a use (and more, as the threads allow)
    CHECK(uses.load() > 1000);
    CHECK(fake_calls("@unloaded_busy") == 0);
    for (sdm_kernel* k : kernels) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
}

TEST_CASE("the budget is kept as the device shows it: the driver's overhead and rounding counted, not the images' declared bytes", "[budget]") {
    TempDir dir;
    fake({kH200});
    const Archives a;
    const auto bytes = sizes(dir, a);
    // Room for chains and launch as the device shows them; the declared bytes of all three fit in it.
    const uint64_t budget = bytes.at("chains") + bytes.at("launch");
    REQUIRE(bytes.declared.at("kernels") + bytes.declared.at("chains") + bytes.declared.at("launch") <= budget);
    std::vector<std::string> log;
    RuntimePtr rt = budgeted(dir, a, budget, &log);
    const int64_t start = fake_calls("@device0_memory");
    int64_t highest = 0;
    std::vector<sdm_kernel*> held;
    for (int round = 0; round < 3; ++round)
        for (const char* k : {"scale", "chain1", "axpy", "chain2"}) {
            held.push_back(kernel_of(rt.get(), k));
            REQUIRE(touch(held.back()) == SDM_OK);
            highest = std::max(highest, fake_calls("@device0_memory") - start);
        }
    REQUIRE(sdm_preload(rt.get(), 0, nullptr, 0, nullptr) == SDM_OK);  // launch's module too
    highest = std::max(highest, fake_calls("@device0_memory") - start);
    CHECK(highest <= static_cast<int64_t>(budget));
    CHECK(count_containing(log, "evicted module") >= 1);
    CHECK(count_containing(log, "as measured") >= 1);
    CHECK(count_containing(log, "is not kept") == 0);
    for (sdm_kernel* k : held) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
}

TEST_CASE("a device that cannot say what it holds: the budget counts the declared bytes, and the log says so once", "[budget][faults]") {
    TempDir dir;
    FakeConfig config;
    config.devices = {kH200};
    config.failures = {{"cuMemGetInfo", CUDA_ERROR_NOT_SUPPORTED, 0, false}};
    fake_configure(config);
    const Archives a;
    std::vector<std::string> log;
    RuntimePtr rt = budgeted(dir, a, 1, &log);  // nothing fits: each load evicts the one before
    sdm_kernel* scale = kernel_of(rt.get(), "scale");
    sdm_kernel* chain = kernel_of(rt.get(), "chain1");  // evicts kernels
    REQUIRE(touch(scale) == SDM_OK);                    // reloads it, and evicts chains
    for (sdm_kernel* k : {scale, chain}) REQUIRE(sdm_kernel_release(rt.get(), k, nullptr) == SDM_OK);
    CHECK(count_containing(log, "counts what the modules' images declare instead") == 1);
    CHECK(count_containing(log, "evicted module") >= 2);
    CHECK(count_containing(log, "as measured") == 0);
}
