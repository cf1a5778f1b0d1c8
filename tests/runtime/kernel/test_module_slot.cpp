// The module slot's lifetime protocol (runtime/kernel/module_slot.hpp), alone: which steps hand it
// out, which one marks it unloaded, and that under threads exactly one does, never while a
// reference is held. The registry's use of it runs in test_modules, test_reload and reload_stress.
#include <atomic>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/kernel/module_slot.hpp"

using namespace sdm::runtime;
using Take = ModuleSlot::Take;
using Dropped = ModuleSlot::Dropped;

TEST_CASE("a new slot is handed to any fetch, but serves none until registered", "[module_slot]") {
    ModuleSlot slot({0, nullptr, "m", nullptr, 0});
    CHECK_FALSE(slot.take(Take::serving));
    REQUIRE(slot.take(Take::any));
    CHECK_FALSE(slot.registered());
    CHECK(slot.drop() == Dropped::kept);  // not registered: nothing to unload, whatever the count
    CHECK(slot.drop() == Dropped::too_often);
    CHECK_FALSE(slot.unloaded());
}

TEST_CASE("a registered slot serves until retired; its last reference then unloads it", "[module_slot]") {
    ModuleSlot slot({0, nullptr, "m", nullptr, 0});
    REQUIRE(slot.take(Take::any));  // the loading fetch's lease
    slot.mark_registered(true);
    CHECK(slot.serving());
    REQUIRE(slot.take(Take::serving));  // a second host reference
    CHECK_FALSE(slot.retire());         // two references left: not idle
    CHECK(slot.retired());
    CHECK_FALSE(slot.take(Take::serving));  // serves no new fetch
    CHECK_FALSE(slot.retire());             // retired once
    CHECK(slot.drop() == Dropped::kept);
    CHECK_FALSE(slot.unloaded());
    CHECK(slot.drop() == Dropped::unload);  // the last: marked unloaded, for the caller to unload
    CHECK(slot.unloaded());
    CHECK_FALSE(slot.take(Take::any));  // never handed out again
    CHECK(slot.drop() == Dropped::too_often);
}

TEST_CASE("an idle registered slot is unloaded by its retirement", "[module_slot]") {
    ModuleSlot slot({0, nullptr, "m", nullptr, 0});
    REQUIRE(slot.take(Take::any));
    slot.mark_registered(true);
    CHECK(slot.drop() == Dropped::kept);  // current: stays loaded with no reference
    CHECK(slot.retire());
    CHECK(slot.unloaded());
}

TEST_CASE("a slot registered after its archive was replaced is retired from the start", "[module_slot]") {
    ModuleSlot slot({0, nullptr, "m", nullptr, 0});
    REQUIRE(slot.take(Take::any));
    slot.mark_registered(false);
    CHECK(slot.retired());
    CHECK_FALSE(slot.serving());
    CHECK_FALSE(slot.retire());  // (the registry's reload finds it retired already)
    CHECK(slot.drop() == Dropped::unload);
}

TEST_CASE("under threads, exactly one step unloads a slot, and never while a reference is held", "[module_slot]") {
    for (int round = 0; round < 200; ++round) {
        ModuleSlot slot({0, nullptr, "m", nullptr, 0});
        REQUIRE(slot.take(Take::any));
        slot.mark_registered(true);
        REQUIRE(slot.drop() == Dropped::kept);
        std::atomic<int> unloads{0}, held{0}, broken{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&] {
                while (!go.load()) std::this_thread::yield();
                for (int i = 0; i < 200; ++i) {
                    if (!slot.take(Take::serving)) continue;
                    ++held;
                    if (slot.unloaded()) ++broken;  // handed out and unloaded at once
                    --held;
                    if (slot.drop() == Dropped::unload) ++unloads;
                }
            });
        threads.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            std::this_thread::yield();
            if (slot.retire()) ++unloads;
        });
        go = true;
        for (auto& t : threads) t.join();
        REQUIRE(broken == 0);
        REQUIRE(unloads == 1);
        REQUIRE(slot.unloaded());
        REQUIRE_FALSE(slot.take(Take::any));
    }
}
