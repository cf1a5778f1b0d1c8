#include "preload.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "runtime/select/layering.hpp"
#include "runtime/archives/archive_set.hpp"
#include "runtime/device/load_context.hpp"
#include "runtime/platform/trace_ranges.hpp"
#include "modules.hpp"

namespace sdm::runtime {

Result<void> preload(Modules& modules, const ArchiveSet& archives, LoadContext& load, int32_t ordinal, const std::vector<std::string>& names) {
    const TraceRange range("preload", "device", std::to_string(ordinal));
    // Following the calling thread's context: the workers load into it (they have none current).
    CUcontext context = nullptr;
    if (load.follows_current_context()) {
        SDM_TRY_GET(contexts, load.contexts());
        SDM_TRY_GET(current, (*contexts)->current(ordinal));
        context = *current;
    }
    std::vector<std::string> wanted = names;
    if (wanted.empty())
        for (const auto& a : archives.archives())
            if (a->manifest)
                for (const auto& k : a->manifest->kernels())  // qualified where several modules list the name
                    wanted.push_back(a->manifest->find(k.name) != nullptr ? std::string(k.name) : archive::qualified_name(k.module, k.name));
    std::mutex error_mutex;
    std::optional<Error> first_error;
    std::vector<std::string> failed;  // every kernel that did not preload, for the message
    const auto record = [&](const std::string& name, Error e) {
        std::lock_guard lock(error_mutex);
        failed.push_back(name);
        if (!first_error) first_error = std::move(e);
    };
    // One representative kernel per module: loading it loads the module. A name that selects
    // nothing is reported; the others still load.
    std::vector<std::string> work;
    std::set<std::pair<const MountedArchive*, std::string>> seen;
    for (const auto& name : wanted) {
        auto found = served_by(archives, load.devices(), ordinal, name);
        if (!found) {
            record(name, std::move(found).error());
            continue;
        }
        if (seen.insert({found->archive.get(), found->module}).second) work.push_back(name);
    }
    std::atomic<size_t> next{0};
    // A worker thread has no C ABI frame above it to turn an exception into a status: it catches
    // its own (an exception leaving a thread's function terminates the process).
    const auto worker = [&]() noexcept {
        for (size_t i = next++; i < work.size(); i = next++) {
            try {
                // Eager: the module loaded, and every kernel it lists resolved (a fetch resolves one).
                if (auto loaded = modules.load_all(ordinal, work[i], context); !loaded) record(work[i], std::move(loaded).error());
            } catch (const std::bad_alloc&) {
                record(work[i], make_error(ErrorCode::out_of_memory, "out of memory while preloading kernel " + work[i]));
            } catch (const std::exception& e) {
                record(work[i], make_error(ErrorCode::internal, "internal error while preloading kernel " + work[i] + ": " + e.what() + "; please report it"));
            } catch (...) {
                record(work[i], make_error(ErrorCode::internal, "internal error while preloading kernel " + work[i] + ": an unknown exception; please report it"));
            }
        }
    };
    const unsigned threads = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), static_cast<unsigned>(work.size()));
    std::vector<std::thread> pool;
    try {
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    } catch (const std::system_error&) {
        // No more threads to be had: the ones started and this one do the work.
    }
    worker();
    for (auto& t : pool) t.join();
    if (!first_error) return {};
    // The first failure's code and text, then how many did not preload and which.
    Error e = *first_error;
    if (failed.size() > 1) {
        std::sort(failed.begin(), failed.end());
        std::string list;
        for (size_t i = 0; i < failed.size() && i < 8; ++i) list += (i ? ", " : "") + failed[i];
        if (failed.size() > 8) list += ", ...";
        e.message += "; " + std::to_string(failed.size()) + " kernels did not preload (" + list + "); the others did";
    }
    return e;
}

}  // namespace sdm::runtime
