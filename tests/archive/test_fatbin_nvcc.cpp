// Every -compress-mode this toolkit's nvcc offers (read from `nvcc --help`), and the cubins LZ4'd
// too (-compress-all): tests/data/kernels.cu compiled to a fatbin with sm_80 and sm_90 cubins and
// compute_90 PTX, parsed, each entry's kind and SM checked, each payload decompressed, each cubin
// through inspect_cubin and the PTX through inspect_ptx, both defining axpy and scale. The committed
// fixtures (tests/archive/test_fatbin.cpp) pin nvcc 13.0's bytes; this follows the nvcc at hand. Exits 77
// (skipped) without nvcc.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "archive/fatbin.hpp"
#include "archive/file_map.hpp"
#include "archive/image.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

std::string run(const std::string& command) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    if (!pipe) return out;
    std::array<char, 4096> buffer{};
    size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
    return out;
}

// "--compress-mode [default,size,speed,balance,none]" in nvcc's help.
std::vector<std::string> compress_modes(const std::string& help) {
    std::vector<std::string> modes;
    const size_t at = help.find("--compress-mode [");
    if (at == std::string::npos) return modes;
    const size_t open = at + 17, close = help.find(']', open);
    const std::string list = help.substr(open, close - open);
    for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) modes.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return modes;
}

void check_fatbin(const std::string& label, const std::string& path) {
    auto map = FileMap::open(path);
    if (!map) return check(false, label + ": " + map.error().message);
    auto container = parse_fatbin((*map)->bytes());
    if (!container) return check(false, label + ": " + container.error().message);
    std::set<std::string> targets;
    std::string entries;
    for (const auto& e : container->entries) {
        entries.append(" ").append(fatbin_entry_label(e));  // not " " + string: GCC bug 105651's false -Wrestrict at -O3
        if (!e.image_kind) continue;
        targets.insert(target_name(*e.image_kind, e.sm, e.variant));
        auto payload = fatbin_entry_payload(e);
        if (!payload) {
            check(false, label + ": " + payload.error().message);
            continue;
        }
        auto info = inspect_image(*e.image_kind, *payload);
        if (!info) {
            check(false, label + ", " + fatbin_entry_label(e) + ": " + info.error().message);
            continue;
        }
        check(info->sm == e.sm && info->kernels == std::vector<std::string>{"axpy", "scale"},
              label + ", " + fatbin_entry_label(e) + ": the image's own SM and its kernels axpy, scale");
        if (e.image_kind == Kind::ptx)
            check(as_text(*payload).find(".entry scale(") != std::string_view::npos, label + ", " + fatbin_entry_label(e) + ": PTX text with .entry scale");
    }
    check(targets == std::set<std::string>{"sm_80", "sm_90", "compute_90"}, label + ":" + entries);
}

}  // namespace

int main() {
    const std::string nvcc = SDM_NVCC;
    if (nvcc.empty()) {
        std::printf("skipped: no nvcc\n");
        return 77;
    }
    char tmpl[] = "/tmp/sdm-fatbin-nvcc-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return 1;
    const std::string dir = tmpl;
    const std::vector<std::string> modes = compress_modes(run(nvcc + " --help"));
    check(!modes.empty(), "nvcc --help lists -compress-mode values");
    std::vector<std::pair<std::string, std::string>> cases;  // label, extra options
    for (const auto& m : modes) cases.emplace_back(m, "-compress-mode=" + m);
    cases.emplace_back("speed, -compress-all", "-compress-mode=speed -Xfatbin -compress-all");
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& [label, options] = cases[i];
        const std::string out = dir + "/kernels." + std::to_string(i) + ".fatbin";
        const std::string command = nvcc + " -fatbin -gencode arch=compute_80,code=sm_80 -gencode 'arch=compute_90,code=[sm_90,compute_90]' " +
                                    options + " -o " + out + " " + SDM_TEST_DATA + "/kernels.cu";
        if (std::system(command.c_str()) != 0) {
            check(false, label + ": " + command);
            continue;
        }
        check_fatbin(label, out);
    }
    std::filesystem::remove_all(dir);
    std::printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
