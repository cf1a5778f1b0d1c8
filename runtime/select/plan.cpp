#include "plan.hpp"

#include <limits>

#include "runtime/device/device.hpp"

namespace sdm::runtime {
namespace {

Result<DeviceClass> class_named(const std::string& name) {
    if (const auto c = parse_device_class(name)) return *c;
    return make_error(ErrorCode::invalid_argument, "plan rule for class '" + name + "': not modern, a100 or rtx");
}

std::string problem_text(const std::vector<std::string>& names, std::span<const int64_t> values) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) out += (out.empty() ? "" : ", ") + names[i] + "=" + std::to_string(values[i]);
    return out.empty() ? "no problem parameters" : out;
}

}  // namespace

Result<PlanTable> PlanTable::compile(const archive::KernelSpec& kernel) {
    PlanTable t;
    t.kernel_ = kernel.name;
    t.problem_ = kernel.problem;
    if (kernel.plans.empty()) return t;  // no rules (every imported kernel): nothing to compile
    const std::vector<std::string> vars = archive::plan_variables(kernel);
    // What each output may see (docs/FORMAT.md, "Variables and evaluation order"): the problem and
    // device variables, then block, blocks_per_sm and smem as they are computed.
    const size_t base = kernel.problem.size() + std::size(archive::kDeviceVariables);
    const std::span<const std::string> all(vars);
    for (size_t i = 0; i < kernel.plans.size(); ++i) {
        const auto& r = kernel.plans[i];
        const std::string where = "kernel " + kernel.name + ", plan rule " + std::to_string(i);
        std::optional<DeviceClass> cls;
        if (!r.device_class.empty() || (r.capability_min == 0 && r.capability_max == 0)) {
            auto named = class_named(r.device_class);
            if (!named) return make_error(named.error().code, where + ": " + named.error().message);
            cls = *named;
        }
        const auto parse = [&](const std::string& text, size_t visible) -> Result<archive::Expression> {
            auto e = archive::Expression::parse(text, all.first(visible));
            if (!e) return make_error(e.error().code, where + ": " + e.error().message);
            return e;
        };
        SDM_TRY_GET(when, parse(r.when, base));
        SDM_TRY_GET(block, parse(r.block, base));
        SDM_TRY_GET(bps, parse(r.blocks_per_sm, base + 1));
        SDM_TRY_GET(smem, parse(r.smem, base + 2));
        SDM_TRY_GET(grid, parse(r.grid, base + 3));
        SDM_TRY_GET(cx, parse(r.cluster[0], base + 3));
        SDM_TRY_GET(cy, parse(r.cluster[1], base + 3));
        SDM_TRY_GET(cz, parse(r.cluster[2], base + 3));
        SDM_TRY_GET(pdl, parse(r.pdl, base + 3));
        SDM_TRY_GET(by, parse(r.block_y, base));
        SDM_TRY_GET(bz, parse(r.block_z, base));
        SDM_TRY_GET(gy, parse(r.grid_y, base + 3));
        SDM_TRY_GET(gz, parse(r.grid_z, base + 3));
        t.rules_.push_back({cls, r.capability, r.capability_min, r.capability_max, std::move(*when), std::move(*block), std::move(*bps), std::move(*smem), std::move(*grid),
                            {std::move(*cx), std::move(*cy), std::move(*cz)}, std::move(*pdl), std::move(*by), std::move(*bz), std::move(*gy), std::move(*gz)});
    }
    return t;
}

Result<Plan> PlanTable::select(const PlanDevice& device, std::span<const int64_t> problem) const {
    if (rules_.empty())  // whatever the problem: nothing here could plan it
        return make_error(ErrorCode::not_found, "kernel " + kernel_ + " has no launch plans (its manifest gives none); choose the launch shape "
                                                "yourself and pass it to sdm_launch in an sdm_plan");
    if (problem.size() != problem_.size())
        return make_error(ErrorCode::invalid_argument, "kernel " + kernel_ + " takes " + std::to_string(problem_.size()) + " problem parameter(s) (" +
                                                           problem_text(problem_, {}) + "), not " + std::to_string(problem.size()));
    std::array<int64_t, archive::kMaxProblemParameters + 7> values{};
    const size_t n = problem.size();
    std::copy(problem.begin(), problem.end(), values.begin());
    values[n] = device.sms;
    values[n + 1] = device.l2_bytes;
    values[n + 2] = device.smem_cap;
    values[n + 3] = device.cc;
    const std::span<const int64_t> all(values.data(), n + 7);
    for (size_t i = 0; i < rules_.size(); ++i) {
        const Rule& r = rules_[i];
        if (r.device_class && r.device_class != device.device_class) continue;
        if (r.capability != 0 && r.capability != device.cc) continue;
        if ((r.capability_min != 0 || r.capability_max != 0) && (device.cc < r.capability_min || device.cc > r.capability_max)) continue;
        const std::string where = "kernel " + kernel_ + ", plan rule " + std::to_string(i);
        const auto eval = [&](const archive::Expression& e, size_t visible) -> Result<int64_t> {
            auto v = e.evaluate(all.first(visible));
            if (!v) return make_error(v.error().code, where + " (" + problem_text(problem_, problem) + " on " + device.description + "): " + v.error().message);
            return v;
        };
        SDM_TRY_GET(when, eval(r.when, n + 4));
        if (*when == 0) continue;
        const auto in_range = [&](const char* what, int64_t v, int64_t lo, int64_t hi) -> Result<uint32_t> {
            if (v < lo || v > hi)
                return make_error(ErrorCode::invalid_argument, where + " (" + problem_text(problem_, problem) + " on " + device.description + "): " +
                                                                   what + " = " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." + std::to_string(hi));
            return static_cast<uint32_t>(v);
        };
        Plan p;
        p.rule = static_cast<int32_t>(i);
        SDM_TRY_GET(block, eval(r.block, n + 4));
        SDM_TRY_GET(block_y, eval(r.block_y, n + 4));
        SDM_TRY_GET(block_z, eval(r.block_z, n + 4));
        values[n + 4] = *block;
        SDM_TRY_GET(bps, eval(r.blocks_per_sm, n + 5));
        values[n + 5] = *bps;
        SDM_TRY_GET(smem, eval(r.smem, n + 6));
        values[n + 6] = *smem;
        SDM_TRY_GET(grid, eval(r.grid, n + 7));
        SDM_TRY_GET(grid_y, eval(r.grid_y, n + 7));
        SDM_TRY_GET(grid_z, eval(r.grid_z, n + 7));
        constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
        SDM_TRY_GET(b, in_range("block", *block, 0, kMaxU32));
        SDM_TRY_GET(s, in_range("smem", *smem, 0, kMaxU32));
        SDM_TRY_GET(g, in_range("grid", *grid, 0, kMaxU32));
        SDM_TRY_GET(k, in_range("blocks_per_sm", *bps, 0, std::numeric_limits<int32_t>::max()));
        p.block = *b;
        p.smem = *s;
        p.grid = *g;
        p.blocks_per_sm = static_cast<int32_t>(*k);
        SDM_TRY_GET(by, in_range("block_y", *block_y, 0, kMaxU32));
        SDM_TRY_GET(bz, in_range("block_z", *block_z, 0, kMaxU32));
        SDM_TRY_GET(gy, in_range("grid_y", *grid_y, 0, kMaxU32));
        SDM_TRY_GET(gz, in_range("grid_z", *grid_z, 0, kMaxU32));
        p.block_y = *by, p.block_z = *bz, p.grid_y = *gy, p.grid_z = *gz;
        for (size_t d = 0; d < 3; ++d) {
            SDM_TRY_GET(c, eval(r.cluster[d], n + 7));
            SDM_TRY_GET(cv, in_range("cluster", *c, 0, kMaxU32));
            p.cluster[d] = *cv;
        }
        SDM_TRY_GET(pdl, eval(r.pdl, n + 7));
        p.pdl = *pdl != 0;
        SDM_TRY(check_plan(p, device, where));
        return p;
    }
    return make_error(ErrorCode::not_found, "no plan rule of kernel " + kernel_ + " matches " + device.description + " for " +
                                                problem_text(problem_, problem) + " (" + std::to_string(rules_.size()) + " rule(s)); add a rule for " +
                                                (device.device_class ? std::string("class ") + device_class_name(*device.device_class)
                                                                     : "compute capability " + archive::sm_capability(device.cc) + " (a capability range)") +
                                                " to the manifest");
}

Result<void> check_shape(const Plan& p) {
    const auto bad = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, why); };
    const auto within = [&](const char* what, uint32_t v, uint32_t hi) -> Result<void> {
        if (v >= 1 && v <= hi) return {};
        return bad(std::string(what) + " of " + std::to_string(v) + " (1.." + std::to_string(hi) + ")");
    };
    SDM_TRY(within("grid x", p.grid, kMaxGridX));
    SDM_TRY(within("grid y", p.grid_y, kMaxGridYZ));
    SDM_TRY(within("grid z", p.grid_z, kMaxGridYZ));
    SDM_TRY(within("block x", p.block, kMaxBlockThreads));
    SDM_TRY(within("block y", p.block_y, kMaxBlockThreads));
    SDM_TRY(within("block z", p.block_z, kMaxBlockZ));
    if (uint64_t{p.block} * p.block_y * p.block_z > kMaxBlockThreads)
        return bad("block " + std::to_string(p.block) + "x" + std::to_string(p.block_y) + "x" + std::to_string(p.block_z) + " of " +
                   std::to_string(uint64_t{p.block} * p.block_y * p.block_z) + " threads (at most 1024)");
    const std::string cluster = std::to_string(p.cluster[0]) + "x" + std::to_string(p.cluster[1]) + "x" + std::to_string(p.cluster[2]);
    if (p.cluster[0] == 0 || p.cluster[1] == 0 || p.cluster[2] == 0) return bad("cluster " + cluster + " has a dimension of 0 (1x1x1 is no cluster)");
    const uint32_t grid[3] = {p.grid, p.grid_y, p.grid_z};
    for (size_t d = 0; d < 3; ++d)
        if (grid[d] % p.cluster[d] != 0)
            return bad("grid " + std::string(1, "xyz"[d]) + " " + std::to_string(grid[d]) + " is not a multiple of cluster " + std::string(1, "xyz"[d]) + " " +
                       std::to_string(p.cluster[d]));
    return {};
}

Result<void> check_plan(const Plan& p, const PlanDevice& device, const std::string& who) {
    const auto bad = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, who + " on " + device.description + ": " + why); };
    if (auto shape = check_shape(p); !shape) return bad(shape.error().message);
    // Outside the matrix the device's own limits apply: clusters and PDL from compute capability 9.0.
    const std::string on = device.device_class ? std::string("class ") + device_class_name(*device.device_class) : "compute capability " + archive::sm_capability(device.cc);
    const bool clusters = device.device_class ? class_allows_clusters(*device.device_class) : device.cc >= 90;
    const bool pdl = device.device_class ? class_allows_pdl(*device.device_class) : device.cc >= 90;
    if (static_cast<int64_t>(p.smem) > device.smem_cap)
        return bad(std::to_string(p.smem) + " B of shared memory per block, over the " + (device.device_class ? "class's " : "device's ") +
                   std::to_string(device.smem_cap) + " B");
    const uint64_t cluster = p.cluster_blocks();
    if (cluster > 1 && !clusters)
        return bad("clusters (" + std::to_string(p.cluster[0]) + "x" + std::to_string(p.cluster[1]) + "x" + std::to_string(p.cluster[2]) + ") on " + on +
                   ", which has none");
    if (cluster > kMaxPortableCluster) return bad("a cluster of " + std::to_string(cluster) + " blocks (at most 8)");
    if (p.pdl && !pdl) return bad("PDL on " + on + ", which has none");
    return {};
}

Result<PlanDevice> plan_device(const HardwareRow& row) {
    std::optional<DeviceClass> cls;
    if (auto c = classify(0, row.name, row.capability, row.smem_optin_bytes)) cls = *c;  // else outside the matrix
    return PlanDevice{cls, static_cast<uint16_t>(row.capability.sm()), row.sm_count, static_cast<int64_t>(row.l2_bytes),
                      cls ? class_smem_cap(*cls) : static_cast<int64_t>(row.smem_optin_bytes),
                      std::string(row.name) + " (compute capability " + std::to_string(row.capability.major) + "." +
                          std::to_string(row.capability.minor) + ", " + (cls ? std::string("class ") + device_class_name(*cls) : "unclassified") + ")"};
}

PlanDevice plan_device_of(const DeviceProperties& props, std::optional<DeviceClass> cls, std::string description) {
    return PlanDevice{cls, static_cast<uint16_t>(props.capability.sm()), props.sm_count, static_cast<int64_t>(props.l2_bytes),
                      cls ? class_smem_cap(*cls) : static_cast<int64_t>(props.smem_optin_bytes), std::move(description)};
}

std::string plan_text(const Plan& p) {
    const auto dims = [](uint32_t x, uint32_t y, uint32_t z) {
        return y == 1 && z == 1 ? std::to_string(x) : std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
    };
    return "grid " + dims(p.grid, p.grid_y, p.grid_z) + ", block " + dims(p.block, p.block_y, p.block_z) + ", smem " + std::to_string(p.smem) + ", cluster " +
           std::to_string(p.cluster[0]) + "x" + std::to_string(p.cluster[1]) + "x" + std::to_string(p.cluster[2]) + ", pdl " + (p.pdl ? "on" : "off") +
           (p.cooperative ? ", cooperative" : "") + (p.priority != 0 ? ", priority " + std::to_string(p.priority) : "");
}

}  // namespace sdm::runtime
