#include "plan_abi.hpp"

#include <cstddef>
#include <string>

namespace sdm::runtime {

namespace {

// Whether field `member` at `offset` of `size` bytes lies within the caller's struct.
bool has(const sdm_plan& p, size_t offset, size_t size) { return p.struct_size >= offset + size; }
#define SDM_PLAN_HAS(p, field) has(p, offsetof(sdm_plan, field), sizeof((p).field))

uint32_t or_one(uint32_t v) { return v == 0 ? 1 : v; }

}  // namespace

Plan plan_from_abi(const sdm_plan& in) {
    Plan p;
    p.grid = in.grid;
    p.block = in.block;
    p.smem = in.smem_bytes;
    p.cluster = {or_one(in.cluster[0]), or_one(in.cluster[1]), or_one(in.cluster[2])};
    p.pdl = (in.flags & SDM_PLAN_PDL) != 0;
    p.blocks_per_sm = in.blocks_per_sm;
    p.rule = in.rule;
    if (SDM_PLAN_HAS(in, grid_y)) p.grid_y = or_one(in.grid_y);
    if (SDM_PLAN_HAS(in, grid_z)) p.grid_z = or_one(in.grid_z);
    if (SDM_PLAN_HAS(in, block_y)) p.block_y = or_one(in.block_y);
    if (SDM_PLAN_HAS(in, block_z)) p.block_z = or_one(in.block_z);
    if (SDM_PLAN_HAS(in, priority)) p.priority = in.priority;
    // A 1.1 host's flags have no bit 1 (sdm_launch read only PDL): it is read from 1.3 structs.
    if (SDM_PLAN_HAS(in, next)) p.cooperative = (in.flags & SDM_PLAN_COOPERATIVE) != 0;
    return p;
}

void plan_to_abi(const Plan& p, int32_t occupancy, sdm_plan& out) {
    out.flags = (p.pdl ? uint32_t{SDM_PLAN_PDL} : 0u) | (p.cooperative && SDM_PLAN_HAS(out, next) ? uint32_t{SDM_PLAN_COOPERATIVE} : 0u);
    out.grid = p.grid;
    out.block = p.block;
    out.smem_bytes = p.smem;
    out.cluster[0] = p.cluster[0];
    out.cluster[1] = p.cluster[1];
    out.cluster[2] = p.cluster[2];
    out.blocks_per_sm = p.blocks_per_sm;
    out.occupancy = occupancy;
    out.rule = p.rule;
    out.reserved0 = 0;
    if (SDM_PLAN_HAS(out, grid_y)) out.grid_y = p.grid_y;
    if (SDM_PLAN_HAS(out, grid_z)) out.grid_z = p.grid_z;
    if (SDM_PLAN_HAS(out, block_y)) out.block_y = p.block_y;
    if (SDM_PLAN_HAS(out, block_z)) out.block_z = p.block_z;
    if (SDM_PLAN_HAS(out, priority)) out.priority = p.priority;
    if (SDM_PLAN_HAS(out, reserved1)) out.reserved1 = 0;
}

Result<std::vector<CUlaunchAttribute>> launch_attributes(const sdm_plan& in) {
    std::vector<CUlaunchAttribute> out;
    if (!SDM_PLAN_HAS(in, next)) return out;
    size_t links = 0;
    for (const sdm_chain* c = in.next; c != nullptr; c = c->next) {
        if (++links > 64) return make_error(ErrorCode::invalid_argument, "sdm_plan.next: a chain of more than 64 extensions (is it a cycle?)");
        if (c->type != SDM_CHAIN_LAUNCH_ATTRIBUTES) continue;  // a later minor's: skipped
        if (c->struct_size < sizeof(sdm_launch_attributes))
            return make_error(ErrorCode::invalid_argument, "sdm_launch_attributes.struct_size is " + std::to_string(c->struct_size) + ", below its size " +
                                                               std::to_string(sizeof(sdm_launch_attributes)) + ": set it to sizeof(sdm_launch_attributes)");
        const auto* a = reinterpret_cast<const sdm_launch_attributes*>(c);
        if (a->count > 0 && a->attributes == nullptr)
            return make_error(ErrorCode::invalid_argument, "sdm_launch_attributes: count is " + std::to_string(a->count) + " but attributes is NULL");
        if (a->count > kMaxExtraLaunchAttributes || out.size() + a->count > kMaxExtraLaunchAttributes)
            return make_error(ErrorCode::invalid_argument, "sdm_launch_attributes: " + std::to_string(out.size() + a->count) + " attributes in all, at most " +
                                                               std::to_string(kMaxExtraLaunchAttributes));
        const auto* first = static_cast<const CUlaunchAttribute*>(a->attributes);
        out.insert(out.end(), first, first + a->count);
    }
    return out;
}

}  // namespace sdm::runtime
