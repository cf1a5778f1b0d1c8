// The kernels a bench loads from an archive, module by module in the archive's name order (the
// manifest's kernels, or those of a list), as scale_load_bench and budget_bench fetch them.
#pragma once

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive.hpp"
#include "archive/manifest.hpp"
#include "sdm/sdm.h"

namespace sdm_bench {

// The kernels to load, module by module in the archive's order: the whole manifest, or LIST's.
struct Plan {
    std::vector<std::pair<std::string, std::vector<std::string>>> modules;  // module, its kernels
    std::vector<size_t> ids;  // each module's place among all the archive's modules, in name order
    std::set<std::string> shared;  // names listed in more than one module: sdm fetches them as MODULE!NAME
    size_t kernels{0};
};

// all_modules: every module, with only LIST's kernels (none for a module LIST does not name).
inline sdm::Result<Plan> plan_of(const sdm::archive::Archive& a, const char* list, bool all_modules = false) {
    SDM_TRY_GET(manifest, a.read_manifest());
    if (!*manifest) return sdm::make_error(sdm::ErrorCode::not_found, "the archive has no manifest");
    std::set<std::string> wanted;
    if (list != nullptr) {
        std::ifstream in(list);
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) wanted.insert(line);
    }
    std::map<std::string, std::vector<std::string>> by_module;
    std::set<std::string> seen;
    Plan p;
    for (const auto& k : (*manifest)->kernels) {
        if (!seen.insert(k.name).second) p.shared.insert(k.name);
        auto& kernels = by_module[k.module];
        if (list == nullptr || wanted.count(k.name)) kernels.push_back(k.name);
    }
    size_t id = 0;
    for (auto& [module, kernels] : by_module) {  // (std::map: the archive's name order)
        const size_t this_id = id++;
        if (kernels.empty() && !all_modules) continue;
        p.kernels += kernels.size();
        p.modules.emplace_back(module, std::move(kernels));
        p.ids.push_back(this_id);
    }
    return p;
}

// A runtime as the benches make it: nothing embedded, no log, `budget` bytes of device memory (0:
// none); its device counted, which creates the context before any clock starts. The error's
// message when it cannot be made or sees no device.
inline sdm::Result<sdm_runtime*> bench_runtime(uint64_t budget = 0) {
    sdm_runtime_params p{};
    p.struct_size = sizeof p;
    p.flags = SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
    p.log_level = SDM_LOG_OFF;
    p.device_memory_budget = budget;
    sdm_runtime* rt = nullptr;
    sdm_error* e = nullptr;
    if (sdm_runtime_create(&p, &rt, &e) != SDM_OK) return sdm::make_error(sdm::ErrorCode::internal, sdm_error_message(e));
    int32_t devices = 0;
    if (sdm_device_count(rt, &devices, &e) != SDM_OK || devices < 1) return sdm::make_error(sdm::ErrorCode::not_found, "no device");
    return rt;
}

// The name a fetch asks for: MODULE!NAME where the name is listed in more than one module.
inline std::string fetch_name(const Plan& p, const std::string& module, const std::string& name) {
    return p.shared.count(name) ? module + "!" + name : name;
}

}  // namespace sdm_bench
