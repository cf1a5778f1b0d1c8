#include "plugins.hpp"

#include <cstddef>
#include <cstring>
#include <exception>

#include "runtime/platform/abi_enums.hpp"  // the device class and image kind cross as numbers
#include "plan_abi.hpp"
#include "sdm/sdm_plugin.h"

namespace sdm::runtime {

struct Plugins::Loaded : NegotiatedTable {
    platform::Library library;
};

namespace {

// Whether `table` holds the member at `offset`: within the size the plugin implements, and set.
bool covers(const sdm_plugin_table& table, size_t offset, const void* member) {
    return offset + sizeof(void*) <= table.struct_size && member != nullptr;
}

// The size of the table a plugin of `minor` fills.
uint32_t table_size(uint32_t minor) {
    return minor >= 1 ? static_cast<uint32_t>(sizeof(sdm_plugin_table)) : static_cast<uint32_t>(offsetof(sdm_plugin_table, validate_image));
}

sdm_plugin_device c_device(int32_t ordinal, const PlanDevice& d) {
    sdm_plugin_device out{};
    out.struct_size = sizeof out;
    out.ordinal = ordinal;
    out.capability_major = d.cc / 10;
    out.capability_minor = d.cc % 10;
    out.device_class = d.device_class ? static_cast<sdm_device_class>(*d.device_class) : SDM_DEVICE_CLASS_UNSUPPORTED;
    out.sm_count = static_cast<int32_t>(d.sms);
    out.l2_bytes = static_cast<uint64_t>(d.l2_bytes);
    out.smem_cap_bytes = static_cast<int32_t>(d.smem_cap);
    return out;
}

}  // namespace

Result<NegotiatedTable> accept_negotiation(const std::string& path, int32_t rc, uint32_t minor, const sdm_plugin_table& table) {
    if (rc != 0)
        return make_error(ErrorCode::mismatch, "plugin " + path + " refused to negotiate plugin ABI " + std::to_string(kPluginAbiMajor) + "." +
                                                      std::to_string(kPluginAbiMinor) + " (it returned " + std::to_string(rc) + "); it is not used");
    if (minor > kPluginAbiMinor)
        return make_error(ErrorCode::mismatch, "plugin " + path + " raised the plugin ABI minor to " + std::to_string(minor) + " (the host offered " +
                                                      std::to_string(kPluginAbiMinor) + "); it is not used");
    NegotiatedTable out;
    out.table = table;
    // The plugin implements `minor`: only that much of the table is its own.
    out.table.struct_size = std::min<uint32_t>(table.struct_size, table_size(minor));
    out.minor = minor;
    const bool named = covers(out.table, offsetof(sdm_plugin_table, name), out.table.name) && out.table.name[0] != '\0';
    out.name = named ? std::string(out.table.name) : path;
    out.select = covers(out.table, offsetof(sdm_plugin_table, select_plan), reinterpret_cast<const void*>(out.table.select_plan));
    out.destroy = covers(out.table, offsetof(sdm_plugin_table, destroy), reinterpret_cast<const void*>(out.table.destroy));
    out.validate = covers(out.table, offsetof(sdm_plugin_table, validate_image), reinterpret_cast<const void*>(out.table.validate_image));
    return out;
}

Plan plan_from_plugin(const sdm_plan& out) {
    Plan plan = plan_from_abi(out);
    plan.rule = -1;
    return plan;
}

Plugins::Plugins(const Logger& log) : log_(log) {}

Plugins::~Plugins() {
    for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it)
        if ((*it)->destroy) (*it)->table.destroy((*it)->table.user);
}

Result<void> Plugins::load(const std::string& path) {
    auto library = platform::Library::open(path);
    if (!library) return make_error(ErrorCode::io, "cannot load plugin " + path + ": " + library.error().message);
    const auto negotiate = reinterpret_cast<sdm_plugin_negotiate_fn>(library->symbol(SDM_PLUGIN_NEGOTIATE_SYMBOL));
    if (negotiate == nullptr)
        return make_error(ErrorCode::invalid_argument, "plugin " + path + " exports no " + SDM_PLUGIN_NEGOTIATE_SYMBOL + "; it is not an sdm plugin");
    uint32_t minor = kPluginAbiMinor;
    sdm_plugin_table table{};
    table.struct_size = sizeof(sdm_plugin_table);
    int32_t rc = 1;
    try {
        rc = negotiate(kPluginAbiMajor, &minor, &table);
    } catch (...) {
        return make_error(ErrorCode::invalid_argument, "plugin " + path + " threw from " + SDM_PLUGIN_NEGOTIATE_SYMBOL +
                                                           "; plugins must return an error instead (see sdm_plugin.h); not loaded");
    }
    SDM_TRY_GET(accepted, accept_negotiation(path, rc, minor, table));
    auto p = std::make_unique<Loaded>();
    static_cast<NegotiatedTable&>(*p) = std::move(*accepted);
    p->library = std::move(*library);
    log_.info("loaded plugin " + p->name + " (" + path + ", plugin ABI " + std::to_string(kPluginAbiMajor) + "." + std::to_string(minor) + ")");
    std::lock_guard lock(mutex_);
    loaded_.push_back(std::move(p));
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

size_t Plugins::count() const {
    std::lock_guard lock(mutex_);
    return loaded_.size();
}

std::vector<const Plugins::Loaded*> Plugins::snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<const Loaded*> out;
    out.reserve(loaded_.size());
    for (const auto& p : loaded_) out.push_back(p.get());
    return out;
}

// A plugin is C code by contract, but a C++ one may throw anyway: an exception must not cross
// into sdm's callers (nor end a preload worker), so each callback runs here, and a throw reads as
// what the callback's failure return means, with what it said in the log.
template <typename F>
int32_t Plugins::call(const Loaded& p, const char* callback, int32_t on_throw, F&& f) const {
    try {
        return f();
    } catch (const std::exception& e) {
        log_.warn("plugin " + p.name + " threw from " + callback + " (" + e.what() + "); plugins must return an error instead; taken as a failure");
    } catch (...) {
        log_.warn("plugin " + p.name + " threw from " + callback + " (not a std::exception); plugins must return an error instead; taken as a failure");
    }
    return on_throw;
}

// The plugins' callbacks run outside the lock: plan misses on many threads do not wait for each
// other, and a plugin that calls back into sdm does not deadlock. A plugin loaded stays loaded
// until the runtime goes, so the snapshot's pointers stay valid.
std::optional<Plan> Plugins::select_plan(const PlanRequest& r) const {
    const auto loaded = snapshot();
    if (loaded.empty()) return std::nullopt;
    const sdm_plugin_device device = c_device(r.ordinal, r.device);
    sdm_plan table{};
    table.struct_size = sizeof table;
    if (r.table_plan != nullptr) plan_to_abi(*r.table_plan, 0, table);
    sdm_plugin_plan_request request{};
    request.struct_size = sizeof request;
    request.problem_count = static_cast<uint32_t>(r.problem.size());
    request.kernel = r.kernel.c_str();
    request.module = r.module.c_str();
    request.archive = r.archive.c_str();
    request.device = &device;
    request.problem = r.problem.data();
    request.table_plan = r.table_plan != nullptr ? &table : nullptr;
    for (const Loaded* p : loaded) {
        if (!p->select) continue;
        sdm_plan out{};
        out.struct_size = sizeof out;
        const int32_t rc = call(*p, "select_plan", -1, [&] { return p->table.select_plan(p->table.user, &request, &out); });
        if (rc == 0) continue;
        if (rc < 0) {
            log_.warn("plugin " + p->name + " failed to choose a plan for kernel " + r.kernel + " (it returned " + std::to_string(rc) + "); not used");
            continue;
        }
        const Plan plan = plan_from_plugin(out);
        if (auto checked = check_plan(plan, r.device, "the plan plugin " + p->name + " chose for kernel " + r.kernel); !checked) {
            log_.warn(checked.error().message + "; it is not used for this call");
            continue;
        }
        return plan;
    }
    return std::nullopt;
}

Result<void> Plugins::validate_image(const ImageVerdictRequest& r) const {
    const auto loaded = snapshot();
    if (loaded.empty()) return {};
    const sdm_plugin_device device = c_device(r.ordinal, r.device);
    sdm_plugin_image image{};
    image.struct_size = sizeof image;
    image.image_kind = r.image_kind;
    image.image_sm = r.image_sm;
    image.ptx_version = r.ptx_version;
    image.module = r.module.c_str();
    image.archive = r.archive.c_str();
    image.device = &device;
    for (const Loaded* p : loaded) {
        if (!p->validate) continue;
        char reason[512] = {0};
        const int32_t rc = call(*p, "validate_image", 1, [&] { return p->table.validate_image(p->table.user, &image, reason, sizeof reason); });
        if (rc == 0) continue;
        reason[sizeof reason - 1] = '\0';
        return make_error(ErrorCode::image_refused, "plugin " + p->name + " refused module " + r.module + " of archive " + r.archive + " on " +
                                                        r.device.description + ": " + (reason[0] != '\0' ? reason : "(no reason given)"));
    }
    return {};
}

}  // namespace sdm::runtime
