// sdm plan: a kernel's launch plan for a problem on every row of the hardware matrix (and on the
// reference GPUs outside it, unclassified), from the
// archive's plan table (the class checks included; the occupancy check needs the device itself,
// which sdm_plan_select does at run time).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>

#include "commands.hpp"
#include "runtime/select/plan.hpp"
#include "archive/archive.hpp"

namespace sdm::tools {

int run_plan(const PlanOptions& o) {
    auto a = archive::Archive::open_file(o.archive);
    if (!a) {
        fmt::print(stderr, "sdm plan: {}\n", a.error().message);
        return 1;
    }
    auto read = a->read_manifest();
    if (!read) {
        fmt::print(stderr, "sdm plan: {}\n", read.error().message);
        return 1;
    }
    if (!*read) {
        fmt::print(stderr, "sdm plan: archive {} has no manifest, so no kernels and no plans\n", o.archive);
        return 1;
    }
    const archive::Manifest* manifest = &**read;
    const archive::QualifiedName wanted = archive::split_module(o.kernel);  // NAME or MODULE!NAME
    const auto* kernel = manifest->find_kernel(wanted.name, wanted.module);
    if (kernel == nullptr) {
        std::string names;
        for (const auto& k : manifest->kernels) names += (names.empty() ? "" : ", ") + k.name;
        fmt::print(stderr, "sdm plan: archive {} has no kernel {} (it has: {})\n", o.archive, o.kernel, names);
        return 1;
    }
    // NAME=VALUE for each problem parameter, in any order.
    std::vector<int64_t> problem(kernel->problem.size());
    std::vector<bool> given(kernel->problem.size());
    for (const auto& item : o.problem) {
        const auto eq = item.find('=');
        const std::string name = item.substr(0, eq == std::string::npos ? item.size() : eq);
        const auto it = std::find(kernel->problem.begin(), kernel->problem.end(), name);
        int64_t value = 0;
        const char* begin = eq == std::string::npos ? nullptr : item.data() + eq + 1;
        const auto [end, ec] = begin != nullptr ? std::from_chars(begin, item.data() + item.size(), value) : std::from_chars_result{nullptr, std::errc::invalid_argument};
        if (it == kernel->problem.end() || ec != std::errc{} || end != item.data() + item.size()) {
            fmt::print(stderr, "sdm plan: '{}' is not NAME=INTEGER for a problem parameter of {} ({})\n", item, o.kernel,
                       fmt::join(kernel->problem, ", "));
            return 2;
        }
        problem[static_cast<size_t>(it - kernel->problem.begin())] = value;
        given[static_cast<size_t>(it - kernel->problem.begin())] = true;
    }
    for (size_t i = 0; i < given.size(); ++i)
        if (!given[i]) {
            fmt::print(stderr, "sdm plan: kernel {} needs {}=VALUE\n", o.kernel, kernel->problem[i]);
            return 2;
        }
    auto table = runtime::PlanTable::compile(*kernel);
    if (!table) {
        fmt::print(stderr, "sdm plan: {}\n", table.error().message);
        return 1;
    }
    nlohmann::json rows = nlohmann::json::array();
    std::vector<HardwareRow> all(hardware_rows().begin(), hardware_rows().end());
    all.insert(all.end(), unclassified_rows().begin(), unclassified_rows().end());
    for (const auto& row : all) {
        auto device = runtime::plan_device(row);
        nlohmann::json r{{"device", row.name},
                         {"capability", fmt::format("{}.{}", row.capability.major, row.capability.minor)},
                         {"sms", row.sm_count},
                         {"l2_bytes", row.l2_bytes}};
        if (!device) {
            r["error"] = device.error().message;
            rows.push_back(std::move(r));
            continue;
        }
        r["class"] = device->device_class ? device_class_name(*device->device_class) : "unclassified";
        auto plan = table->select(*device, problem);
        if (!plan) {
            r["error"] = plan.error().message;
        } else {
            r["rule"] = plan->rule;  // counted from 0, as the manifest and sdm_plan.rule count
            r["grid"] = plan->grid;
            r["block"] = plan->block;
            r["smem"] = plan->smem;
            r["blocks_per_sm"] = plan->blocks_per_sm;
            r["cluster"] = plan->cluster;
            r["pdl"] = plan->pdl;
        }
        rows.push_back(std::move(r));
    }
    if (o.json) {
        fmt::print("{}\n", nlohmann::json{{"archive", o.archive}, {"kernel", o.kernel}, {"rows", rows}}.dump(2));
        return 0;
    }
    std::string problem_text;
    for (size_t i = 0; i < problem.size(); ++i) problem_text += fmt::format("{}{}={}", i ? ", " : "", kernel->problem[i], problem[i]);
    fmt::print("kernel {} of {}, {} (occupancy is checked on the device, at sdm_plan_select)\n\n", o.kernel, o.archive, problem_text);
    fmt::print("| device | cc | class | SMs | L2 bytes | rule | grid | block | smem | blocks/SM | cluster | PDL |\n");
    fmt::print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|\n");
    for (const auto& r : rows) {
        const std::string head = fmt::format("| {} | {} | {} | {} | {} ", r["device"].get<std::string>(), r["capability"].get<std::string>(),
                                             r.value("class", std::string("unsupported")), r["sms"].get<int>(), r["l2_bytes"].get<uint64_t>());
        if (r.contains("error")) {
            fmt::print("{}| no plan: {} |||||||\n", head, r["error"].get<std::string>());
            continue;
        }
        const auto c = r["cluster"].get<std::array<uint32_t, 3>>();
        fmt::print("{}| {} | {} | {} | {} | {} | {}x{}x{} | {} |\n", head, r["rule"].get<int>(), r["grid"].get<uint32_t>(), r["block"].get<uint32_t>(),
                   r["smem"].get<uint32_t>(), r["blocks_per_sm"].get<int>(), c[0], c[1], c[2], r["pdl"].get<bool>() ? "yes" : "no");
    }
    return 0;
}

}  // namespace sdm::tools
