#include "manifest.hpp"

#include <algorithm>
#include <set>

#include "format.hpp"
#include "hardware_matrix.hpp"
#include "text.hpp"

namespace sdm::archive {
namespace {

constexpr uint8_t kManifestMagic[4] = {'S', 'D', 'M', 'M'};
constexpr size_t kPreamble = 12;   // "SDMM", u16 major, u16 minor, u32 body size
constexpr size_t kItemHeader = 8;  // u16 tag, u16 flags, u32 length
constexpr uint16_t kRequiredFlag = 1;
constexpr size_t kMaxString = 1024;
constexpr size_t kMaxKernels = 65536;
constexpr size_t kMaxRules = 256;

namespace tag {
// Top level
constexpr uint16_t kernel_abi = 1, content_version = 2, kernel = 3;
// Kernel
constexpr uint16_t name = 1, module = 2, signature = 3, problem = 4, plan = 5;
// Plan rule
constexpr uint16_t device_class = 1, capability = 2, when = 3, block = 4, blocks_per_sm = 5, smem = 6, grid = 7,
                   cluster_x = 8, cluster_y = 9, cluster_z = 10, pdl = 11;
}  // namespace tag

constexpr std::pair<std::string_view, ParamType> kParamTypes[] = {
    {"ptr", ParamType::ptr}, {"i32", ParamType::i32}, {"u32", ParamType::u32}, {"i64", ParamType::i64},
    {"u64", ParamType::u64}, {"f32", ParamType::f32}, {"f64", ParamType::f64},
};

Error bad(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "manifest: " + why); }
Error invalid(const std::string& why) { return make_error(ErrorCode::invalid_argument, "manifest: " + why); }

bool identifier(std::string_view s) {
    if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// --- encoding -------------------------------------------------------------------------------
class Encoder {
public:
    void raw(uint16_t t, Bytes payload) {
        header(t, payload.size());
        out_.insert(out_.end(), payload.begin(), payload.end());
    }
    void text(uint16_t t, std::string_view s) { raw(t, as_bytes(s)); }
    void u16(uint16_t t, uint16_t v) {
        std::byte b[2];
        store_u16(b, 0, v);
        raw(t, b);
    }
    size_t open(uint16_t t) {
        header(t, 0);
        return out_.size();
    }
    void close(size_t start) { store_u32(out_, start - 4, static_cast<uint32_t>(out_.size() - start)); }
    ByteVector take() { return std::move(out_); }
    ByteVector& bytes() { return out_; }

private:
    void header(uint16_t t, size_t length) {
        const size_t at = out_.size();
        out_.resize(at + kItemHeader);
        store_u16(out_, at, t);
        store_u16(out_, at + 2, kRequiredFlag);  // everything 1.0 writes is required to understand
        store_u32(out_, at + 4, static_cast<uint32_t>(length));
    }
    ByteVector out_;
};

// --- decoding -------------------------------------------------------------------------------
struct Item {
    uint16_t tag;
    uint16_t flags;
    Bytes payload;
};

// Calls `handle` with each item of a container in order, building nothing: memory does not grow
// with the number of items (a hostile manifest may hold millions of empty ones).
template <typename Handle>
Result<void> for_each_item(Bytes b, const std::string& where, Handle&& handle) {
    size_t at = 0;
    while (at < b.size()) {
        if (b.size() - at < kItemHeader) return bad(where + ": truncated item header");
        const uint32_t length = load_u32(b, at + 4);
        if (length > b.size() - at - kItemHeader) return bad(where + ": item of " + std::to_string(length) + " bytes runs past its container");
        SDM_TRY(handle(Item{load_u16(b, at), load_u16(b, at + 2), b.subspan(at + kItemHeader, length)}));
        at += kItemHeader + length;
    }
    return {};
}

// Names and versions must be printable (validate_manifest); expressions may hold the whitespace
// the expression language allows, and whatever prints them escapes it (text.hpp).
Result<std::string> text_of(const Item& item, const std::string& what) {
    if (item.payload.size() > kMaxString) return bad(what + " longer than " + std::to_string(kMaxString) + " bytes");
    std::string s(as_text(item.payload));
    if (s.find('\0') != std::string::npos) return bad(what + " contains a NUL byte");
    return s;
}

Result<uint16_t> u16_of(const Item& item, const std::string& what) {
    if (item.payload.size() != 2) return bad(what + " must be 2 bytes");
    return load_u16(item.payload, 0);
}

Error unknown_required(const Item& item, const std::string& where) {
    return make_error(ErrorCode::archive_unsupported, "manifest: " + where + " has required field " + std::to_string(item.tag) +
                                                  " that this sdm does not know (written by a newer packer); update sdm");
}

// Decodes a set of fields where each known tag appears at most once (unless repeated is true).
template <typename Handler>
Result<void> fields(Bytes payload, const std::string& where, std::initializer_list<std::pair<uint16_t, bool>> known, Handler&& handle) {
    std::set<uint16_t> seen;
    return for_each_item(payload, where, [&](const Item& item) -> Result<void> {
        const auto k = std::find_if(known.begin(), known.end(), [&](const auto& p) { return p.first == item.tag; });
        if (k == known.end()) {
            if (item.flags & kRequiredFlag) return unknown_required(item, where);
            return {};  // an optional field from a later minor
        }
        if (!k->second && !seen.insert(item.tag).second) return bad(where + ": field " + std::to_string(item.tag) + " appears twice");
        return handle(item);
    });
}

Result<PlanRule> decode_rule(Bytes payload, const std::string& where) {
    PlanRule rule;
    bool have_class = false, have_block = false, have_grid = false;
    SDM_TRY(fields(payload, where,
                   {{tag::device_class, false}, {tag::capability, false}, {tag::when, false}, {tag::block, false},
                    {tag::blocks_per_sm, false}, {tag::smem, false}, {tag::grid, false}, {tag::cluster_x, false},
                    {tag::cluster_y, false}, {tag::cluster_z, false}, {tag::pdl, false}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::capability) {
                           SDM_TRY_GET(v, u16_of(item, where + " capability"));
                           rule.capability = *v;
                           return {};
                       }
                       SDM_TRY_GET(s, text_of(item, where + " field " + std::to_string(item.tag)));
                       switch (item.tag) {
                       case tag::device_class: rule.device_class = std::move(*s); have_class = true; break;
                       case tag::when: rule.when = std::move(*s); break;
                       case tag::block: rule.block = std::move(*s); have_block = true; break;
                       case tag::blocks_per_sm: rule.blocks_per_sm = std::move(*s); break;
                       case tag::smem: rule.smem = std::move(*s); break;
                       case tag::grid: rule.grid = std::move(*s); have_grid = true; break;
                       case tag::cluster_x: rule.cluster[0] = std::move(*s); break;
                       case tag::cluster_y: rule.cluster[1] = std::move(*s); break;
                       case tag::cluster_z: rule.cluster[2] = std::move(*s); break;
                       case tag::pdl: rule.pdl = std::move(*s); break;
                       default: break;
                       }
                       return {};
                   }));
    if (!have_class || !have_block || !have_grid) return bad(where + ": a plan rule needs class, block and grid");
    return rule;
}

Result<KernelSpec> decode_kernel(Bytes payload, size_t index) {
    KernelSpec k;
    const std::string where = "kernel " + std::to_string(index);
    bool have_name = false, have_module = false, have_signature = false;
    SDM_TRY(fields(payload, where,
                   {{tag::name, false}, {tag::module, false}, {tag::signature, false}, {tag::problem, true}, {tag::plan, true}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::plan) {
                           if (k.plans.size() >= kMaxRules) return bad(where + ": more than 256 plan rules");
                           SDM_TRY_GET(rule, decode_rule(item.payload, where + " plan rule " + std::to_string(k.plans.size())));
                           k.plans.push_back(std::move(*rule));
                           return {};
                       }
                       SDM_TRY_GET(s, text_of(item, where + " field " + std::to_string(item.tag)));
                       if (item.tag == tag::name) { k.name = std::move(*s); have_name = true; }
                       else if (item.tag == tag::module) { k.module = std::move(*s); have_module = true; }
                       else if (item.tag == tag::problem) {
                           if (k.problem.size() >= kMaxProblemParameters) return bad(where + ": more than 8 problem parameters");
                           k.problem.push_back(std::move(*s));
                       } else {
                           auto sig = parse_signature(*s);
                           if (!sig) return bad(where + ": " + sig.error().message);
                           k.signature = std::move(*sig);
                           have_signature = true;
                       }
                       return {};
                   }));
    if (!have_name || !have_module || !have_signature) return bad(where + ": a kernel needs name, module and signature");
    return k;
}

}  // namespace

const char* param_type_name(ParamType type) noexcept {
    for (const auto& [name, t] : kParamTypes)
        if (t == type) return name.data();
    return "?";
}

size_t param_type_size(ParamType type) noexcept {
    switch (type) {
    case ParamType::i32:
    case ParamType::u32:
    case ParamType::f32: return 4;
    default: return 8;
    }
}

Result<std::vector<ParamType>> parse_signature(std::string_view text) {
    std::vector<ParamType> out;
    if (text.empty()) return out;  // a kernel without parameters
    size_t at = 0;
    while (at <= text.size()) {
        size_t end = text.find(',', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view token = text.substr(at, end - at);
        while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
        while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
        const auto t = std::find_if(std::begin(kParamTypes), std::end(kParamTypes), [&](const auto& p) { return p.first == token; });
        if (t == std::end(kParamTypes))
            return invalid("signature '" + std::string(text) + "': unknown type '" + std::string(token) + "' (ptr, i32, u32, i64, u64, f32, f64)");
        out.push_back(t->second);
        if (out.size() > 64) return invalid("signature '" + std::string(text) + "' has more than 64 parameters");
        at = end + 1;
    }
    return out;
}

std::string signature_text(const std::vector<ParamType>& signature) {
    std::string out;
    for (const ParamType t : signature) out += (out.empty() ? "" : ",") + std::string(param_type_name(t));
    return out;
}

const KernelSpec* Manifest::find_kernel(std::string_view name) const {
    const auto it = std::lower_bound(kernels.begin(), kernels.end(), name, [](const KernelSpec& k, std::string_view n) { return k.name < n; });
    return it != kernels.end() && it->name == name ? &*it : nullptr;
}

std::vector<std::string> plan_variables(const KernelSpec& kernel) {
    std::vector<std::string> v = kernel.problem;
    v.insert(v.end(), std::begin(kDeviceVariables), std::end(kDeviceVariables));
    v.insert(v.end(), std::begin(kOutputVariables), std::end(kOutputVariables));
    return v;
}

Result<void> validate_manifest(const Manifest& m) {
    if (m.content_version.size() > 64) return invalid("content version longer than 64 characters");
    if (!is_printable(m.content_version))
        return invalid("content version '" + printable(m.content_version) + "' holds a byte that is not printable ASCII");
    std::set<std::string> names;
    for (const KernelSpec& k : m.kernels) {
        if (!valid_name(k.name))
            return invalid("kernel name '" + printable(k.name.substr(0, 64)) + "' " + name_problem(k.name) + " (" + kNameRules + ")");
        if (!names.insert(k.name).second) return invalid("kernel " + k.name + " is listed twice");
        if (!valid_name(k.module))
            return invalid("kernel " + k.name + ": module name '" + printable(k.module.substr(0, 64)) + "' " + name_problem(k.module) + " (" +
                           kNameRules + ")");
        if (k.problem.size() > kMaxProblemParameters) return invalid("kernel " + k.name + ": more than 8 problem parameters");
        std::set<std::string> params;
        for (const auto& p : k.problem) {
            const bool reserved = std::find(std::begin(kDeviceVariables), std::end(kDeviceVariables), p) != std::end(kDeviceVariables) ||
                                  std::find(std::begin(kOutputVariables), std::end(kOutputVariables), p) != std::end(kOutputVariables);
            if (!identifier(p) || reserved || !params.insert(p).second)
                return invalid("kernel " + k.name + ": problem parameter '" + p + "' must be a unique identifier other than " +
                               "sms, l2_bytes, smem_cap, cc, block, blocks_per_sm, smem");
        }
        if (k.plans.size() > kMaxRules) return invalid("kernel " + k.name + ": more than 256 plan rules");
        const std::vector<std::string> vars = plan_variables(k);
        const size_t base = k.problem.size() + std::size(kDeviceVariables);
        for (size_t r = 0; r < k.plans.size(); ++r) {
            const PlanRule& rule = k.plans[r];
            const std::string where = "kernel " + k.name + " plan rule " + std::to_string(r) + " (" + rule.device_class + ")";
            // The hardware matrix (common/hardware_matrix.hpp): the class, and a capability of it.
            const auto cls = parse_device_class(rule.device_class);
            if (!cls) return invalid(where + ": class must be modern, a100 or rtx");
            if (rule.capability != 0 && !class_has_capability(*cls, rule.capability))
                return invalid(where + ": capability " + sm_capability(rule.capability) + " is not in class " + rule.device_class);
            // Each output may use the problem, the device and the outputs computed before it.
            const std::pair<const std::string*, size_t> exprs[] = {
                {&rule.when, base}, {&rule.block, base}, {&rule.blocks_per_sm, base + 1}, {&rule.smem, base + 2},
                {&rule.grid, base + 3}, {&rule.cluster[0], base + 3}, {&rule.cluster[1], base + 3}, {&rule.cluster[2], base + 3},
                {&rule.pdl, base + 3}};
            for (const auto& [text, visible] : exprs) {
                auto e = Expression::parse(*text, std::span(vars).first(visible));
                if (!e) return invalid(where + ": " + e.error().message);
            }
        }
    }
    return {};
}

Result<ByteVector> encode_manifest(const Manifest& m) {
    SDM_TRY(validate_manifest(m));
    Encoder e;
    e.bytes().insert(e.bytes().end(), reinterpret_cast<const std::byte*>(kManifestMagic), reinterpret_cast<const std::byte*>(kManifestMagic) + 4);
    e.bytes().resize(kPreamble);
    store_u16(e.bytes(), 4, kManifestMajor);
    store_u16(e.bytes(), 6, kManifestMinor);
    std::byte abi[4];
    store_u16(abi, 0, m.kernel_abi_major);
    store_u16(abi, 2, m.kernel_abi_minor);
    e.raw(tag::kernel_abi, abi);
    e.text(tag::content_version, m.content_version);
    std::vector<const KernelSpec*> sorted;
    for (const auto& k : m.kernels) sorted.push_back(&k);
    std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return a->name < b->name; });
    for (const KernelSpec* k : sorted) {
        const size_t kernel = e.open(tag::kernel);
        e.text(tag::name, k->name);
        e.text(tag::module, k->module);
        e.text(tag::signature, signature_text(k->signature));
        for (const auto& p : k->problem) e.text(tag::problem, p);
        for (const PlanRule& r : k->plans) {
            const size_t rule = e.open(tag::plan);
            e.text(tag::device_class, r.device_class);
            if (r.capability != 0) e.u16(tag::capability, r.capability);
            e.text(tag::when, r.when);
            e.text(tag::block, r.block);
            e.text(tag::blocks_per_sm, r.blocks_per_sm);
            e.text(tag::smem, r.smem);
            e.text(tag::grid, r.grid);
            e.text(tag::cluster_x, r.cluster[0]);
            e.text(tag::cluster_y, r.cluster[1]);
            e.text(tag::cluster_z, r.cluster[2]);
            e.text(tag::pdl, r.pdl);
            e.close(rule);
        }
        e.close(kernel);
    }
    store_u32(e.bytes(), 8, static_cast<uint32_t>(e.bytes().size() - kPreamble));
    return e.take();
}

Result<Manifest> decode_manifest(Bytes b) {
    if (b.size() < kPreamble || !std::equal(kManifestMagic, kManifestMagic + 4, reinterpret_cast<const uint8_t*>(b.data())))
        return bad("no manifest magic 'SDMM'");
    const uint16_t major = load_u16(b, 4), minor = load_u16(b, 6);
    if (major != kManifestMajor)
        return make_error(ErrorCode::archive_unsupported, "manifest format " + std::to_string(major) + "." + std::to_string(minor) +
                                                      " cannot be read by this sdm (it reads " + std::to_string(kManifestMajor) + ".x); update sdm");
    // The body size catches a truncation that falls between two items.
    if (load_u32(b, 8) != b.size() - kPreamble)
        return bad("the body holds " + std::to_string(b.size() - kPreamble) + " bytes, the preamble says " + std::to_string(load_u32(b, 8)) +
                   " (truncated or extended)");
    Manifest m;
    bool have_abi = false;
    SDM_TRY(fields(b.subspan(kPreamble), "top level", {{tag::kernel_abi, false}, {tag::content_version, false}, {tag::kernel, true}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::kernel_abi) {
                           if (item.payload.size() != 4) return bad("kernel ABI must be 4 bytes");
                           m.kernel_abi_major = load_u16(item.payload, 0);
                           m.kernel_abi_minor = load_u16(item.payload, 2);
                           have_abi = true;
                       } else if (item.tag == tag::content_version) {
                           SDM_TRY_GET(s, text_of(item, "content version"));
                           m.content_version = std::move(*s);
                       } else {
                           if (m.kernels.size() >= kMaxKernels) return bad("more than 65536 kernels");
                           SDM_TRY_GET(k, decode_kernel(item.payload, m.kernels.size()));
                           m.kernels.push_back(std::move(*k));
                       }
                       return {};
                   }));
    if (!have_abi) return bad("no kernel ABI version");
    std::sort(m.kernels.begin(), m.kernels.end(), [](const auto& a, const auto& c) { return a.name < c.name; });
    auto valid = validate_manifest(m);
    if (!valid) return make_error(ErrorCode::archive_corrupt, valid.error().message);
    return m;
}

}  // namespace sdm::archive
