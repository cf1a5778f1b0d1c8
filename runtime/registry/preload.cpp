#include "preload.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <set>
#include <system_error>
#include <thread>

#include "runtime/select/layering.hpp"
#include "runtime/archives/archive_set.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/platform/trace_ranges.hpp"
#include "modules.hpp"

namespace sdm::runtime {

Result<CUcontext> preload_context(LoadContext& load, int32_t ordinal) {
    if (!load.follows_current_context()) return CUcontext{nullptr};
    SDM_TRY_GET(contexts, load.contexts());
    SDM_TRY_GET(current, (*contexts)->current(ordinal));
    return *current;
}

void PreloadFailures::record(const std::string& name, Error e) {
    failed.push_back(name);
    if (!first) first = std::move(e);
}

std::optional<Error> PreloadFailures::summary() const {
    if (!first) return std::nullopt;
    Error e = *first;
    if (failed.size() > 1) {
        std::vector<std::string> sorted = failed;
        std::sort(sorted.begin(), sorted.end());
        std::string list;
        for (size_t i = 0; i < sorted.size() && i < 8; ++i) list += (i ? ", " : "") + sorted[i];
        if (sorted.size() > 8) list += ", ...";
        e.message += "; " + std::to_string(sorted.size()) + " kernels did not preload (" + list + "); the others did";
    }
    return e;
}

std::vector<std::string> preload_work(const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names,
                                      PreloadFailures& failures) {
    std::vector<std::string> wanted = names;
    if (wanted.empty())
        for (const auto& a : archives.archives())
            if (a->manifest)
                for (const auto& k : a->manifest->kernels())  // qualified where several modules list the name
                    wanted.push_back(a->manifest->find(k.name) != nullptr ? std::string(k.name) : archive::qualified_name(k.module, k.name));
    // One representative kernel per module: loading it loads the module. A name that selects
    // nothing is reported; the others still load.
    std::vector<std::string> work;
    std::set<std::pair<const MountedArchive*, std::string>> seen;
    for (const auto& name : wanted) {
        auto found = served_by(archives, load.devices(), ordinal, name);
        if (!found) {
            failures.record(name, std::move(found).error());
            continue;
        }
        if (seen.insert({found->archive.get(), found->module}).second) work.push_back(name);
    }
    return work;
}

Result<void> preload_module(Modules& modules, int32_t ordinal, const std::string& name, CUcontext context) noexcept {
    // A worker thread has no C ABI frame above it to turn an exception into a status: it is caught
    // here (an exception leaving a thread's function terminates the process).
    try {
        // Eager: the module loaded, and every kernel it lists resolved (a fetch resolves one).
        return modules.load_all(ordinal, name, context);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "out of memory while preloading kernel " + name);
    } catch (const std::exception& e) {
        return make_error(ErrorCode::internal, "internal error while preloading kernel " + name + ": " + e.what() + "; please report it");
    } catch (...) {
        return make_error(ErrorCode::internal, "internal error while preloading kernel " + name + ": an unknown exception; please report it");
    }
}

Result<void> preload(Modules& modules, const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names) {
    const TraceRange range("preload", "device", std::to_string(ordinal));
    SDM_TRY_GET(context, preload_context(load, ordinal));
    std::mutex failures_mutex;
    PreloadFailures failures;
    const std::vector<std::string> work = preload_work(archives, load, ordinal, names, failures);
    std::atomic<size_t> next{0};
    const auto worker = [&]() noexcept {
        for (size_t i = next++; i < work.size(); i = next++) {
            if (auto loaded = preload_module(modules, ordinal, work[i], *context); !loaded) {
                try {
                    std::lock_guard lock(failures_mutex);
                    failures.record(work[i], std::move(loaded).error());
                } catch (...) {  // no memory to record it: the others still load
                }
            }
        }
    };
    const unsigned threads = std::min<unsigned>(std::max(1u, platform::cores()), static_cast<unsigned>(work.size()));
    std::vector<std::thread> pool;
    try {
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    } catch (const std::system_error&) {
        // No more threads to be had: the ones started and this one do the work.
    }
    worker();
    for (auto& t : pool) t.join();
    if (auto e = failures.summary()) return std::move(*e);
    return {};
}

}  // namespace sdm::runtime
