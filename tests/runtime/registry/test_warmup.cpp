// sdm_preload_async (ABI 1.5): a background warm-up's progress rises to its total, a wait with a
// deadline says when it passed, a cancel skips the modules not started, priorities order the
// pending warm-ups, the done callback runs once (and may fetch, or destroy its own warm-up), a
// fetch of a module being warmed up waits for that load instead of loading it again, destroying
// the runtime cancels and joins what runs, and hostile arguments are refused or reported as
// sdm_preload reports them. The fake driver holds every load until the test lets it go
// (hold_loads), so nothing here depends on timing.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "archive/manifest.hpp"
#include "archive/writer.hpp"
#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"

using namespace sdm::test;

namespace {

constexpr uint32_t kLong = 60000;  // ms: a wait that ends by the warm-up finishing, bounded only so a bug fails rather than hangs

// An archive of `count` modules m0, m1, ..., each the test cubin, listing its kernel scale
// (fetched as "m0!scale").
sdm::ByteVector modules_archive(int count) {
    sdm::archive::ArchiveWriter writer;
    sdm::archive::Manifest m;
    m.kernel_abi_major = 1;
    m.hardware_matrix = false;
    const sdm::ByteVector cubin = data_file("kernels.sm_90.cubin");
    for (int i = 0; i < count; ++i) {
        const std::string module = "m" + std::to_string(i);
        REQUIRE(writer.add({module, sdm::archive::Kind::cubin, 90, sdm::archive::Variant::base, cubin}));
        m.kernels.push_back({"scale", module, {sdm::archive::ParamType::ptr}, {}, {}});
    }
    REQUIRE(writer.add({"manifest", sdm::archive::Kind::manifest, 0, sdm::archive::Variant::base, sdm::archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

// A runtime whose warm-ups run on one thread (SDM_WARMUP_THREADS=1), so that their order is the
// scheduler's alone, with the fake holding every load until released; the hold is lifted before
// the runtime goes (its destruction waits for the loads under way).
struct OneThread {
    explicit OneThread(int modules) {
        mount(f.rt.get(), modules_archive(modules), "modules.sdma");
        fake_set_hold_loads(true);
    }
    ~OneThread() {
        fake_set_hold_loads(false);
        f.rt.reset();
    }
    sdm_runtime* rt() { return f.rt.get(); }
    EnvGuard threads{"SDM_WARMUP_THREADS", "1"};
    FakeRuntime f;
};

// What the done callbacks saw, in the order they ran.
struct Calls {
    std::mutex mutex;
    std::vector<std::pair<std::string, sdm_status>> seen;
    std::vector<std::string> tags;  // user_data points at one of these
    size_t count() {
        std::lock_guard lock(mutex);
        return seen.size();
    }
};
struct Tagged {
    Calls* calls;
    std::string tag;
};

void record_done(void* user_data, sdm_status status, const sdm_warmup* warmup) {
    auto* t = static_cast<Tagged*>(user_data);
    uint32_t done = 0;
    const bool answers = sdm_warmup_progress(warmup, &done, nullptr, nullptr) == SDM_OK;  // the handle is usable from its callback
    std::lock_guard lock(t->calls->mutex);
    t->calls->seen.emplace_back(answers ? t->tag : t->tag + " (progress failed)", status);
}

sdm_warmup* start(sdm_runtime* rt, std::vector<const char*> names, int32_t priority = 0, Tagged* tagged = nullptr) {
    sdm_warmup* w = nullptr;
    sdm_error* e = nullptr;
    const sdm_status s = sdm_preload_async(rt, 0, names.empty() ? nullptr : names.data(), static_cast<uint32_t>(names.size()), priority,
                                           tagged ? record_done : nullptr, tagged, &w, &e);
    if (s != SDM_OK) FAIL(sdm_error_message(e));
    REQUIRE(w != nullptr);
    return w;
}

std::pair<uint32_t, uint32_t> progress_of(const sdm_warmup* w) {
    uint32_t done = 99, total = 99;
    REQUIRE(sdm_warmup_progress(w, &done, &total, nullptr) == SDM_OK);
    return {done, total};
}

// Waits until the warm-up has finished `done` modules (bounded: a bug fails rather than hangs).
void wait_for_progress(const sdm_warmup* w, uint32_t done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (progress_of(w).first < done && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(progress_of(w).first == done);
}

std::string wait_message(sdm_warmup* w, uint32_t timeout_ms, sdm_status expect) {
    sdm_error* e = nullptr;
    const sdm_status s = sdm_warmup_wait(w, timeout_ms, &e);
    CHECK(s == expect);
    CHECK(sdm_error_code(e) == s);
    std::string message = sdm_error_message(e);
    sdm_error_destroy(e);
    INFO(message);
    return message;
}

}  // namespace

TEST_CASE("a warm-up's progress rises module by module to its total; its wait says when it has not finished", "[warmup]") {
    OneThread t(3);
    Calls calls;
    Tagged tag{&calls, "all"};
    sdm_warmup* w = start(t.rt(), {}, 0, &tag);
    for (uint32_t loaded = 0; loaded < 3; ++loaded) {
        fake_wait_held_loads(1);  // module `loaded` is loading, held by the fake
        CHECK(progress_of(w) == std::pair<uint32_t, uint32_t>{loaded, 3});
        CHECK(wait_message(w, 0, SDM_ERROR_TIMEOUT).find("had not finished after 0 ms") != std::string::npos);
        if (loaded == 1) {  // a deadline that passes: the wait took at least it, and the warm-up goes on
            const auto before = std::chrono::steady_clock::now();
            wait_message(w, 30, SDM_ERROR_TIMEOUT);
            CHECK(std::chrono::steady_clock::now() - before >= std::chrono::milliseconds(30));
        }
        CHECK(calls.count() == 0);
        fake_release_loads(1);
        wait_for_progress(w, loaded + 1);
    }
    CHECK(sdm_warmup_wait(w, kLong, nullptr) == SDM_OK);
    CHECK(sdm_warmup_wait(w, 0, nullptr) == SDM_OK);  // the outcome, each time it is asked
    CHECK(progress_of(w) == std::pair<uint32_t, uint32_t>{3, 3});
    CHECK(fake_calls("@modules") == 3);
    sdm_warmup_destroy(w);  // waits for the callback
    REQUIRE(calls.count() == 1);
    CHECK(calls.seen[0] == std::pair<std::string, sdm_status>{"all", SDM_OK});
}

TEST_CASE("a cancelled warm-up skips the modules it has not started; the one loading finishes and stays loaded", "[warmup]") {
    OneThread t(4);
    Calls calls;
    Tagged tag{&calls, "cancelled"};
    sdm_warmup* w = start(t.rt(), {}, 0, &tag);
    fake_wait_held_loads(1);
    CHECK(sdm_warmup_cancel(w, nullptr) == SDM_OK);
    CHECK(sdm_warmup_wait(w, 0, nullptr) == SDM_ERROR_TIMEOUT);  // its load under way decides nothing yet
    fake_release_loads(1);
    const std::string message = wait_message(w, kLong, SDM_ERROR_CANCELLED);
    CHECK(message.find("cancelled after 1 of its 4 modules") != std::string::npos);
    CHECK(progress_of(w) == std::pair<uint32_t, uint32_t>{1, 4});  // below the total: cancelled
    CHECK(sdm_warmup_cancel(w, nullptr) == SDM_OK);                // again, after it finished: nothing changes
    CHECK(sdm_warmup_wait(w, 0, nullptr) == SDM_ERROR_CANCELLED);
    CHECK(fake_calls("@modules") == 1);
    CHECK(fake_image_loads() == 1);
    sdm_warmup_destroy(w);
    REQUIRE(calls.count() == 1);
    CHECK(calls.seen[0].second == SDM_ERROR_CANCELLED);
    // Cancelled before any module started: nothing loads, and the outcome is known at once.
    Tagged early_tag{&calls, "early"};
    sdm_warmup* blocker = start(t.rt(), {"m1!scale"}, 100);
    fake_wait_held_loads(1);  // the one thread is busy: the next warm-up waits in the queue
    sdm_warmup* early = start(t.rt(), {"m2!scale", "m3!scale"}, 0, &early_tag);
    CHECK(sdm_warmup_cancel(early, nullptr) == SDM_OK);
    CHECK(wait_message(early, 0, SDM_ERROR_CANCELLED).find("after none of its modules") != std::string::npos);
    CHECK(progress_of(early) == std::pair<uint32_t, uint32_t>{0, 0});
    fake_release_loads(1);
    CHECK(sdm_warmup_wait(blocker, kLong, nullptr) == SDM_OK);
    sdm_warmup_destroy(early);
    sdm_warmup_destroy(blocker);
    CHECK(fake_image_loads() == 2);  // m0 and the blocker's m1: m2 and m3 never
    REQUIRE(calls.count() == 2);
    CHECK(calls.seen[1] == std::pair<std::string, sdm_status>{"early", SDM_ERROR_CANCELLED});
}

TEST_CASE("pending warm-ups run by priority, the earliest first at equal priority", "[warmup]") {
    OneThread t(5);
    Calls calls;
    Tagged blocker_tag{&calls, "blocker"}, low{&calls, "low"}, high{&calls, "high"}, first_equal{&calls, "equal 1"},
        second_equal{&calls, "equal 2"};
    sdm_warmup* blocker = start(t.rt(), {"m0!scale"}, 100, &blocker_tag);
    fake_wait_held_loads(1);  // the one thread loads m0; the others queue behind it
    std::vector<sdm_warmup*> queued{start(t.rt(), {"m1!scale"}, -5, &low), start(t.rt(), {"m2!scale"}, 0, &first_equal),
                                    start(t.rt(), {"m3!scale"}, 7, &high), start(t.rt(), {"m4!scale"}, 0, &second_equal)};
    fake_set_hold_loads(false);
    CHECK(sdm_warmup_wait(blocker, kLong, nullptr) == SDM_OK);
    for (sdm_warmup* w : queued) CHECK(sdm_warmup_wait(w, kLong, nullptr) == SDM_OK);
    sdm_warmup_destroy(blocker);
    for (sdm_warmup* w : queued) sdm_warmup_destroy(w);
    REQUIRE(calls.count() == 5);
    std::vector<std::string> order;
    for (const auto& [tag, status] : calls.seen) order.push_back(tag);
    CHECK(order == std::vector<std::string>{"blocker", "high", "equal 1", "equal 2", "low"});
}

namespace {

// A callback that calls back into sdm: fetches a kernel of the module warmed up, reads the
// progress, and destroys its own warm-up.
struct Reentry {
    sdm_runtime* rt{nullptr};
    std::atomic<int> calls{0};
    std::atomic<sdm_status> status{-1}, fetched{-1};
    std::atomic<uint32_t> done_seen{0};
};

void reenter(void* user_data, sdm_status status, const sdm_warmup* warmup) {
    auto* r = static_cast<Reentry*>(user_data);
    sdm_kernel* k = nullptr;
    r->fetched = sdm_kernel_get(r->rt, 0, "m0!scale", nullptr, &k, nullptr);
    uint32_t done = 0;
    if (sdm_warmup_progress(warmup, &done, nullptr, nullptr) == SDM_OK) r->done_seen = done;
    r->status = status;
    sdm_warmup_destroy(const_cast<sdm_warmup*>(warmup));  // freed once this returns
    ++r->calls;
}

}  // namespace

TEST_CASE("the done callback runs once, may fetch kernels and may destroy its own warm-up", "[warmup]") {
    FakeRuntime f;
    mount(f.rt.get(), modules_archive(2), "modules.sdma");
    Reentry r;
    r.rt = f.rt.get();
    sdm_warmup* w = nullptr;
    REQUIRE(sdm_preload_async(f.rt.get(), 0, nullptr, 0, 0, reenter, &r, &w, nullptr) == SDM_OK);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (r.calls == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    f.rt.reset();  // joins the threads: the callback has returned
    CHECK(r.calls == 1);
    CHECK(r.status == SDM_OK);
    CHECK(r.fetched == SDM_OK);
    CHECK(r.done_seen == 2);
    CHECK(fake_image_loads() == 2);  // the fetch found m0 loaded
}

TEST_CASE("a fetch of a module being warmed up waits for that load instead of loading it again", "[warmup]") {
    OneThread t(1);
    sdm_warmup* w = start(t.rt(), {});
    fake_wait_held_loads(1);  // the warm-up is loading m0
    std::atomic<sdm_status> fetched{-1};
    std::thread fetcher([&] {
        sdm_kernel* k = nullptr;
        fetched = sdm_kernel_get(t.rt(), 0, "m0!scale", nullptr, &k, nullptr);
    });
    // Time for the fetch to reach the module (not an assertion on time: a fetch that loaded on its
    // own would be held by the fake beside the warm-up's load, which the count below would show).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(fake_calls("@held_loads") == 1);
    CHECK(fetched == -1);  // it waits for the warm-up's load
    fake_set_hold_loads(false);
    fetcher.join();
    CHECK(fetched == SDM_OK);
    CHECK(sdm_warmup_wait(w, kLong, nullptr) == SDM_OK);
    CHECK(fake_image_loads() == 1);
    CHECK(fake_calls("@modules") == 1);
    sdm_warmup_destroy(w);
}

TEST_CASE("destroying the runtime cancels the warm-ups that run and joins their threads; the handles still answer", "[warmup]") {
    EnvGuard threads("SDM_WARMUP_THREADS", "1");  // one module loading when the runtime goes: the others are cut
    FakeRuntime f;
    mount(f.rt.get(), modules_archive(6), "modules.sdma");
    fake_set_hold_loads(true);
    Calls calls;
    std::vector<Tagged> tags{{&calls, "a"}, {&calls, "b"}, {&calls, "c"}};
    std::vector<sdm_warmup*> warmups{start(f.rt.get(), {"m0!scale", "m1!scale"}, 2, &tags[0]), start(f.rt.get(), {"m2!scale", "m3!scale"}, 1, &tags[1]),
                                     start(f.rt.get(), {"m4!scale", "m5!scale"}, 0, &tags[2])};
    fake_wait_held_loads(1);
    // The loads under way finish before the runtime goes: lifted while it is being destroyed.
    std::thread lift([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        fake_set_hold_loads(false);
    });
    f.rt.reset();
    lift.join();
    REQUIRE(calls.count() == 3);  // each called once, within sdm_runtime_destroy
    for (const auto& [tag, status] : calls.seen) CHECK(status == SDM_ERROR_CANCELLED);
    for (sdm_warmup* w : warmups) {
        CHECK(sdm_warmup_wait(w, 0, nullptr) == SDM_ERROR_CANCELLED);
        const auto [done, total] = progress_of(w);
        CHECK(done < 2);
        CHECK(sdm_warmup_cancel(w, nullptr) == SDM_OK);
        sdm_warmup_destroy(w);
    }
    CHECK(fake_calls("@modules") == 0);  // what loaded was unloaded with the runtime
}

TEST_CASE_METHOD(FakeRuntime, "hostile arguments: NULLs are refused; a bad ordinal and unknown names are the warm-up's outcome, as sdm_preload's", "[warmup]") {
    mount(rt.get(), modules_archive(2), "modules.sdma");
    sdm_warmup* w = nullptr;
    const char* names[] = {"m0!scale", "no_such_kernel", "m1!scale", "nor_this"};
    const char* with_null[] = {"m0!scale", nullptr};
    CHECK(sdm_preload_async(nullptr, 0, nullptr, 0, 0, nullptr, nullptr, &w, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_preload_async(rt.get(), 0, nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_preload_async(rt.get(), 0, nullptr, 2, 0, nullptr, nullptr, &w, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_error* e = nullptr;
    CHECK(sdm_preload_async(rt.get(), 0, with_null, 2, 0, nullptr, nullptr, &w, &e) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(sdm_error_message(e)).find("names[1] is NULL") != std::string::npos);
    sdm_error_destroy(e);
    CHECK(w == nullptr);
    uint32_t done = 0, total = 0;
    CHECK(sdm_warmup_progress(nullptr, &done, &total, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_warmup_wait(nullptr, 0, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    CHECK(sdm_warmup_cancel(nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    sdm_warmup_destroy(nullptr);

    // Unknown names: reported as sdm_preload reports them; the others load.
    w = start(rt.get(), {names[0], names[1], names[2], names[3]});
    CHECK(sdm_warmup_progress(w, nullptr, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT);
    const std::string message = wait_message(w, kLong, SDM_ERROR_NOT_FOUND);
    CHECK(message.find("2 kernels did not preload (no_such_kernel, nor_this); the others did") != std::string::npos);
    CHECK(progress_of(w) == std::pair<uint32_t, uint32_t>{2, 2});
    CHECK(fake_calls("@modules") == 2);
    sdm_warmup_destroy(w);
    sdm_error* last = nullptr;  // the outcome was reported into the runtime's last error, as a call's
    REQUIRE(sdm_runtime_last_error(rt.get(), &last) == SDM_OK);
    CHECK(sdm_error_code(last) == SDM_ERROR_NOT_FOUND);
    sdm_error_destroy(last);
    CHECK(sdm_preload(rt.get(), 0, names, 4, nullptr) == SDM_ERROR_NOT_FOUND);

    // A device that does not exist: the same outcome as sdm_preload's.
    for (int32_t ordinal : {7, -1}) {
        sdm_warmup* bad = nullptr;
        REQUIRE(sdm_preload_async(rt.get(), ordinal, names, 1, 0, nullptr, nullptr, &bad, nullptr) == SDM_OK);
        const sdm_status sync = sdm_preload(rt.get(), ordinal, names, 1, nullptr);
        CHECK(sync != SDM_OK);
        CHECK(sdm_warmup_wait(bad, kLong, nullptr) == sync);
        sdm_warmup_destroy(bad);
    }
}

TEST_CASE_METHOD(FakeRuntime, "a forked child gets none of the warm-up threads: its copy of a warm-up refuses, the parent's goes on", "[warmup][fork]") {
    mount(rt.get(), modules_archive(2), "modules.sdma");
    fake_set_hold_loads(true);
    sdm_warmup* w = start(rt.get(), {});
    fake_wait_held_loads(1);  // a thread of the parent's is loading
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // no Catch here: the child reports by its exit status
        uint32_t done = 0;
        const bool refused = sdm_warmup_progress(w, &done, nullptr, nullptr) == SDM_ERROR_INVALID_ARGUMENT &&
                             sdm_warmup_wait(w, 0, nullptr) == SDM_ERROR_INVALID_ARGUMENT;
        sdm_warmup_destroy(w);  // left alone: no wait for a thread that is not here
        _exit(refused ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    fake_set_hold_loads(false);
    CHECK(sdm_warmup_wait(w, kLong, nullptr) == SDM_OK);
    CHECK(progress_of(w) == std::pair<uint32_t, uint32_t>{2, 2});
    sdm_warmup_destroy(w);
}
