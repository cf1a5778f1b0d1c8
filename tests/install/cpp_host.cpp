// A C++17 host of the installed sdm (sdm.hpp): mounts the installed kernels archive and lists it.
#include <cstdio>

#include <sdm/sdm.hpp>

int main(int argc, char** argv) {
    const char* archive = argc > 1 ? argv[1] : SDM_ARCHIVE_FILE;
    sdm::RuntimeOptions options;
    options.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    auto runtime = sdm::Runtime::create(options);
    if (!runtime) return std::fprintf(stderr, "%s\n", runtime.error().message()), 1;
    if (auto mounted = runtime->mount_file(archive); !mounted) return std::fprintf(stderr, "%s\n", mounted.error().message()), 1;
    auto archives = runtime->archives();
    if (!archives || archives->empty()) return std::fprintf(stderr, "no archive listed\n"), 1;
    std::printf("sdm %s (C ABI %u.%u): %s, %u kernels, content %s\n", sdm::library_version(), sdm::library_abi_version() >> 16,
                sdm::library_abi_version() & 0xffff, archives->front().label.c_str(), archives->front().kernel_count,
                archives->front().content_version.c_str());
    return 0;
}
