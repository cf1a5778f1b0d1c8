// The platform layer on Windows (platform_windows.cpp, platform_child_windows.cpp,
// file_map_windows.cpp), run under wine64: directories held by a handle and everything below them
// opened relative to it, atomic writes, whole reads, listings, byte-range locks and their marks,
// path lists, the archive layer's file map, and children run in a Job Object (tests/windows/child.cpp,
// whose path is $SDM_TEST_CHILD). Hostile names and files are refused with a message naming them.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>

#include <windows.h>

#include "archive/file_map.hpp"
#include "runtime/jit/jit_nvjitlink.hpp"
#include "runtime/platform/platform.hpp"

namespace platform = sdm::runtime::platform;
using sdm::Bytes;
using sdm::ErrorCode;

// REQUIRE(result), with the error's message when it failed.
#define REQUIRE_OK(expression)                                               \
    do {                                                                     \
        const auto& result_ = (expression);                                  \
        INFO((result_ ? std::string() : result_.error().message));           \
        REQUIRE(result_);                                                    \
    } while (false)

namespace {

std::string scratch_dir() {
    char temp[MAX_PATH + 1];
    REQUIRE(::GetTempPathA(MAX_PATH + 1, temp) != 0);
    return std::string(temp) + "sdm-platform-test-" + std::to_string(::GetCurrentProcessId()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

Bytes text_bytes(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

std::string as_text(const sdm::ByteVector& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

std::string child_path() {
    const char* path = std::getenv("SDM_TEST_CHILD");
    REQUIRE(path != nullptr);
    return path;
}

}  // namespace

TEST_CASE("a directory: create, write atomically, read whole, list, remove", "[windows]") {
    auto root = platform::Directory::open(scratch_dir(), true, 0700);
    REQUIRE(root);
    auto child = root->child("entries", true, 0700);
    REQUIRE(child);
    REQUIRE(child->status()->directory);
    REQUIRE_OK(child->write_file_atomic("a", "a.tmp", {text_bytes("hello "), text_bytes("windows")}));
    REQUIRE_OK(child->write_file_atomic("a", "a.tmp", {text_bytes("replaced")}));  // over an existing file
    const auto read = child->read_file("a", 1 << 20, {});
    REQUIRE(read);
    CHECK(as_text(read->second) == "replaced");
    CHECK(read->first.regular);
    CHECK(read->first.size == 8);
    const auto listed = child->list();
    REQUIRE(listed);
    REQUIRE(listed->size() == 1);
    CHECK(listed->front().first == "a");
    const auto inode = child->status_of("a")->inode;
    CHECK_FALSE(child->remove("a", inode + 1));  // another file's identity: kept
    CHECK(child->remove("a", inode));
    CHECK_FALSE(child->status_of("a"));
    CHECK(child->read_file("a", 1 << 20, {}).error().code == ErrorCode::not_found);
}

TEST_CASE("a directory refuses names that are not one plain component, and reads only regular files", "[windows]") {
    auto root = platform::Directory::open(scratch_dir(), true, 0700);
    REQUIRE(root);
    for (const char* name : {"..", ".", "a\\b", "a/b", "file:stream", ""}) {
        INFO(name);
        CHECK_FALSE(root->child(name, true, 0700));
        CHECK_FALSE(root->write_file_atomic(name, "t.tmp", {text_bytes("x")}));
        CHECK_FALSE(root->status_of(name));
    }
    REQUIRE(root->child("sub", true, 0700));
    const auto dir = root->read_file("sub", 1 << 20, {});
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message.find("not a regular file") != std::string::npos);
    REQUIRE_OK(root->write_file_atomic("big", "big.tmp", {text_bytes("0123456789")}));
    const auto big = root->read_file("big", 4, {});
    REQUIRE_FALSE(big);
    CHECK(big.error().message.find("more than the 4 it may hold") != std::string::npos);
    const auto refused = root->read_file("big", 1 << 20, [](const platform::FileStatus&) -> sdm::Result<void> {
        return sdm::make_error(ErrorCode::invalid_argument, "refused by the caller");
    });
    CHECK_FALSE(refused);
    CHECK_FALSE(platform::Directory::open(scratch_dir() + "\\absent", false, 0700));
}

TEST_CASE("a lock: held, seen as held by another handle, its holder named, released with its handle", "[windows]") {
    auto root = platform::Directory::open(scratch_dir(), true, 0700);
    REQUIRE(root);
    {
        auto held = root->lock("l", 10, 10, {}, {"linking a test", 60});
        REQUIRE(held);
        CHECK_FALSE(root->try_lock("l"));
        std::string holder;
        const auto waited = root->lock("l", 0.05, 0.3, [&](const std::string& who) { holder = who; });
        REQUIRE_FALSE(waited);
        CHECK(holder.find("another thread of this process (linking a test") != std::string::npos);
        CHECK(waited.error().message.find("gave up after") != std::string::npos);
    }
    CHECK(root->try_lock("l"));
}

TEST_CASE("path lists are ';'-separated on Windows", "[windows]") {
    REQUIRE(::SetEnvironmentVariableA("SDM_TEST_LIST", "C:\\a.sdma;;D:\\b c\\d.sdma;"));
    const auto list = platform::env_list("SDM_TEST_LIST");
    REQUIRE(list.size() == 2);
    CHECK(list[0] == "C:\\a.sdma");
    CHECK(list[1] == "D:\\b c\\d.sdma");
}

TEST_CASE("sdm's per-user folders: under %LOCALAPPDATA%, else the profile's AppData\\Local, else none", "[windows]") {
    using platform::UserFolder;
    const auto saved_local = platform::env("LOCALAPPDATA"), saved_profile = platform::env("USERPROFILE");
    REQUIRE(::SetEnvironmentVariableA("LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local"));
    CHECK(platform::user_folder(UserFolder::cache) == "C:\\Users\\u\\AppData\\Local\\sdm\\cache");
    CHECK(platform::user_folder(UserFolder::state) == "C:\\Users\\u\\AppData\\Local\\sdm\\state");
    REQUIRE(::SetEnvironmentVariableA("LOCALAPPDATA", nullptr));
    REQUIRE(::SetEnvironmentVariableA("USERPROFILE", "D:\\p"));
    CHECK(platform::user_folder(UserFolder::cache) == "D:\\p\\AppData\\Local\\sdm\\cache");
    REQUIRE(::SetEnvironmentVariableA("USERPROFILE", nullptr));
    CHECK_FALSE(platform::user_folder(UserFolder::state).has_value());
    ::SetEnvironmentVariableA("LOCALAPPDATA", saved_local ? saved_local->c_str() : nullptr);
    ::SetEnvironmentVariableA("USERPROFILE", saved_profile ? saved_profile->c_str() : nullptr);
}

TEST_CASE("nvJitLink where a Windows toolkit puts it: %CUDA_PATH%\\bin\\x64\\nvJitLink_130_0.dll, found and loaded", "[windows]") {
    // The fake nvJitLink under the name CUDA 13 gives its DLL, in a made-up toolkit.
    const char* fake = std::getenv("SDM_TEST_FAKE_NVJITLINK");
    REQUIRE(fake != nullptr);
    const std::string toolkit = scratch_dir();
    REQUIRE(platform::make_directories(toolkit + "\\bin\\x64", 0700));
    const std::string dll = toolkit + "\\bin\\x64\\nvJitLink_130_0.dll";
    REQUIRE(::CopyFileA(fake, dll.c_str(), FALSE));
    CHECK(platform::toolkit_library_names("nvJitLink", {13, 12}) == std::vector<std::string>{"nvJitLink_130_0.dll", "nvJitLink_120_0.dll"});
    CHECK(platform::names_a_path("C:\\cuda\\nvJitLink_130_0.dll"));
    CHECK_FALSE(platform::names_a_path("nvJitLink_130_0.dll"));
    const auto saved = platform::env("CUDA_PATH");
    REQUIRE(::SetEnvironmentVariableA("CUDA_PATH", toolkit.c_str()));
    const auto found = sdm::runtime::locate_nvjitlink("");
    REQUIRE(found);
    CHECK(found->file.find("nvJitLink_130_0.dll") != std::string::npos);
    CHECK(found->file.find(toolkit.substr(toolkit.find_last_of('\\') + 1)) != std::string::npos);
    auto loaded = sdm::runtime::NvJitLink::load("");
    INFO((loaded ? std::string() : loaded.error().message));
    REQUIRE(loaded);
    CHECK(loaded->major() == 13);
    // Without a toolkit to look in, none is found: the loader's own search never reads the
    // working directory or PATH.
    REQUIRE(::SetEnvironmentVariableA("CUDA_PATH", nullptr));
    CHECK_FALSE(sdm::runtime::locate_nvjitlink(""));
    ::SetEnvironmentVariableA("CUDA_PATH", saved ? saved->c_str() : nullptr);
}

TEST_CASE("the archive layer's file map: mapped or read, identity kept, a directory refused", "[windows]") {
    const std::string dir = scratch_dir();
    auto root = platform::Directory::open(dir, true, 0700);
    REQUIRE(root);
    // A file of kWindowsMapFrom bytes is mapped (unless a private copy is asked for); a smaller one is
    // read, so that a new version can be renamed over it while it is open (a mounted archive).
    const std::string content(sdm::archive::kWindowsMapFrom, 'x');
    REQUIRE_OK(root->write_file_atomic("f", "f.tmp", {text_bytes(content)}));
    for (const bool copy : {false, true}) {
        sdm::archive::FileMapOptions options;
        options.private_copy = copy;
        const auto map = sdm::archive::FileMap::open(dir + "\\f", options);
        REQUIRE(map);
        CHECK((*map)->bytes().size() == content.size());
        CHECK((*map)->mapped() == !copy);
        CHECK((*map)->inode() == root->status_of("f")->inode);
    }
    REQUIRE_OK(root->write_file_atomic("small", "small.tmp", {text_bytes("an archive")}));
    const auto small_map = sdm::archive::FileMap::open(dir + "\\small");
    REQUIRE(small_map);
    CHECK_FALSE((*small_map)->mapped());
    REQUIRE_OK(root->write_file_atomic("small", "small.tmp", {text_bytes("a new version")}));  // renamed over it while open
    CHECK(std::string(reinterpret_cast<const char*>((*small_map)->bytes().data()), (*small_map)->bytes().size()) == "an archive");
    const auto directory = sdm::archive::FileMap::open(dir);
    REQUIRE_FALSE(directory);
    CHECK(directory.error().message.find("is a directory") != std::string::npos);
    sdm::archive::FileMapOptions small;
    small.max_size = 10;
    CHECK_FALSE(sdm::archive::FileMap::open(dir + "\\f", small));
}

TEST_CASE("a child in a job object: its request and reply, its exit status, a time limit, a crash", "[windows]") {
    const std::string child = child_path();
    platform::ChildRun run;
    run.argv = {child, "echo"};
    const std::string request = "a request with \"quotes\" and spaces";
    run.request = text_bytes(request);
    run.seconds = 30;
    run.max_reply = 1 << 20;
    int pid = 0;
    auto echoed = platform::run_child(run, [&](int p) { pid = p; });
    REQUIRE(echoed);
    CHECK(pid > 0);
    CHECK(echoed->exit_code == 0);
    CHECK(as_text(echoed->reply) == std::string(request.rbegin(), request.rend()));

    run.argv = {child, "exit"};
    auto exited = platform::run_child(run);
    REQUIRE(exited);
    CHECK(exited->exit_code == 7);
    CHECK(exited->how() == "exited with status 7");

    run.argv = {child, "sleep"};
    run.seconds = 1;
    const auto begun = std::chrono::steady_clock::now();
    auto slept = platform::run_child(run);
    REQUIRE(slept);
    CHECK(slept->timed_out);
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(20));
    CHECK(slept->how().find("ran past its time limit of 1.0 s") != std::string::npos);

    run.argv = {child, "crash"};
    run.seconds = 30;
    auto crashed = platform::run_child(run);
    REQUIRE(crashed);
    CHECK(crashed->signal == static_cast<int>(0xC0000005u));
    CHECK(crashed->how() == "crashed with exception 0xC0000005 (access violation)");

    run.argv = {child + ".absent.exe", "echo"};
    const auto absent = platform::run_child(run);
    REQUIRE_FALSE(absent);
    CHECK(absent.error().message.find(".absent.exe") != std::string::npos);
}

TEST_CASE("a child in a job object: the memory limit", "[windows][.memory]") {
    platform::ChildRun run;
    run.argv = {child_path(), "memory"};
    run.request = text_bytes("x");
    run.seconds = 60;
    run.memory = uint64_t{256} << 20;
    run.max_reply = 1 << 20;
    auto outcome = platform::run_child(run);
    REQUIRE(outcome);
    INFO(outcome->how());
    CHECK((outcome->exit_code == 3 || outcome->signal != 0));
}
