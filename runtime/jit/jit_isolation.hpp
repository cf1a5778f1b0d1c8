// Where a JIT compiler runs (docs/LOADING.md, "A compiler that crashes"). nvJitLink,
// nvPTXCompiler and the driver's JIT trust their input; sdm checks an image's structure, but not
// every byte a compiler reads (LTO-IR's IR is opaque; PTX is a language). A link of input sdm
// cannot fully check runs in a child process, the JIT helper, under a time and a memory limit:
// its crash, hang or exhaustion is SDM_ERROR_JIT naming the signal or the limit, and only the cubin
// it returns, checked, is cached or loaded. A link in this process runs under a watchdog instead:
// past its time limit the fetch returns SDM_ERROR_JIT, and the link, which cannot be stopped
// inside this process, goes on alone in the background.
//
// The policy: `automatic` (the default) isolates LTO-IR always and PTX unless its archive's
// signature verified under a trusted key (or it is libsdm's own embedded archive); `always`
// isolates every link; `never` runs every link in this process. The driver's JIT compiles inside
// this process by its nature: it is not used for a link the policy isolates.
#pragma once

#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "archive/format.hpp"
#include "jit_nvjitlink.hpp"
#include "runtime/platform/log.hpp"
#include "runtime/platform/settings.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

enum class JitIsolation : uint8_t { automatic, always, never };
const char* isolation_name(JitIsolation isolation) noexcept;  // "auto", "always", "never"

// (The limits kDefaultJitSeconds and the rest are runtime/platform/settings.hpp's, beside their variables.)
struct JitLimits {
    double seconds{kDefaultJitSeconds};                 // a link's wall-clock time (the helper's whole life, isolated)
    uint64_t memory_bytes{kDefaultJitMemoryBytes};  // the helper's address space; not enforceable in this process
};

struct JitIsolationOptions {
    std::optional<JitIsolation> policy;  // unset: $SDM_JIT_ISOLATION (auto, always, never), else auto
    std::optional<double> seconds;       // unset: $SDM_JIT_TIME_LIMIT (seconds), else 120
    std::optional<uint64_t> memory_bytes;  // unset: $SDM_JIT_MEMORY_LIMIT (bytes; K, M, G suffixes), else 8 GiB
    // The helper's command line (argv[0] a path; the sdm tool passes itself and its hidden
    // --jit-helper). Empty: $SDM_JIT_HELPER, else sdm-jit-helper beside libsdm, else in sdm/ beside it.
    std::vector<std::string> helper;
};

// The options resolved once per runtime; what the environment held that did not parse is logged
// (an unknown policy reads as `always`, a bad limit as the default).
struct JitIsolationSettings {
    JitIsolation policy{JitIsolation::automatic};
    JitLimits limits;
    std::vector<std::string> helper;  // empty until needed: located by jit_helper_command()
    static JitIsolationSettings resolve(const JitIsolationOptions& options, const Logger& log);
};

// The helper's command line: `settings.helper`, else $SDM_JIT_HELPER, else sdm-jit-helper beside
// the binary that holds this code (libsdm), else in its sdm/ folder. ErrorCode::jit naming every
// place tried and the fixes when there is none.
Result<std::vector<std::string>> jit_helper_command(const JitIsolationSettings& settings);

// One build for the helper: what it runs, on what, for which target.
// demangle: the input is kernel names joined by NUL bytes, the output their demangled forms
// likewise ("" for one that does not demangle, or whose form passes kMaxDemangledOutput): the C++
// runtime's demangler takes time and memory exponential in a crafted name's length, so the names
// of an archive sdm cannot trust are demangled here (kernel_names.cpp).
enum class IsolatedTool : uint32_t { nvjitlink = 1, ptx_compiler = 2, demangle = 3 };
inline constexpr size_t kMaxDemangledOutput = 64 * 1024;
struct IsolatedJob {
    IsolatedTool tool{IsolatedTool::nvjitlink};
    std::string library;  // nvJitLink: the file to load (empty: the child searches as NvJitLink::load does)
    JitInput input;
    uint16_t sm{0};
    archive::Variant variant{archive::Variant::base};
    std::vector<std::string> options;  // extra options, after those the tool always passes
};

// Demangles `names` (NUL-separated) in the helper under `limits`. The helper writes each result as
// it goes (a NUL after each): `demangled` holds the results of the names it finished, in order; when
// it ended before the last (killed by a limit, a signal), `how` says how, and the name after the
// last result is the one it died on.
struct DemangleRun {
    std::vector<std::string> demangled;
    bool complete{false};
    std::string how;
};
Result<DemangleRun> run_demangler(const std::vector<std::string>& helper, std::string_view names, size_t count, const JitLimits& limits);

// Runs `job` in the helper under `limits`. The cubin comes back as the child wrote it: the caller
// checks it before anything else sees it. A failure is ErrorCode::jit: the tool's own (its result
// in Error::native, its log in Error::log), or how the helper ended (a signal, a limit) with the
// last of its standard error. `started` is told the helper's pid (for the cache lock's holder).
Result<JitOutput> run_isolated(const std::vector<std::string>& helper, const IsolatedJob& job, const JitLimits& limits,
                               const std::function<void(int pid)>& started = {});

// A build in this process, bounded by `seconds`: `work` runs on a thread of its own, which must
// own everything it touches (the caller's stack may be gone when it ends). Past the limit the
// thread is left to finish alone, `late` (may be empty) then gets what it built on that thread
// (to release it), and the result is ErrorCode::jit saying so.
template <class T>
Result<T> run_with_watchdog(double seconds, const std::string& what, std::function<Result<T>()> work, std::function<void(Result<T>&)> late = {}) {
    struct Shared {
        std::mutex mutex;
        std::condition_variable done;
        std::optional<Result<T>> result;
        bool abandoned{false};
    };
    auto shared = std::make_shared<Shared>();
    try {
        std::thread([shared, work = std::move(work), late = std::move(late)]() mutable {
            Result<T> r = work();
            std::unique_lock lock(shared->mutex);
            if (shared->abandoned) {
                lock.unlock();
                if (late) late(r);
                return;
            }
            shared->result.emplace(std::move(r));
            shared->done.notify_all();
        }).detach();
    } catch (const std::system_error& e) {
        return make_error(ErrorCode::jit, what + ": cannot start its thread (" + e.what() + ")");
    }
    std::unique_lock lock(shared->mutex);
    if (!shared->done.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return shared->result.has_value(); })) {
        shared->abandoned = true;
        char limit[32];
        std::snprintf(limit, sizeof limit, "%.1f", seconds);
        return make_error(ErrorCode::jit, what + " ran past its time limit of " + limit +
                                              " s. It runs inside this process, where it cannot be stopped, and goes on in the background; "
                                              "run links in the JIT helper (SDM_JIT_ISOLATION=always) to have them killed, or raise the "
                                              "limit (SDM_JIT_TIME_LIMIT)");
    }
    return std::move(*shared->result);
}

// The helper's side: reads the request at descriptor 3, sets its own limits, runs the tool, writes
// the reply to descriptor 4. What the sdm-jit-helper program and `sdm --jit-helper` run. Returns
// the process's exit status.
int jit_helper_main();

}  // namespace sdm::runtime
