// A real library's modules under a device-memory budget (GPU, issue 43; bench/budget.sh drives it).
//   budget_bench ARCHIVE BUDGET_BYTES [RELOADS]
// A runtime with that budget (0: none) mounts ARCHIVE and fetches every kernel, module by module in
// the archive's name order, keeping every handle. After each module it reads the device memory in use
// (cuMemGetInfo, after a synchronize; outside the clock) and keeps the highest. Then, RELOADS times
// (default 50), the handle of the least recently used module is asked for its attributes: a module
// the budget evicted reloads there (sdm_kernel_attributes_get is a use, as a launch is). Prints one line:
//   budget=B modules=N kernels=N failed=N fetch_us=T first_load_us_median=F dev_bytes_max=X
//   dev_bytes_end=Y sdm_device_bytes=S evicted=E reloads=R reload_us_median=U cuMemGetInfo_us_median=M
// dev_bytes_*: taken since the context's creation; sdm_device_bytes: sdm_footprint's sum (what the
// budget counts: the images' declared bytes, before the driver rounds its allocations); evicted:
// modules in SDM_MODULE_EVICTED after the fetches; first_load_us_median: the median time of a
// module's first fetch (its load, and with a budget the evictions it caused); reload_us_median: that
// of a use that reloaded an evicted module (the device memory is read after each of those too);
// cuMemGetInfo_us_median: one cuMemGetInfo's time, what sdm's meter pays per reading under a budget;
// largest_module_bytes: the most the device's memory grew over one module's fetches (without a
// budget, the largest module's own size as the device takes it: a budget below it cannot be kept).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <cuda.h>

#include "archive/archive.hpp"
#include "cuda_driver.hpp"
#include "device_memory.hpp"
#include "load_plan.hpp"
#include "sdm/sdm.h"

namespace {

using sdm_bench::used_device_bytes;
using Clock = std::chrono::steady_clock;

int fail(const std::string& what) {
    std::fprintf(stderr, "budget_bench: %s\n", what.c_str());
    return 1;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Module {
    std::string name;
    std::vector<std::string> kernels;  // as fetched: MODULE!NAME where the name is in several modules
    sdm_kernel* first{nullptr};
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) return fail("usage: budget_bench ARCHIVE BUDGET_BYTES [RELOADS]");
    const unsigned long long budget = std::strtoull(argv[2], nullptr, 10);
    const size_t reloads_wanted = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : 50;
    auto a = sdm::archive::Archive::open_file(argv[1]);
    if (!a) return fail(a.error().message);
    auto plan = sdm_bench::plan_of(*a, nullptr);
    if (!plan) return fail(plan.error().message);
    std::vector<Module> modules;
    for (const auto& [module, names] : plan->modules) {
        Module m{module, {}, nullptr};
        for (const auto& n : names) m.kernels.push_back(sdm_bench::fetch_name(*plan, module, n));
        modules.push_back(std::move(m));
    }
    const size_t kernel_count = plan->kernels;

    auto made = sdm_bench::bench_runtime(budget);
    if (!made) return fail(made.error().message);
    sdm_runtime* rt = *made;
    sdm_error* e = nullptr;
    sdm_host::CudaDriver cu;
    if (!cu.open() || !cu.make_current(0)) return fail("no context");
    const long long before = used_device_bytes(cu);
    // What the budget's meter pays per reading: one cuMemGetInfo (sdm reads it before and after each
    // load, resolve and unload under a budget).
    std::vector<double> meter_us;
    if (const auto info = cu.get<decltype(&cuMemGetInfo)>("cuMemGetInfo")) {
        for (int i = 0; i < 201; ++i) {
            size_t free = 0, total = 0;
            const auto start = Clock::now();
            (void)info(&free, &total);
            meter_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        }
    }
    if (sdm_archive_mount_file(rt, argv[1], &e) != SDM_OK) return fail(sdm_error_message(e));

    std::vector<sdm_kernel*> handles;
    std::vector<double> first_load_us;
    size_t failed = 0;
    double fetch_us = 0;
    long long max_bytes = 0, largest_module = 0;
    for (auto& m : modules) {
        const long long module_before = used_device_bytes(cu);  // (outside the clock)
        const auto start = Clock::now();
        for (const auto& n : m.kernels) {
            sdm_kernel* k = nullptr;
            if (sdm_kernel_get(rt, 0, n.c_str(), nullptr, &k, &e) != SDM_OK) {
                ++failed;
                sdm_error_destroy(e);
                e = nullptr;
                continue;
            }
            handles.push_back(k);
            if (m.first == nullptr) {
                m.first = k;
                first_load_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
            }
        }
        fetch_us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        const long long after = used_device_bytes(cu);  // outside the clock
        max_bytes = std::max(max_bytes, after - before);
        largest_module = std::max(largest_module, after - module_before);  // (without a budget: what one module's fetches took)
    }
    const long long end_bytes = used_device_bytes(cu) - before;

    sdm_footprint f{};
    f.struct_size = sizeof f;
    if (sdm_footprint_get(rt, &f, &e) != SDM_OK) return fail(sdm_error_message(e));
    std::map<std::string, bool> evicted;
    sdm_module_list* list = nullptr;
    if (sdm_module_list_create(rt, &list, &e) != SDM_OK) return fail(sdm_error_message(e));
    uint32_t count = 0;
    sdm_module_list_count(list, &count, nullptr);
    for (uint32_t i = 0; i < count; ++i) {
        sdm_module_entry entry{};
        entry.struct_size = sizeof entry;
        if (sdm_module_list_get(list, i, &entry, nullptr) == SDM_OK && entry.state == SDM_MODULE_EVICTED) evicted[entry.module] = true;
    }
    sdm_module_list_destroy(list);

    // The least recently used first: the archive's order, which is the order of their last use.
    std::vector<double> reload_us;
    for (const auto& m : modules) {
        if (reload_us.size() >= reloads_wanted) break;
        if (m.first == nullptr || !evicted.count(m.name)) continue;
        sdm_kernel_attributes at{};
        at.struct_size = sizeof at;
        const auto start = Clock::now();
        const bool ok = sdm_kernel_attributes_get(m.first, &at, &e) == SDM_OK;
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        if (!ok) {
            ++failed;
            std::fprintf(stderr, "budget_bench: %s\n", sdm_error_message(e));
            sdm_error_destroy(e);
            e = nullptr;
            continue;
        }
        reload_us.push_back(us);
        max_bytes = std::max(max_bytes, used_device_bytes(cu) - before);  // outside the clock
    }
    max_bytes = std::max(max_bytes, used_device_bytes(cu) - before);

    std::printf("budget=%llu modules=%zu kernels=%zu failed=%zu fetch_us=%.0f first_load_us_median=%.0f dev_bytes_max=%lld "
                "dev_bytes_end=%lld sdm_device_bytes=%llu evicted=%zu reloads=%zu reload_us_median=%.0f cuMemGetInfo_us_median=%.2f largest_module_bytes=%lld\n",
                budget, modules.size(), kernel_count, failed, fetch_us, median(first_load_us), max_bytes, end_bytes,
                static_cast<unsigned long long>(f.device_bytes), evicted.size(), reload_us.size(), median(reload_us), median(meter_us), largest_module);
    for (auto* k : handles) sdm_kernel_release(rt, k, nullptr);
    sdm_runtime_destroy(rt);
    return failed == 0 ? 0 : 2;
}
