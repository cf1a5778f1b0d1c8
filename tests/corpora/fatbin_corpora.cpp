// The fatbin reader over real libraries (opt-in: meson test --suite corpora): every container of
// each library given (default: the CUDA toolkit's cuFFT, cuBLASLt, cuSPARSE, cuRAND and the cuDNN
// libraries under $CUDA_HOME/lib64) is found and parsed, every entry decompressed, every cubin
// passes inspect_cubin, every PTX inspect_ptx and every readable LTO-IR inspect_ltoir, and every
// cubin's and PTX module's kernel signatures derive (kernel_params.hpp). Prints, per
// library, the containers, the entries of each kind, the SMs, the stored and decompressed bytes
// and the kernels. Exits 77 (skipped) when none of the libraries exists, 1 on any failure.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "archive/fatbin.hpp"
#include "archive/file_map.hpp"
#include "archive/host_binary.hpp"
#include "archive/image.hpp"
#include "archive/kernel_params.hpp"
#include "common/text.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

struct Figures {
    size_t containers{0}, scanned{0}, relocatable{0}, encoded{0}, kernels{0}, unrepresentable{0};
    std::map<std::string, size_t> kinds;   // "cubin", "ptx", "ltoir", "kind N"
    std::map<std::string, size_t> codecs;  // "none", "lz4", "zstd"
    std::map<std::string, size_t> sections;
    std::set<std::string> targets;
    uint64_t stored{0}, raw{0};
};

std::string join(const std::set<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : " ") + i;
    return out;
}

std::string counts(const std::map<std::string, size_t>& items) {
    std::string out;
    for (const auto& [k, v] : items) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(v);
    return out;
}

// Every failure is printed; the return value says whether there was one.
bool check_library(const std::string& path) {
    const auto start = std::chrono::steady_clock::now();
    auto map = FileMap::open(path);
    if (!map) {
        std::printf("FAIL %s: %s\n", path.c_str(), map.error().message.c_str());
        return false;
    }
    auto found = find_fatbins((*map)->bytes());
    if (!found) {
        std::printf("FAIL %s: %s\n", path.c_str(), found.error().message.c_str());
        return false;
    }
    Figures f;
    bool ok = true;
    for (const auto& embedded : *found) {
        const std::string where = path + ", section " + printable(embedded.section) + ", container " + std::to_string(embedded.ordinal);
        auto container = parse_fatbin(embedded.bytes);
        if (!container) {
            std::printf("FAIL %s: %s\n", where.c_str(), container.error().message.c_str());
            ok = false;
            continue;
        }
        ++f.containers;
        f.scanned += embedded.scanned ? 1 : 0;
        f.relocatable += embedded.relocatable ? 1 : 0;
        ++f.sections[std::string(embedded.section)];
        for (const auto& e : container->entries) {
            ++f.kinds[e.image_kind ? kind_name(*e.image_kind) : "kind " + std::to_string(e.kind)];
            ++f.codecs[e.compression == FatbinCompression::lz4 ? "lz4" : e.compression == FatbinCompression::zstd ? "zstd" : "none"];
            if (e.image_kind) f.targets.insert(target_name(*e.image_kind, e.sm, e.variant));
            f.stored += e.stored.size();
            if ((e.flags & fatbin_flag::encoded) != 0) {
                ++f.encoded;
                continue;
            }
            auto payload = fatbin_entry_payload(e);
            if (!payload) {
                std::printf("FAIL %s: %s\n", where.c_str(), payload.error().message.c_str());
                ok = false;
                continue;
            }
            f.raw += payload->size();
            if (!e.image_kind) continue;
            auto info = inspect_image(*e.image_kind, *payload);
            if (!info) {
                std::printf("FAIL %s, %s: %s\n", where.c_str(), fatbin_entry_label(e).c_str(), info.error().message.c_str());
                ok = false;
                continue;
            }
            // Every kernel's signature derives from the image, within what a manifest holds.
            auto params = image_kernel_params(*e.image_kind, *payload);
            if (!params) {
                std::printf("FAIL %s, %s: %s\n", where.c_str(), fatbin_entry_label(e).c_str(), params.error().message.c_str());
                ok = false;
            } else {
                for (const auto& k : *params) f.unrepresentable += !k.unrepresentable.empty();
            }
            if (*e.image_kind == Kind::cubin) {
                f.kernels += info->kernels.size();
                if (info->sm != e.sm) {
                    std::printf("FAIL %s, %s: the cubin's ELF header says sm_%u\n", where.c_str(), fatbin_entry_label(e).c_str(), info->sm);
                    ok = false;
                }
            }
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu containers (%zu found by scanning, %zu relocatable) in %s\n", path.c_str(), f.containers, f.scanned, f.relocatable,
                counts(f.sections).c_str());
    std::printf("  entries: %s; compression: %s; %zu encoded LTO-IR not decoded\n", counts(f.kinds).c_str(), counts(f.codecs).c_str(), f.encoded);
    std::printf("  targets: %s\n", join(f.targets).c_str());
    std::printf("  %llu bytes stored, %llu decompressed (of the entries decoded); %zu kernels in the cubins (%zu signatures a manifest cannot hold); %.2f s\n",
                static_cast<unsigned long long>(f.stored), static_cast<unsigned long long>(f.raw), f.kernels, f.unrepresentable, seconds);
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> libraries;
    for (int i = 1; i < argc; ++i) libraries.emplace_back(argv[i]);
    if (libraries.empty()) {
        const char* home = std::getenv("CUDA_HOME");
        const std::string lib = std::string(home != nullptr && *home != '\0' ? home : "/usr/local/cuda") + "/lib64/";
        for (const char* name : {"libcufft.so.12", "libcublasLt.so.13", "libcusparse.so.12", "libcurand.so.10", "libcudnn_adv.so.9",
                                 "libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_engines_precompiled.so.9",
                                 "libcudnn_engines_runtime_compiled.so.9", "libcudadevrt.a"})
            libraries.push_back(lib + name);
    }
    size_t present = 0;
    bool ok = true;
    for (const auto& path : libraries) {
        if (!std::filesystem::exists(path)) {
            std::printf("skipped %s: not there\n", path.c_str());
            continue;
        }
        ++present;
        ok = check_library(path) && ok;
    }
    if (present == 0) return 77;
    return ok ? 0 : 1;
}
