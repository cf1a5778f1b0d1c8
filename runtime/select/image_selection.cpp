#include "image_selection.hpp"
#include "image_fit.hpp"

#include <algorithm>

#include "runtime/platform/settings.hpp"

namespace sdm::runtime {
namespace {

using archive::Kind;
using archive::Variant;

// The oldest virtual arch of the modern class: older images take the portable path.
constexpr uint16_t kModernMinimumArch = 90;

bool old_for_class(const ImageCandidate& c, const SelectionDevice& d) {
    return d.device_class == DeviceClass::modern && c.sm < kModernMinimumArch;
}

}  // namespace

DriverSwitches DriverSwitches::from_environment() { return {settings::flag(settings::Id::cuda_force_ptx_jit), settings::flag(settings::Id::cuda_disable_ptx_jit)}; }

std::string DriverSwitches::text() const {
    return std::string("CUDA_FORCE_PTX_JIT=") + (force_ptx_jit ? "1" : "0") + ", CUDA_DISABLE_PTX_JIT=" + (disable_ptx_jit ? "1" : "0");
}

bool runs_on(uint16_t sm, Variant variant, Capability cc) {
    if (variant == Variant::a) return sm == cc.sm();
    return sm / 10 == static_cast<uint16_t>(cc.major) && sm % 10 <= static_cast<uint16_t>(cc.minor);
}

bool virtual_fits(uint16_t sm, Variant variant, Capability cc) {
    if (variant == Variant::a) return sm == cc.sm();
    if (variant == Variant::f) return sm / 10 == static_cast<uint16_t>(cc.major) && sm <= cc.sm();
    return sm <= cc.sm();
}

bool can_serve(Kind kind, uint16_t sm, Variant variant, Capability cc) {
    switch (kind) {
        case Kind::cubin: return runs_on(sm, variant, cc);
        case Kind::ptx:
        case Kind::ltoir: return virtual_fits(sm, variant, cc);
        case Kind::fatbin: return true;
        default: return false;
    }
}

Result<Selection> select_image(const std::vector<ImageCandidate>& images, const SelectionDevice& device, const std::string& module,
                               const std::string& where, const DriverSwitches& switches) {
    const Capability cc = device.capability;
    const bool cubins = !switches.force_ptx_jit;  // CUDA_FORCE_PTX_JIT=1: the PTX path only
    const auto pick = [&](auto&& eligible, auto&& better) -> const ImageCandidate* {
        const ImageCandidate* best = nullptr;
        for (const auto& c : images)
            if (eligible(c) && (best == nullptr || better(c, *best))) best = &c;
        return best;
    };
    // 1. exactly this capability (a before base).
    if (const auto* c = pick([&](const ImageCandidate& i) { return cubins && i.kind == Kind::cubin && i.sm == cc.sm() && i.variant != Variant::f; },
                             [](const ImageCandidate& a, const ImageCandidate&) { return a.variant == Variant::a; }))
        return Selection{*c, SelectionPath::cubin, c->sm, c->variant, "cubin for exactly this capability"};
    // 2. the family's f cubin, then the highest base cubin of the same major.
    for (const Variant v : {Variant::f, Variant::base})
        if (const auto* c = pick([&](const ImageCandidate& i) { return cubins && i.kind == Kind::cubin && i.variant == v && runs_on(i.sm, v, cc) && !old_for_class(i, device); },
                                 [](const ImageCandidate& a, const ImageCandidate& b) { return a.sm > b.sm; }))
            return Selection{*c, SelectionPath::cubin, c->sm, c->variant, v == Variant::f ? "family cubin" : "cubin of an older minor"};
    // 3. PTX, then LTO-IR: the highest virtual arch that fits, linked for this capability.
    for (const Kind k : {Kind::ptx, Kind::ltoir})
        if (const auto* c = pick([&](const ImageCandidate& i) { return i.kind == k && virtual_fits(i.sm, i.variant, cc) && !old_for_class(i, device); },
                                 [](const ImageCandidate& a, const ImageCandidate& b) {
                                     return a.sm != b.sm ? a.sm > b.sm : a.variant != Variant::base && b.variant == Variant::base;
                                 }))
            return Selection{*c, SelectionPath::jit, static_cast<uint16_t>(cc.sm()), c->variant == Variant::a ? Variant::a : Variant::base,
                             std::string(k == Kind::ptx ? "PTX" : "LTO-IR") + " linked for this capability"};
    // 4. a fatbin: sdm chooses inside it by these rules (image_source.cpp).
    if (const auto* c = pick([](const ImageCandidate& i) { return i.kind == Kind::fatbin; }, [](const auto&, const auto&) { return false; }))
        return Selection{*c, SelectionPath::fatbin, static_cast<uint16_t>(cc.sm()), Variant::base, "fatbin (sdm chooses inside it)"};

    std::string held, excluded;
    bool held_cubin = false;
    for (const auto& c : images) {
        held_cubin = held_cubin || c.kind == Kind::cubin;
        if (!archive::kind_has_arch(c.kind) && c.kind != Kind::fatbin) continue;
        const std::string name = archive::kind_has_arch(c.kind) ? archive::target_name(c.kind, c.sm, c.variant) : "fatbin";
        held += (held.empty() ? "" : ", ") + name;
        if (old_for_class(c, device) && (c.kind != Kind::cubin || runs_on(c.sm, c.variant, cc) || virtual_fits(c.sm, c.variant, cc)))
            excluded += (excluded.empty() ? "" : ", ") + name;
    }
    std::string message = "module " + module + " of " + where + " has no image for " + device.description + ": it holds " +
                          (held.empty() ? std::string("no images") : held);
    if (!excluded.empty())
        message += " (" + excluded + " older than compute_90, not eligible on the modern class: its portable path is not what modern plans expect)";
    if (!cubins && held_cubin) message += " (CUDA_FORCE_PTX_JIT=1 is set: cubins are not used, only PTX; unset it to use them)";
    message += ". Add a cubin for sm_" + std::to_string(cc.sm()) + " or PTX for compute_" + std::to_string(cc.sm()) + " to a mounted archive";
    return make_error(ErrorCode::no_image, message);
}

}  // namespace sdm::runtime
