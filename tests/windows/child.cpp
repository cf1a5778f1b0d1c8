// The child that tests/windows/test_platform.cpp starts through platform::run_child on Windows:
// child MODE, where MODE is
//   echo    replies with its request reversed (the handles it inherited, the environment block)
//   exit    exits with status 7
//   sleep   sleeps past any limit (run_child kills it at its time limit)
//   crash   writes through a null pointer (an access violation ends it)
//   memory  allocates and touches 64 MiB blocks until 4 GiB or a failure: exits 3 when an
//           allocation failed (the job's memory limit held), 0 when it got them all
#include <algorithm>
#include <cstring>
#include <vector>

#include <windows.h>

#include "runtime/platform/platform.hpp"

namespace platform = sdm::runtime::platform;

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "echo") == 0) {
        auto request = platform::child_request();
        if (!request) return 2;
        std::reverse(request->begin(), request->end());
        return platform::child_reply(*request) ? 0 : 4;
    }
    if (std::strcmp(mode, "exit") == 0) return 7;
    if (std::strcmp(mode, "sleep") == 0) {
        ::Sleep(INFINITE);
        return 0;
    }
    if (std::strcmp(mode, "crash") == 0) {
        volatile int* nowhere = nullptr;
        *nowhere = 1;
        return 0;
    }
    if (std::strcmp(mode, "memory") == 0) {
        std::vector<void*> blocks;
        for (int i = 0; i < 64; ++i) {
            void* p = ::VirtualAlloc(nullptr, 64u << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
            if (p == nullptr) return 3;
            std::memset(p, 1, 64u << 20);
            blocks.push_back(p);
        }
        return 0;
    }
    return 1;
}
