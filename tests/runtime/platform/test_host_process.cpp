// The host's process is the host's (docs/RELIABILITY.md, "The host's process"): sdm's helper runs
// (the demangler over an archive's names, isolated links) conclude the same in a host that ignores
// SIGCHLD, reaps every child from a handler, forks from another thread all the time, forks after
// mounting and uses sdm in the child, or spawns and waits for children of its own. The compiler is
// tests/fake_nvjitlink (SDM_NVJITLINK), the driver the fake one. Each setup runs the same round:
//   - an archive of mangled names is listed with every name demangled (a complete reply is
//     trusted: with the host's reaping, a lost exit status once made the index read past its end);
//   - a lookup of a name no archive lists is SDM_ERROR_NOT_FOUND;
//   - a link whose compiler aborts says SIGABRT (how the helper ended is sdm's own to read);
//   - a good link serves; nothing ran to its time limit (a fork holding a pipe's write end once
//     made finished runs wait to their limit).
// Also: the helper found by an absolute path fixed when libsdm loaded, whatever the working
// directory becomes (tests/hosts/relative_host.c), and never a program others could have planted.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_runtime.hpp"
#include "sdm/sdm.h"
#include "support.hpp"
#include "archive/writer.hpp"

extern char** environ;

using namespace sdm;
using namespace sdm::test;

namespace {

// The SIGCHLD disposition of the process, put back when the setup ends.
struct ChildSignal {
    struct sigaction before {};
    explicit ChildSignal(void (*handler)(int), int flags = 0) {
        struct sigaction a {};
        a.sa_handler = handler;
        a.sa_flags = flags;
        sigemptyset(&a.sa_mask);
        sigaction(SIGCHLD, &a, &before);
    }
    ~ChildSignal() { sigaction(SIGCHLD, &before, nullptr); }
};

// A host that reaps every child that ends, from its handler (as many servers do).
void reap_all(int) {
    const int saved = errno;
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    errno = saved;
}

const std::vector<std::string> kMangled = {"_ZN8sdm_test4fillIfLi256EEEvPT_S1_", "_ZN8sdm_test4fillIiLi256EEEvPT_S1_", "_ZN8sdm_test6reduceIiEEvPKT_PS1_i",
                                           "_Z5scalePff", "_ZN2ns4axpyEfPKfPf"};

ByteVector ptx_with(const std::string& marker) {
    ByteVector ptx = data_file("kernels.compute_90.ptx");
    const std::string line = "// " + marker + "\n";
    ptx.insert(ptx.end(), reinterpret_cast<const std::byte*>(line.data()), reinterpret_cast<const std::byte*>(line.data()) + line.size());
    return ptx;
}

ByteVector ptx_archive(const std::string& marker) {
    archive::ArchiveWriter writer;
    REQUIRE(writer.add({"kernels", archive::Kind::ptx, 90, archive::Variant::base, ptx_with(marker)}));
    archive::Manifest m;
    m.kernel_abi_major = 1;
    m.kernels.push_back({"scale", "kernels", {archive::ParamType::ptr}, {}, {}});
    REQUIRE(writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()}));
    return writer.finish().value();
}

struct Fetched {
    sdm_status status;
    std::string message;
};
Fetched fetch_scale(sdm_runtime* rt, const ByteVector& bytes, const std::string& label) {
    mount(rt, bytes, label.c_str());
    sdm_kernel* k = nullptr;
    sdm_error* e = nullptr;
    Fetched f{sdm_kernel_get(rt, 0, "scale", nullptr, &k, &e), sdm_error_message(e)};
    sdm_error_destroy(e);
    return f;
}

// The round every setup runs, on a fresh runtime (isolation auto, a 4 s limit on each helper run).
// `round` names the archives (labels must differ between rounds in one process).
void helper_round(const std::string& round) {
    FakeRuntime f({.log = true, .jit_isolation = SDM_ISOLATION_AUTO});
    mount(f.rt.get(), make_archive("m", {"sm_90"}, kMangled, 1, Matrix::none), (round + "-names.sdma").c_str());
    const auto names = demangled_listing(f.rt.get(), 0);
    REQUIRE(names.size() == kMangled.size());
    for (const auto& n : names) CHECK_FALSE(n.empty());  // every name demangled
    CHECK(count_containing(f.log, "were not demangled") == 0);
    info_of(f.rt.get(), 0, "not_a_kernel_anywhere", SDM_ERROR_NOT_FOUND);
    info_of(f.rt.get(), 0, "ns::not_there<int>", SDM_ERROR_NOT_FOUND);

    const Fetched aborted = fetch_scale(f.rt.get(), ptx_archive("SDM_FAKE_JIT_ABORT"), round + "-abort.sdma");
    CHECK(aborted.status == SDM_ERROR_JIT);
    CHECK_THAT(aborted.message, Catch::Contains("was killed by signal 6 (SIGABRT)"));
    const Fetched good = fetch_scale(f.rt.get(), ptx_archive("nothing the fake acts on"), round + "-good.sdma");
    CHECK(good.status == SDM_OK);
    INFO(good.message);
    for (const auto& line : f.log) CHECK_THAT(line, !Catch::Contains("ran past its time limit"));
}

// The fake compiler, a good cubin for it, and a 4 s limit on every helper run.
struct HelperSetup {
    TempDir dir;
    EnvGuard jit{"SDM_NVJITLINK", SDM_TEST_FAKE_NVJITLINK};
    EnvGuard cubin{"SDM_FAKE_NVJITLINK_CUBIN", data_path("kernels.sm_90.cubin")};
    EnvGuard limit{"SDM_JIT_TIME_LIMIT", "4"};
    HelperSetup() { fake({kH200}); }
};

// A thread that forks all the time; each fork lives past the helper's limit (6 s against 4 s)
// holding copies of every descriptor the process had at that moment, then ends.
class ForkingThread {
public:
    ForkingThread()
        : thread_([this] {
              while (!stop_) {
                  const pid_t pid = fork();
                  if (pid == 0) {
                      struct timespec t {6, 0};
                      while (nanosleep(&t, &t) != 0) {
                      }
                      _exit(0);
                  }
                  if (pid > 0) {
                      children_.push_back(pid);
                      ++forks_;
                  }
                  std::this_thread::sleep_for(std::chrono::milliseconds(20));
              }
          }) {}
    ~ForkingThread() {
        stop_ = true;
        thread_.join();
        for (const pid_t pid : children_) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
    }
    size_t forks() const { return forks_; }

private:
    std::atomic<bool> stop_{false};
    std::vector<pid_t> children_;  // the thread's own; read after the join
    std::atomic<size_t> forks_{0};
    std::thread thread_;
};

// A host that spawns children of its own and waits for each by pid, all the while sdm runs its
// helpers: sdm collects only its own (waitid on its pidfd), never a status the host waits for.
class SpawningThread {
public:
    SpawningThread()
        : thread_([this] {
              while (!stop_) {
                  char sh[] = "/bin/sh", c[] = "-c", script[] = "exit 7";
                  char* argv[] = {sh, c, script, nullptr};
                  pid_t pid = -1;
                  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv, environ) != 0) continue;
                  int status = 0;
                  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7) ++wrong_;
                  ++spawned_;
              }
          }) {}
    ~SpawningThread() {
        stop_ = true;
        thread_.join();
    }
    int wrong() const { return wrong_; }
    int spawned() const { return spawned_; }

private:
    std::atomic<bool> stop_{false};
    std::atomic<int> wrong_{0}, spawned_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("a host that ignores SIGCHLD: the helper's runs conclude as in any host", "[host]") {
    HelperSetup setup;
    ChildSignal ignored(SIG_IGN);
    helper_round("ignored");
}

TEST_CASE("a host whose SIGCHLD handler reaps every child: the helper's runs conclude as in any host", "[host]") {
    HelperSetup setup;
    ChildSignal reaping(reap_all, SA_RESTART | SA_NOCLDSTOP);
    helper_round("reaping");
}

TEST_CASE("a host with a thread forking in a loop: finished helper runs are not waited on to their limit", "[host]") {
    HelperSetup setup;
    ForkingThread forking;
    helper_round("forking");
    helper_round("forking-again");
    CHECK(forking.forks() > 0);
}

TEST_CASE("a host that spawns and waits for its own children: each side collects only its own", "[host]") {
    HelperSetup setup;
    SpawningThread spawning;
    helper_round("spawning");
    helper_round("spawning-again");
    CHECK(spawning.wrong() == 0);
}

TEST_CASE("a host that forks after mounting: the child lists, looks up and links through the runtime it inherited", "[host]") {
    HelperSetup setup;
    FakeRuntime f({.jit_isolation = SDM_ISOLATION_AUTO});
    mount(f.rt.get(), make_archive("m", {"sm_90"}, kMangled, 1, Matrix::none), "before-fork.sdma");
    REQUIRE(demangled_listing(f.rt.get(), 0).size() == kMangled.size());  // the parent's index, built before the fork
    const pid_t pid = fork();
    if (pid == 0) {
        // The child: its own helper runs (the parent's pids mean nothing here), the inherited index.
        int failures = 0;
        const auto names = [&] {
            sdm_kernel_list* list = nullptr;
            if (sdm_kernel_list_create(f.rt.get(), 0, &list, nullptr) != SDM_OK) return 0u;
            uint32_t count = 0;
            sdm_kernel_list_count(list, &count, nullptr);
            sdm_kernel_list_destroy(list);
            return count;
        }();
        failures += names != kMangled.size();
        sdm_kernel* k = nullptr;
        failures += sdm_kernel_get(f.rt.get(), 0, "not_a_kernel_anywhere", nullptr, &k, nullptr) != SDM_ERROR_NOT_FOUND;
        const ByteVector good = ptx_archive("nothing the fake acts on");
        failures += sdm_archive_mount_memory(f.rt.get(), good.data(), good.size(), "child-good.sdma", nullptr) != SDM_OK;
        failures += sdm_kernel_get(f.rt.get(), 0, "scale", nullptr, &k, nullptr) != SDM_OK;
        _exit(failures);
    }
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // And the parent goes on.
    const Fetched good = fetch_scale(f.rt.get(), ptx_archive("nothing the fake acts on"), "parent-good.sdma");
    CHECK(good.status == SDM_OK);
}

TEST_CASE("the helper is found by the absolute path of libsdm's folder fixed at load, never after a chdir; planted helpers are refused", "[host][hostile]") {
    TempDir dir;
    // libsdm and its helper in app/lib, loaded as "lib/libsdm.so.1" from app/ (a relative path, as
    // a relative LD_LIBRARY_PATH entry gives); a planted lib/sdm-jit-helper in evil/, where the
    // host then changes directory before the first helper run.
    const std::string app = dir.path + "/app", evil = dir.path + "/evil", marker = dir.path + "/planted-ran";
    for (const auto& d : {app, app + "/lib", evil, evil + "/lib"}) REQUIRE(mkdir(d.c_str(), 0755) == 0);
    const auto copy = [](const std::string& from, const std::string& to, mode_t mode) {
        std::ifstream in(from, std::ios::binary);
        std::ofstream out(to, std::ios::binary);
        out << in.rdbuf();
        out.close();
        REQUIRE(chmod(to.c_str(), mode) == 0);
    };
    copy(SDM_TEST_LIBSDM, app + "/lib/libsdm.so.1", 0755);
    copy(SDM_TEST_JIT_HELPER, app + "/lib/sdm-jit-helper", 0755);
    {
        std::ofstream planted(evil + "/lib/sdm-jit-helper");
        planted << "#!/bin/sh\ntouch " << marker << "\n";
    }
    REQUIRE(chmod((evil + "/lib/sdm-jit-helper").c_str(), 0755) == 0);
    const std::string names = dir.path + "/names.sdma";
    drop(names, make_archive("m", {"sm_90"}, kMangled, 1, Matrix::none));

    const auto run_host = [&](const std::string& helper_env) {
        const std::string command = "cd " + app + " && " + helper_env + " " + SDM_TEST_RELATIVE_HOST + " lib/libsdm.so.1 " + evil + " " + names + " " +
                                    SDM_FAKE_CUDA_PATH + " > " + dir.path + "/host.out 2>&1";
        const int status = std::system(command.c_str());
        std::ifstream in(dir.path + "/host.out");
        std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        INFO(out);
        return std::pair<int, std::string>{status, out};
    };
    const auto [status, out] = run_host("");
    CHECK(WEXITSTATUS(status) == 0);
    CHECK_THAT(out, Catch::Contains("demangled 5 of 5"));
    struct stat st {};
    CHECK(stat(marker.c_str(), &st) != 0);  // the planted helper never ran

    // A helper others could have changed is refused, naming it, never run: group-writable here.
    REQUIRE(chmod((app + "/lib/sdm-jit-helper").c_str(), 0775) == 0);
    const auto [refused_status, refused] = run_host("");
    CHECK(WEXITSTATUS(refused_status) == 0);
    CHECK_THAT(refused, Catch::Contains("demangled 0 of 5") && Catch::Contains("is writable by its group or by others"));
    // SDM_JIT_HELPER must be absolute.
    REQUIRE(chmod((app + "/lib/sdm-jit-helper").c_str(), 0755) == 0);
    const auto [relative_status, relative] = run_host("SDM_JIT_HELPER=lib/sdm-jit-helper");
    CHECK_THAT(relative, Catch::Contains("demangled 0 of 5") && Catch::Contains("is not an absolute path"));
    CHECK(stat(marker.c_str(), &st) != 0);
}
