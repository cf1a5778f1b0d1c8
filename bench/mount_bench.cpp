// Mount time and kernel lookup against the manifest's size (issue 16): archives of 1,000, 20,000 and
// 65,536 kernels (the format's limit) in 1/20 as many modules, each module one real cubin
// (tests/data's sm_90 cubin), the manifest stored as `sdm pack` writes it. Runs without a GPU.
//   mount_bench CUBIN [RUNS]
// For each size, the median of RUNS (default 31) of:
//   mount      sdm_archive_mount_file on a fresh runtime (the runtime's creation is not timed):
//              open + map + index checks + the manifest indexed in place (names as views, no
//              per-kernel decoding)
//   decode     the baseline, in the same run: Archive::open_file + read_manifest, every kernel
//              decoded into a Manifest (what a mount did before the index)
//   open, index  the mount's two parts alone: Archive::open_file, ManifestIndex::build
//   find       ManifestIndex::find of every kernel's name, per lookup (binary search over views)
// Prints a Markdown table for bench/RESULTS.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "archive/archive.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"
#include "archive/writer.hpp"

namespace {

using namespace sdm;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double us_since(Clock::time_point start) { return std::chrono::duration<double, std::micro>(Clock::now() - start).count(); }

// Names the length of real ones: a namespace, an op, a type list, a tile shape.
std::string kernel_name(size_t i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "sdm_bench_gemm_f16_f32_tile128x%03zu_stage%zu_k%06zu", i % 256, i % 7, i);
    return buf;
}

bool write_archive(const std::string& path, const ByteVector& cubin, size_t kernels, size_t modules) {
    archive::WriterOptions options;
    options.dictionary = options.prefix = false;  // the bench measures mounting, not packing
    options.compress = false;
    archive::ArchiveWriter writer(options);
    archive::Manifest m;
    m.kernel_abi_major = 1;
    for (size_t j = 0; j < modules; ++j)
        if (!writer.add({"module_" + std::to_string(j), archive::Kind::cubin, 90, archive::Variant::base, cubin})) return false;
    for (size_t i = 0; i < kernels; ++i)
        m.kernels.push_back({kernel_name(i), "module_" + std::to_string(i % modules),
                             {archive::ParamType::ptr, archive::ParamType::ptr, archive::ParamType::i64, archive::ParamType::f32}, {}, {}});
    auto manifest = archive::encode_manifest(m);
    if (!manifest || !writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, std::move(*manifest)})) return false;
    auto bytes = writer.finish();
    if (!bytes) return false;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: mount_bench CUBIN [RUNS]\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (raw.empty()) return std::fprintf(stderr, "mount_bench: cannot read %s\n", argv[1]), 1;
    const ByteVector cubin(reinterpret_cast<const std::byte*>(raw.data()), reinterpret_cast<const std::byte*>(raw.data()) + raw.size());
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 31;
    const std::string path = "/tmp/sdm-mount-bench-" + std::to_string(::getpid()) + ".sdma";

    std::printf("| kernels | modules | archive bytes | mount (µs) | of it: open (µs) | of it: index (µs) | decode, baseline (µs) | mount / decode | find (ns per lookup) |\n");
    std::printf("|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (const size_t kernels : {size_t{1000}, size_t{20000}, size_t{65536}}) {
        const size_t modules = std::max<size_t>(1, kernels / 20);
        if (!write_archive(path, cubin, kernels, modules)) return std::fprintf(stderr, "mount_bench: writing the archive failed\n"), 1;
        std::vector<double> mount, decode, open, index_build;
        for (int r = 0; r < runs; ++r) {
            sdm_runtime_params p{};
            p.struct_size = sizeof p;
            p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
            p.cuda_driver = "/nonexistent/libcuda.so";  // mounting needs no driver
            p.cache_flags = SDM_CACHE_DISABLED;
            p.log_level = SDM_LOG_OFF;
            sdm_runtime* rt = nullptr;
            if (sdm_runtime_create(&p, &rt, nullptr) != SDM_OK) return std::fprintf(stderr, "mount_bench: no runtime\n"), 1;
            auto start = Clock::now();
            sdm_error* e = nullptr;
            if (sdm_archive_mount_file(rt, path.c_str(), &e) != SDM_OK)
                return std::fprintf(stderr, "mount_bench: %s\n", sdm_error_message(e)), 1;
            mount.push_back(us_since(start));
            sdm_runtime_destroy(rt);

            start = Clock::now();
            auto a = archive::Archive::open_file(path);
            auto m = a ? a->read_manifest() : Result<std::optional<archive::Manifest>>(std::nullopt);
            if (!m || !*m || (*m)->kernels.size() != kernels) return std::fprintf(stderr, "mount_bench: the baseline failed\n"), 1;
            decode.push_back(us_since(start));

            start = Clock::now();
            auto opened = archive::Archive::open_file(path);
            open.push_back(us_since(start));
            auto stored = opened->view(*opened->find_manifest());
            start = Clock::now();
            auto built = archive::ManifestIndex::build(*stored);
            index_build.push_back(us_since(start));
            if (!built || built->size() != kernels) return std::fprintf(stderr, "mount_bench: the index failed\n"), 1;
        }
        // Lookups: every name once, through the index built over the stored manifest.
        auto a = archive::Archive::open_file(path);
        auto view = a->view(*a->find_manifest());
        auto index = archive::ManifestIndex::build(*view);
        std::vector<std::string> names;
        for (size_t i = 0; i < kernels; ++i) names.push_back(kernel_name((i * 7919) % kernels));
        std::vector<double> find;
        size_t found = 0;
        for (int r = 0; r < std::min(runs, 5); ++r) {
            const auto start = Clock::now();
            for (const auto& n : names) found += index->find(n) != nullptr;
            find.push_back(us_since(start) * 1000.0 / static_cast<double>(kernels));
        }
        if (found != names.size() * static_cast<size_t>(std::min(runs, 5))) return std::fprintf(stderr, "mount_bench: a lookup missed\n"), 1;
        std::ifstream size_of(path, std::ios::binary | std::ios::ate);
        const double mu = median(mount), de = median(decode);
        std::printf("| %zu | %zu | %lld | %.0f | %.0f | %.0f | %.0f | %.3f | %.0f |\n", kernels, modules, static_cast<long long>(size_of.tellg()), mu,
                    median(open), median(index_build), de, mu / de, median(find));
    }
    std::remove(path.c_str());
    return 0;
}
