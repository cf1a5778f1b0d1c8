// What signing costs a host (issue 18), as ratios in one run, no GPU:
//   mount    sdm_archive_mount_file on a fresh runtime (creation not timed) of a signed archive
//            under SDM_SIGNATURES_REQUIRE (its key trusted: the signature checked at mount)
//            against the same archive unsigned under SDM_SIGNATURES_OFF; small (2 modules, 3
//            kernels) and large (1,000 modules of real cubins, 20,000 kernels)
//   first read  the first read of a stored 2 MiB payload (PTX, Archive::view: its XXH3 checks) on a
//            fresh Archive with the signed digests enforced (plus one BLAKE2b pass) against one
//            without
//   rollback  the same mount of a signed archive under require, versioned (format 1.2: its key's
//            rollback mark read from the state file under its lock, equal to the archive's, so
//            nothing written) against unversioned (no state file touched)
// Median of RUNS (default 31). Prints Markdown tables for bench/RESULTS.md.
//   signing_bench CUBIN PTX [RUNS]   (tests/data/kernels.sm_90.cubin, tests/data/kernels.compute_80.ptx)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "archive/archive.hpp"
#include "common/crypto.hpp"
#include "archive/file_map.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"
#include "archive/signing.hpp"
#include "archive/writer.hpp"

namespace {

using namespace sdm;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double us_since(Clock::time_point start) { return std::chrono::duration<double, std::micro>(Clock::now() - start).count(); }

ByteVector archive_of(const ByteVector& cubin, size_t modules, size_t kernels, const ByteVector* big = nullptr, uint64_t version = 0) {
    archive::WriterOptions options;
    if (version > 0) options.archive_version = version;
    options.dictionary = options.prefix = false;
    options.compress = false;  // stored: mountable straight from the mapping, and a payload read is its checks alone
    archive::ArchiveWriter writer(options);
    archive::Manifest m;
    m.kernel_abi_major = 1;
    for (size_t j = 0; j < modules; ++j)
        if (!writer.add({"module_" + std::to_string(j), archive::Kind::cubin, 90, archive::Variant::base, cubin})) std::abort();
    if (big != nullptr && !writer.add({"big", archive::Kind::ptx, 80, archive::Variant::base, *big})) std::abort();
    for (size_t i = 0; i < kernels; ++i)
        m.kernels.push_back({"kernel_" + std::to_string(i), "module_" + std::to_string(i % modules), {archive::ParamType::ptr}, {}, {}});
    if (!writer.add({"manifest", archive::Kind::manifest, 0, archive::Variant::base, archive::encode_manifest(m).value()})) std::abort();
    return writer.finish().value();
}

void write(const std::string& path, const ByteVector& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Median microseconds of mounting `path` on a fresh runtime with `policy` trusting `key`.
double mount_us(const std::string& path, uint32_t policy, const crypto::PublicKey& key, int runs, const std::string& state_dir) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        sdm_runtime_params p{};
        p.struct_size = sizeof p;
        p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        p.log_level = SDM_LOG_OFF;
        p.signature_policy = policy;
        p.trusted_keys = key.data();
        p.trusted_key_count = 1;
        p.state_dir = state_dir.c_str();
        sdm_runtime* rt = nullptr;
        if (sdm_runtime_create(&p, &rt, nullptr) != SDM_OK) std::abort();
        const auto start = Clock::now();
        sdm_error* e = nullptr;
        if (sdm_archive_mount_file(rt, path.c_str(), &e) != SDM_OK) {
            std::fprintf(stderr, "mount %s: %s\n", path.c_str(), sdm_error_message(e));
            std::abort();
        }
        t.push_back(us_since(start));
        sdm_runtime_destroy(rt);
    }
    return median(t);
}

double first_read_us(const ByteVector& bytes, size_t index, bool enforce, int runs) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        auto a = archive::Archive::open_memory(bytes, "bench");
        if (!a || (enforce && !a->enforce_digests())) std::abort();
        const auto start = Clock::now();
        if (!a->view(index)) std::abort();
        t.push_back(us_since(start));
    }
    return median(t);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || !crypto::available()) {
        std::fprintf(stderr, "usage: signing_bench CUBIN PTX [RUNS] (needs a build with libsodium)\n");
        return 2;
    }
    const int runs = argc > 3 ? std::atoi(argv[3]) : 31;
    auto cubin = archive::read_file(argv[1]);
    auto ptx = archive::read_file(argv[2]);
    if (!cubin || !ptx) return 1;
    const auto key = crypto::generate_key_pair().value();
    char dir[] = "/tmp/sdm-signing-bench-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return 1;
    // A real PTX module grown to 2 MiB with comment lines (what the payload holds does not matter
    // to its checks, only its size).
    ByteVector big = *ptx;
    const std::string line = "// padding to make a 2 MiB payload: the checks read every byte of it\n";
    while (big.size() + line.size() <= (2u << 20)) big.insert(big.end(), as_bytes(line).begin(), as_bytes(line).end());
    const std::string state = std::string(dir) + "/state";
    std::printf("| case | archive bytes | unsigned (off) µs | signed (require) µs | signed / unsigned |\n|---|--:|--:|--:|--:|\n");
    struct Case {
        const char* name;
        size_t modules, kernels;
    };
    for (const Case& c : {Case{"mount, small (2 modules, 3 kernels)", 2, 3}, Case{"mount, large (1,000 modules, 20,000 kernels)", 1000, 20000}}) {
        const ByteVector plain = archive_of(*cubin, c.modules, c.kernels);
        const ByteVector signed_bytes = archive::sign_archive(plain, "bench", key.secret_key).value();
        const std::string p = std::string(dir) + "/plain.sdma", s = std::string(dir) + "/signed.sdma";
        write(p, plain);
        write(s, signed_bytes);
        const double off = mount_us(p, SDM_SIGNATURES_OFF, key.public_key, runs, state), req = mount_us(s, SDM_SIGNATURES_REQUIRE, key.public_key, runs, state);
        std::printf("| %s | %zu | %.1f | %.1f | %.2fx |\n", c.name, signed_bytes.size(), off, req, req / off);
        std::remove(p.c_str());
        std::remove(s.c_str());
    }
    const ByteVector with_big = archive::sign_archive(archive_of(*cubin, 1, 1, &big), "bench", key.secret_key).value();
    auto a = archive::Archive::open_memory(with_big, "bench");
    const size_t index = a->find("big", archive::Kind::ptx, 80, archive::Variant::base).value();
    const double plain_read = first_read_us(with_big, index, false, runs), checked_read = first_read_us(with_big, index, true, runs);
    std::printf("| first read of a stored 2 MiB payload (XXH3-64 + XXH3-128; + BLAKE2b-256 once) | %zu | %.1f | %.1f | %.2fx |\n", with_big.size(),
                plain_read, checked_read, checked_read / plain_read);
    std::printf("\n| case | unversioned µs | versioned, mark read µs | versioned / unversioned |\n|---|--:|--:|--:|\n");
    for (const Case& c : {Case{"mount under require, small (2 modules, 3 kernels)", 2, 3}, Case{"mount under require, large (1,000 modules, 20,000 kernels)", 1000, 20000}}) {
        const std::string u = std::string(dir) + "/unversioned.sdma", v = std::string(dir) + "/versioned.sdma";
        write(u, archive::sign_archive(archive_of(*cubin, c.modules, c.kernels), "bench", key.secret_key).value());
        write(v, archive::sign_archive(archive_of(*cubin, c.modules, c.kernels, nullptr, 7), "bench", key.secret_key).value());
        mount_us(v, SDM_SIGNATURES_REQUIRE, key.public_key, 1, state);  // the mark written once: the runs read it
        // (the unversioned archive's runs get a state directory of their own, never created: the
        // versioned one's mark would refuse it)
        const double plain = mount_us(u, SDM_SIGNATURES_REQUIRE, key.public_key, runs, state + "-none"), versioned = mount_us(v, SDM_SIGNATURES_REQUIRE, key.public_key, runs, state);
        std::printf("| %s | %.1f | %.1f | %.2fx |\n", c.name, plain, versioned, versioned / plain);
        std::remove(u.c_str());
        std::remove(v.c_str());
    }
    std::remove((state + "/versions").c_str());
    std::remove((state + "/versions.lock").c_str());
    ::rmdir(state.c_str());
    ::rmdir(dir);
    return 0;
}
