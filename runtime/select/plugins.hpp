// Plan-provider plugins (include/sdm/sdm_plugin.h; ABI.md rule 11): loaded with dlopen, negotiated
// (the host's major and highest minor; the plugin lowers the minor and fills the table up to the
// host's struct_size), asked for plans before the manifest's table and for a verdict on every
// loaded image. A plugin that fails negotiation is not used; a plan it returns that fails the
// class check (check_plan) is not used for that call. Both are logged.
#pragma once

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/platform/log.hpp"
#include "plan.hpp"
#include "runtime/platform/platform.hpp"
#include "common/result.hpp"

#include "sdm/sdm_plugin.h"

namespace sdm::runtime {

inline constexpr uint32_t kPluginAbiMajor = 1;
inline constexpr uint32_t kPluginAbiMinor = 1;

struct PlanRequest {
    const std::string& kernel;
    const std::string& module;
    const std::string& archive;
    int32_t ordinal;
    const PlanDevice& device;
    std::span<const int64_t> problem;
    const Plan* table_plan;  // null: no rule of the table matched
};

struct ImageVerdictRequest {
    int32_t ordinal;
    const PlanDevice& device;
    uint32_t image_kind;
    uint32_t image_sm;
    int32_t ptx_version;
    const std::string& module;
    const std::string& archive;
};

// What a plugin's negotiation left: sdm_plugin_negotiate returned `rc`, raised or kept `minor`
// and filled `table` (which the host had sized for kPluginAbiMinor). The part of the table the
// host may use (struct_size cut to what `minor` defines), the plugin's name (its table's, else
// the path), and which entries it filled; or why the plugin is not used.
struct NegotiatedTable {
    sdm_plugin_table table{};
    uint32_t minor{0};
    std::string name;
    bool select{false}, destroy{false}, validate{false};
};
Result<NegotiatedTable> accept_negotiation(const std::string& path, int32_t rc, uint32_t minor, const sdm_plugin_table& table);
// A plan a plugin's select_plan wrote, as sdm's Plan (rule -1); check_plan decides whether it runs.
Plan plan_from_plugin(const sdm_plan& out);

class Plugins {
public:
    explicit Plugins(const Logger& log);
    ~Plugins();
    Plugins(const Plugins&) = delete;
    Plugins& operator=(const Plugins&) = delete;

    // Loads and negotiates; an error (naming the file and why) leaves nothing loaded.
    Result<void> load(const std::string& path);
    size_t count() const;
    // Counts the plugins loaded so far: a plan remembered at another count was chosen without
    // some plugin and is chosen again (Launcher's memo).
    uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
    // The first valid plan a plugin offers (in load order), or nullopt.
    std::optional<Plan> select_plan(const PlanRequest& request) const;
    // The first refusal a plugin gives (ErrorCode::image_refused), or success.
    Result<void> validate_image(const ImageVerdictRequest& request) const;

private:
    struct Loaded;
    std::vector<const Loaded*> snapshot() const;  // the loaded plugins, in load order
    // One callback of p, an exception taken as the return on_throw (and logged).
    template <typename F>
    int32_t call(const Loaded& p, const char* callback, int32_t on_throw, F&& f) const;
    const Logger& log_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Loaded>> loaded_;
    std::atomic<uint64_t> generation_{0};
};

}  // namespace sdm::runtime
