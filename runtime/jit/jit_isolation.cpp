// The JIT helper: the parent's side (the request, the child, what its end means), the child's
// side (jit_helper_main) and the in-process watchdog. jit_isolation.hpp says why.
#include "jit_isolation.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "archive/cxx_names.hpp"
#include "jit_ptxcompiler.hpp"
#include "runtime/platform/platform.hpp"

namespace sdm::runtime {
namespace {

// The request and the reply: fields in the host's byte order (both ends are one machine's
// processes), strings and byte runs length-prefixed. Both ends are this sdm (the helper is found
// beside the library that starts it), so a version that differs is refused rather than read.
constexpr uint32_t kRequestMagic = 0x4a4d4453u;  // "SDMJ"
constexpr uint32_t kReplyMagic = 0x524d4453u;    // "SDMR"
constexpr uint32_t kProtocol = 1;
// What a reply may hold beyond its cubin (logs, the message).
constexpr uint64_t kReplyOverhead = uint64_t{16} << 20;

class Writer {
public:
    Writer& u32(uint32_t v) { return raw(&v, sizeof v); }
    Writer& u64(uint64_t v) { return raw(&v, sizeof v); }
    Writer& f64(double v) { return raw(&v, sizeof v); }
    Writer& bytes(Bytes b) {
        u64(b.size());
        out_.insert(out_.end(), b.begin(), b.end());
        return *this;
    }
    Writer& text(std::string_view s) { return bytes(as_bytes(s)); }
    const ByteVector& out() const noexcept { return out_; }

private:
    Writer& raw(const void* p, size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        out_.insert(out_.end(), b, b + n);
        return *this;
    }
    ByteVector out_;
};

// Reads what a Writer wrote; any read past the end sets failed() and yields zeros.
class Reader {
public:
    explicit Reader(Bytes b) : b_(b) {}
    uint32_t u32() { return fixed<uint32_t>(); }
    uint64_t u64() { return fixed<uint64_t>(); }
    double f64() { return fixed<double>(); }
    Bytes bytes() {
        const uint64_t n = u64();
        if (failed_ || n > b_.size() - at_) {
            failed_ = true;
            return {};
        }
        const Bytes out = b_.subspan(at_, static_cast<size_t>(n));
        at_ += static_cast<size_t>(n);
        return out;
    }
    std::string text() {
        const Bytes b = bytes();
        return std::string(as_text(b));
    }
    bool failed() const noexcept { return failed_; }

private:
    template <class T>
    T fixed() {
        T v{};
        if (failed_ || b_.size() - at_ < sizeof v) {
            failed_ = true;
            return v;
        }
        std::memcpy(&v, b_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    Bytes b_;
    size_t at_{0};
    bool failed_{false};
};

std::string tool_name(IsolatedTool tool) {
    return tool == IsolatedTool::nvjitlink ? "nvJitLink" : tool == IsolatedTool::demangle ? "the C++ demangler" : "nvPTXCompiler";
}

// The helper's demangle job: each NUL-separated name demangled, in order, its result written to
// descriptor 4 at once with a NUL after it ("" for one that does not demangle or comes out past
// kMaxDemangledOutput), so that the parent keeps what was done if a limit ends the helper.
int demangle_job(Bytes names) {
    const std::string_view text(reinterpret_cast<const char*>(names.data()), names.size());
    const auto put = [](std::string_view s) { return platform::child_reply(as_bytes(s)); };
    for (size_t at = 0; at <= text.size();) {
        size_t end = text.find('\0', at);
        if (end == std::string_view::npos) end = text.size();
        std::optional<std::string> d = archive::demangle(text.substr(at, end - at));
        std::string line = d && d->size() <= kMaxDemangledOutput ? std::move(*d) : std::string();
        line += '\0';
        if (!put(line)) return 4;
        if (end == text.size()) break;
        at = end + 1;
    }
    return 0;
}

std::string format_bytes(uint64_t n) {
    if (n % (uint64_t{1} << 30) == 0) return std::to_string(n >> 30) + " GiB";
    if (n % (uint64_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
    return std::to_string(n) + " bytes";
}

std::string format_seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", s);
    return text;
}

// The error of a helper that left no whole reply: how it ended, with the last of its standard error.
Error ended_without_reply(const platform::ChildOutcome& outcome, const std::string& what, const JitLimits& limits) {
    std::string message = what + " " + outcome.how();
    if (outcome.timed_out) message += " (set a longer limit with SDM_JIT_TIME_LIMIT or the runtime's jit_time_limit_ms)";
    else if (outcome.signal != 0)
        message += "; the host is unharmed. A compiler may die so on a hostile or malformed input, or past its memory limit of " +
                   format_bytes(limits.memory_bytes) + " (SDM_JIT_MEMORY_LIMIT)";
    else message += outcome.reply.empty() ? " without a reply" : " with its reply cut short (" + std::to_string(outcome.reply.size()) + " bytes)";
    Error e = make_error(ErrorCode::jit, message);
    e.log = outcome.standard_error;
    while (!e.log.empty() && e.log.back() == '\n') e.log.pop_back();
    if (!e.log.empty()) e.message += "; its standard error:\n" + e.log;
    return e;
}

}  // namespace

const char* isolation_name(JitIsolation isolation) noexcept {
    switch (isolation) {
    case JitIsolation::automatic: return "auto";
    case JitIsolation::always: return "always";
    case JitIsolation::never: return "never";
    }
    return "auto";
}

JitIsolationSettings JitIsolationSettings::resolve(const JitIsolationOptions& o, const Logger& log) {
    JitIsolationSettings s;
    s.helper = o.helper;
    if (o.policy) {
        s.policy = *o.policy;
    } else if (const auto text = settings::value_or(settings::choice(settings::Id::jit_isolation, log), ""); !text.empty()) {
        // (A typo reads as always, with a warning: it must not weaken isolation.)
        s.policy = text == "auto" ? JitIsolation::automatic : text == "never" ? JitIsolation::never : JitIsolation::always;
    }
    // (The environment only where the host set nothing: its bad value is not warned of otherwise.)
    s.limits.seconds = o.seconds ? *o.seconds : settings::value_or(settings::seconds(settings::Id::jit_time_limit, log), s.limits.seconds);
    s.limits.memory_bytes =
        o.memory_bytes ? *o.memory_bytes : settings::value_or(settings::size(settings::Id::jit_memory_limit, log), s.limits.memory_bytes);
    return s;
}

Result<std::vector<std::string>> jit_helper_command(const JitIsolationSettings& settings) {
    if (!settings.helper.empty()) return settings.helper;
    std::vector<std::string> tried;
    const auto named = settings::path(settings::Id::jit_helper);  // an absolute path, else refused
    if (!named) return make_error(ErrorCode::jit, named.error().message);
    if (const auto& path = *named) {
        SDM_TRY_GET(present, platform::program_present(*path));
        if (*present) return std::vector<std::string>{*path};
        return make_error(ErrorCode::jit, "SDM_JIT_HELPER=" + *path + " does not exist; point it at sdm-jit-helper or unset it");
    }
    // Beside the binary that holds this code: libsdm in an install or a build tree, where the
    // helper is installed into its folder (a wheel, a build) or its sdm/ subfolder (a system
    // library directory, as Debian keeps a package's private programs). That folder is absolute,
    // fixed when libsdm was loaded: never relative to the working directory of the moment.
    if (const auto& dir = platform::own_binary_folder()) {
        for (const std::string& candidate : {*dir + "/sdm-jit-helper", *dir + "/sdm/sdm-jit-helper"}) {
            SDM_TRY_GET(present, platform::program_present(candidate));  // present but unsafe: an error, not the next place
            if (*present) return std::vector<std::string>{candidate};
            tried.push_back(candidate);
        }
    } else {
        tried.push_back("the folder of libsdm, which could not be found");
    }
    std::string places;
    for (const auto& t : tried) places += (places.empty() ? "" : ", ") + t;
    return make_error(ErrorCode::jit, "the JIT helper sdm-jit-helper, which runs links sdm cannot fully check in a process of their own, was not "
                                      "found (tried " + places + "); install it beside libsdm, set SDM_JIT_HELPER to its path, or let links "
                                      "run inside this process with SDM_JIT_ISOLATION=never");
}

Result<DemangleRun> run_demangler(const std::vector<std::string>& helper, std::string_view names, size_t count, const JitLimits& limits) {
    Writer request;
    request.u32(kRequestMagic).u32(kProtocol).u32(static_cast<uint32_t>(IsolatedTool::demangle)).u32(static_cast<uint32_t>(archive::Kind::manifest));
    request.u32(0).u32(0).f64(limits.seconds).u64(limits.memory_bytes);
    request.text("").text("kernel names").u32(0);
    request.bytes(as_bytes(names));
    platform::ChildRun run;
    run.argv = helper;
    run.request = request.out();
    run.seconds = limits.seconds;
    run.memory = limits.memory_bytes;
    run.max_reply = count * (kMaxDemangledOutput + 1);
    SDM_TRY_GET(outcome, platform::run_child(run));
    DemangleRun out;
    const std::string_view text(reinterpret_cast<const char*>(outcome->reply.data()), outcome->reply.size());
    for (size_t at = 0; at < text.size();) {
        const size_t end = text.find('\0', at);
        if (end == std::string_view::npos) break;  // a result cut short: not one
        out.demangled.emplace_back(text.substr(at, end - at));
        at = end + 1;
    }
    if (out.demangled.size() > count) out.demangled.resize(count);
    // A reply with every name is complete, however the helper then ended: its exit status is
    // not needed (and a host that reaps with __WALL may have taken it).
    out.complete = out.demangled.size() == count;
    if (!out.complete) out.how = "the demangler in the JIT helper (" + helper.front() + ") " + outcome->how() + " (limits " + format_seconds(limits.seconds) + ", " +
                                 format_bytes(limits.memory_bytes) + ")";
    return out;
}

Result<JitOutput> run_isolated(const std::vector<std::string>& helper, const IsolatedJob& job, const JitLimits& limits,
                               const std::function<void(int pid)>& started) {
    const std::string target = archive::target_name(archive::Kind::cubin, job.sm, job.variant);
    const std::string what = tool_name(job.tool) + " " + (job.input.kind == archive::Kind::ltoir ? "linking" : "compiling") + " " + job.input.name +
                             " for " + target + " in the JIT helper (" + helper.front() + ")";
    Writer request;
    request.u32(kRequestMagic).u32(kProtocol).u32(static_cast<uint32_t>(job.tool)).u32(static_cast<uint32_t>(job.input.kind));
    request.u32(job.sm).u32(static_cast<uint32_t>(job.variant)).f64(limits.seconds).u64(limits.memory_bytes);
    request.text(job.library).text(job.input.name).u32(static_cast<uint32_t>(job.options.size()));
    for (const auto& o : job.options) request.text(o);
    request.bytes(job.input.bytes);
    platform::ChildRun run;
    run.argv = helper;
    run.request = request.out();
    run.seconds = limits.seconds;
    run.memory = limits.memory_bytes;
    run.max_reply = archive::limits::max_raw_entry + kReplyOverhead;
    SDM_TRY_GET(outcome, platform::run_child(run, started));
    // A whole reply is trusted, however the helper ended after writing it; anything less is not
    // read, and how the helper ended is the error.
    Reader reply(outcome->reply);
    const bool framed = !outcome->reply.empty() && reply.u32() == kReplyMagic && reply.u32() == kProtocol;
    const bool ok = reply.u32() == 1;
    const auto native = static_cast<int32_t>(reply.u32());
    const double milliseconds = reply.f64();
    std::string message = reply.text(), log = reply.text(), info_log = reply.text();
    const Bytes cubin = reply.bytes();
    if (!framed || reply.failed()) return ended_without_reply(*outcome, what, limits);
    if (!ok) {
        Error e = make_error(ErrorCode::jit, message);
        e.native = native;
        e.log = std::move(log);
        return e;
    }
    JitOutput out;
    out.cubin.assign(cubin.begin(), cubin.end());
    out.info_log = std::move(info_log);
    out.milliseconds = milliseconds;
    return out;
}

namespace {

int helper_job() {
    if (platform::child_orphaned()) return 3;
    const auto bytes = platform::child_request();
    if (!bytes) return 2;
    Reader request(*bytes);
    if (request.u32() != kRequestMagic || request.u32() != kProtocol) return 2;
    IsolatedJob job;
    job.tool = static_cast<IsolatedTool>(request.u32());
    job.input.kind = static_cast<archive::Kind>(request.u32());
    job.sm = static_cast<uint16_t>(request.u32());
    job.variant = static_cast<archive::Variant>(request.u32());
    const double seconds = request.f64();
    const uint64_t memory = request.u64();
    job.library = request.text();
    job.input.name = request.text();
    const uint32_t options = request.u32();
    for (uint32_t i = 0; i < options && !request.failed(); ++i) job.options.push_back(request.text());
    job.input.bytes = request.bytes();
    if (request.failed()) return 2;

    // The limits, before the compiler is loaded: no core file of a crash, an address space the
    // compiler cannot grow past, and CPU time as a second bound behind the parent's clock.
    platform::child_limit(memory, seconds);

    Result<JitOutput> built = make_error(ErrorCode::internal, "unknown tool " + std::to_string(static_cast<uint32_t>(job.tool)));
    if (job.tool == IsolatedTool::nvjitlink) {
        auto linker = NvJitLink::load(job.library);
        if (!linker) built = make_error(ErrorCode::jit, linker.error().message);
        else built = linker->link(job.input, job.sm, job.variant, job.options);
    } else if (job.tool == IsolatedTool::ptx_compiler) {
        built = ptx_compile(job.input, job.sm, job.variant, job.options);
    } else if (job.tool == IsolatedTool::demangle) {
        return demangle_job(job.input.bytes);
    }
    Writer reply;
    reply.u32(kReplyMagic).u32(kProtocol);
    if (built) {
        reply.u32(1).u32(0).f64(built->milliseconds).text("").text("").text(built->info_log).bytes(built->cubin);
    } else {
        reply.u32(0).u32(static_cast<uint32_t>(built.error().native)).f64(0).text(built.error().message).text(built.error().log).text("").bytes({});
    }
    if (!platform::child_reply(reply.out())) return 4;
    return 0;
}

}  // namespace

int jit_helper_main() {
    // Nothing of the host's but descriptors 0-5 (a host may have opened files without
    // close-on-exec); no life beyond the parent's; and how it ends written down (descriptor 5)
    // for a parent whose host takes its exit status.
    platform::child_detach();
    platform::child_status_record_start();
    return platform::child_status_record_exit(helper_job());
}

}  // namespace sdm::runtime
