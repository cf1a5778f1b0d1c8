#include "manifest.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>
#include <type_traits>

#include "format.hpp"
#include "common/hardware_matrix.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace {

constexpr uint8_t kManifestMagic[4] = {'S', 'D', 'M', 'M'};
constexpr size_t kPreamble = 12;   // "SDMM", u16 major, u16 minor, u32 body size
constexpr size_t kItemHeader = 8;  // u16 tag, u16 flags, u32 length
constexpr uint16_t kRequiredFlag = 1;
constexpr size_t kMaxString = 1024;  // a text item; names: the name limit of the manifest's minor
constexpr size_t kMaxKernels = 65536;
constexpr size_t kMaxRules = 256;
constexpr size_t kMaxParameters = 64;      // a kernel signature's parameters
constexpr size_t kMaxContentVersion = 64;  // the content version's characters

namespace tag {
// Top level
constexpr uint16_t kernel_abi = 1, content_version = 2, kernel = 3, hardware_matrix = 4, scoped_names = 5, name_expression = 6;
// Name expression (inside tag 6)
constexpr uint16_t expression = 1, expression_module = 2, expression_symbol = 3;
// Kernel
constexpr uint16_t name = 1, module = 2, signature = 3, problem = 4, plan = 5;
// Plan rule
constexpr uint16_t device_class = 1, capability = 2, when = 3, block = 4, blocks_per_sm = 5, smem = 6, grid = 7,
                   cluster_x = 8, cluster_y = 9, cluster_z = 10, pdl = 11, capability_min = 12, capability_max = 13,
                   block_y = 14, block_z = 15, grid_y = 16, grid_z = 17;
}  // namespace tag

// The fixed-size types by name; the first seven are format 1.0's.
constexpr std::pair<std::string_view, ParamType> kParamTypes[] = {
    {"ptr", ParamType::ptr}, {"i32", ParamType::i32}, {"u32", ParamType::u32}, {"i64", ParamType::i64}, {"u64", ParamType::u64},
    {"f32", ParamType::f32}, {"f64", ParamType::f64}, {"f16", ParamType::f16}, {"bf16", ParamType::bf16}, {"b8", ParamType::b8},
    {"b16", ParamType::b16}, {"b32", ParamType::b32}, {"b64", ParamType::b64},
};
constexpr size_t kTypes10 = 7;
constexpr std::string_view kOpaque = "opaque:";

Error bad(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "manifest: " + why); }
Error invalid(const std::string& why) { return make_error(ErrorCode::invalid_argument, "manifest: " + why); }

bool identifier(std::string_view s) {
    if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// --- encoding -------------------------------------------------------------------------------
class Encoder {
public:
    void raw(uint16_t t, Bytes payload, bool required = true) {
        header(t, payload.size(), required);
        out_.insert(out_.end(), payload.begin(), payload.end());
    }
    void text(uint16_t t, std::string_view s, bool required = true) { raw(t, as_bytes(s), required); }
    void u16(uint16_t t, uint16_t v) {
        std::byte b[2];
        store_u16(b, 0, v);
        raw(t, b);
    }
    size_t open(uint16_t t, bool required = true) {
        header(t, 0, required);
        return out_.size();
    }
    void close(size_t start) { store_u32(out_, start - 4, static_cast<uint32_t>(out_.size() - start)); }
    ByteVector take() { return std::move(out_); }
    ByteVector& bytes() { return out_; }

private:
    void header(uint16_t t, size_t length, bool required = true) {
        const size_t at = out_.size();
        out_.resize(at + kItemHeader);
        store_u16(out_, at, t);
        store_u16(out_, at + 2, required ? kRequiredFlag : 0);  // everything 1.0 wrote is required
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

// Where a decode is, for a message ("kernel 3 plan rule 0 field 7"): rendered only when there is
// one. A fetch decodes its kernel's record at first use, so the context must cost nothing.
struct Where {
    Where(const char* text) : label(text) {}  // NOLINT(google-explicit-constructor): a literal names the place
    Where(const Where& within, const char* text) : parent(&within), label(text) {}
    Where(const Where& within, const char* text, size_t n) : parent(&within), label(text), number(n), numbered(true) {}
    Where(const char* text, size_t n) : label(text), number(n), numbered(true) {}
    std::string str() const {
        std::string s = parent != nullptr ? parent->str() + " " : std::string();
        s += label;
        if (numbered) s += " " + std::to_string(number);
        return s;
    }
    const Where* parent{nullptr};
    const char* label;
    size_t number{0};
    bool numbered{false};
};
std::string operator+(const Where& w, const char* text) { return w.str() + text; }

// Calls `handle` with each item of a container in order, building nothing: memory does not grow
// with the number of items (a hostile manifest may hold millions of empty ones).
template <typename Handle>
Result<void> for_each_item(Bytes b, const Where& where, Handle&& handle) {
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
Result<std::string> text_of(const Item& item, const Where& what, size_t limit = kMaxString) {
    if (item.payload.size() > limit) return bad(what + " longer than " + std::to_string(limit) + " bytes");
    std::string s(as_text(item.payload));
    if (s.find('\0') != std::string::npos) return bad(what + " contains a NUL byte");
    return s;
}

Result<uint16_t> u16_of(const Item& item, const Where& what) {
    if (item.payload.size() != 2) return bad(what + " must be 2 bytes");
    return load_u16(item.payload, 0);
}

Error unknown_required(const Item& item, const Where& where) {
    return make_error(ErrorCode::archive_unsupported, "manifest: " + where.str() + " has required field " + std::to_string(item.tag) +
                                                  " that this sdm does not know (written by a newer packer); update sdm");
}

// Decodes a set of fields where each known tag appears at most once (unless repeated is true).
template <typename Handler>
Result<void> fields(Bytes payload, const Where& where, std::initializer_list<std::pair<uint16_t, bool>> known, Handler&& handle) {
    uint64_t seen = 0;  // by place in `known` (at most 64 known tags)
    return for_each_item(payload, where, [&](const Item& item) -> Result<void> {
        const auto k = std::find_if(known.begin(), known.end(), [&](const auto& p) { return p.first == item.tag; });
        if (k == known.end()) {
            if (item.flags & kRequiredFlag) return unknown_required(item, where);
            return {};  // an optional field from a later minor
        }
        const uint64_t bit = uint64_t{1} << (static_cast<size_t>(k - known.begin()) & 63);
        if (!k->second && (seen & bit) != 0) return bad(where + ": field " + std::to_string(item.tag) + " appears twice");
        seen |= bit;
        return handle(item);
    });
}

Result<PlanRule> decode_rule(Bytes payload, const Where& where) {
    PlanRule rule;
    bool have_class = false, have_block = false, have_grid = false;
    SDM_TRY(fields(payload, where,
                   {{tag::device_class, false}, {tag::capability, false}, {tag::when, false}, {tag::block, false},
                    {tag::blocks_per_sm, false}, {tag::smem, false}, {tag::grid, false}, {tag::cluster_x, false},
                    {tag::cluster_y, false}, {tag::cluster_z, false}, {tag::pdl, false}, {tag::capability_min, false}, {tag::capability_max, false},
                    {tag::block_y, false}, {tag::block_z, false}, {tag::grid_y, false}, {tag::grid_z, false}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::capability || item.tag == tag::capability_min || item.tag == tag::capability_max) {
                           SDM_TRY_GET(v, u16_of(item, Where(where, "capability")));
                           (item.tag == tag::capability ? rule.capability : item.tag == tag::capability_min ? rule.capability_min : rule.capability_max) = *v;
                           return {};
                       }
                       SDM_TRY_GET(s, text_of(item, Where(where, "field", item.tag)));
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
                       case tag::block_y: rule.block_y = std::move(*s); break;
                       case tag::block_z: rule.block_z = std::move(*s); break;
                       case tag::grid_y: rule.grid_y = std::move(*s); break;
                       case tag::grid_z: rule.grid_z = std::move(*s); break;
                       default: break;
                       }
                       return {};
                   }));
    const bool ranged = rule.capability_min != 0 || rule.capability_max != 0;
    if ((!have_class && !ranged) || !have_block || !have_grid) return bad(where + ": a plan rule needs a class or a capability range, block and grid");
    return rule;
}

Result<KernelSpec> decode_kernel(Bytes payload, size_t index, size_t max_name) {
    KernelSpec k;
    const Where where("kernel", index);
    bool have_name = false, have_module = false, have_signature = false;
    SDM_TRY(fields(payload, where,
                   {{tag::name, false}, {tag::module, false}, {tag::signature, false}, {tag::problem, true}, {tag::plan, true}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::plan) {
                           if (k.plans.size() >= kMaxRules) return bad(where + ": more than " + std::to_string(kMaxRules) + " plan rules");
                           SDM_TRY_GET(rule, decode_rule(item.payload, Where(where, "plan rule", k.plans.size())));
                           k.plans.push_back(std::move(*rule));
                           return {};
                       }
                       const bool is_name = item.tag == tag::name || item.tag == tag::module;
                       SDM_TRY_GET(s, text_of(item, Where(where, "field", item.tag), is_name ? max_name : kMaxString));
                       if (item.tag == tag::name) { k.name = std::move(*s); have_name = true; }
                       else if (item.tag == tag::module) { k.module = std::move(*s); have_module = true; }
                       else if (item.tag == tag::problem) {
                           if (k.problem.size() >= kMaxProblemParameters) return bad(where + ": more than " + std::to_string(kMaxProblemParameters) + " problem parameters");
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

std::string param_type_name(const ParamType& type) {
    if (type.kind == ParamKind::opaque) return std::string(kOpaque) + std::to_string(type.size) + ":" + std::to_string(type.align);
    for (const auto& [name, t] : kParamTypes)
        if (t.kind == type.kind) return std::string(name);
    return "?";
}

size_t param_type_size(const ParamType& type) noexcept { return type.size; }

bool param_type_is_11(const ParamType& type) noexcept {
    return std::none_of(std::begin(kParamTypes), std::begin(kParamTypes) + kTypes10, [&](const auto& p) { return p.second == type; });
}

Result<Signature> parse_signature(std::string_view text) {
    Signature out;
    if (text.empty()) return out;  // a kernel without parameters
    const auto refuse = [&](const std::string& why) { return invalid("signature '" + shown_name(text) + "': " + why); };
    size_t at = 0;
    while (at <= text.size()) {
        size_t end = text.find(',', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view token = text.substr(at, end - at);
        while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
        while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
        const auto same = [&](std::string_view name, std::string_view text) {  // in place, no memcmp call per token
            if (name.size() != text.size()) return false;
            for (size_t c = 0; c < name.size(); ++c)
                if (name[c] != text[c]) return false;
            return true;
        };
        if (token.size() >= kOpaque.size() && same(kOpaque, token.substr(0, kOpaque.size()))) {
            // opaque:SIZE:ALIGN
            const std::string_view rest = token.substr(kOpaque.size());
            const size_t colon = rest.find(':');
            uint32_t size = 0, align = 0;
            const auto number = [](std::string_view t, uint32_t& v) {
                const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
                return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
            };
            if (colon == std::string_view::npos || !number(rest.substr(0, colon), size) || !number(rest.substr(colon + 1), align))
                return refuse("'" + printable(token.substr(0, 64)) + "' is not opaque:SIZE:ALIGN (a struct by value, e.g. opaque:40:8)");
            if (size < 1 || size > kMaxOpaqueSize) return refuse("'" + std::string(token) + "': the size must be 1 to " + std::to_string(kMaxOpaqueSize) + " bytes");
            if (align < 1 || align > kMaxOpaqueAlign || (align & (align - 1)) != 0)
                return refuse("'" + std::string(token) + "': the alignment must be a power of two from 1 to " + std::to_string(kMaxOpaqueAlign));
            out.push_back({ParamKind::opaque, size, align});
        } else {
            // (A library's kernels have tens of parameters each: a memcmp call per candidate name
            // was most of a fetch's cost.)
            const auto t = std::find_if(std::begin(kParamTypes), std::end(kParamTypes), [&](const auto& p) { return same(p.first, token); });
            if (t == std::end(kParamTypes))
                return refuse("unknown type '" + printable(token.substr(0, 64)) +
                              "' (ptr, i32, u32, i64, u64, f32, f64, f16, bf16, b8, b16, b32, b64, opaque:SIZE:ALIGN)");
            out.push_back(t->second);
        }
        if (out.size() > kMaxParameters) return refuse("more than " + std::to_string(kMaxParameters) + " parameters");
        at = end + 1;
    }
    return out;
}

std::string signature_text(const Signature& signature) {
    std::string out;
    out.reserve(signature.size() * 5);
    for (const ParamType& t : signature) {
        if (!out.empty()) out += ',';
        if (t.kind == ParamKind::opaque) {
            out += param_type_name(t);
            continue;
        }
        for (const auto& [name, known] : kParamTypes)  // appended in place: no string per parameter
            if (known.kind == t.kind) {
                out += name;
                break;
            }
    }
    return out;
}

std::vector<uint32_t> param_offsets(const Signature& signature, uint32_t* total) {
    std::vector<uint32_t> out;
    out.reserve(signature.size());
    uint32_t at = 0;
    for (const ParamType& t : signature) {  // at most 64 parameters of at most 4096 bytes: no overflow
        at = (at + t.align - 1) / t.align * t.align;
        out.push_back(at);
        at += t.size;
    }
    if (total != nullptr) *total = at;
    return out;
}

Result<void> check_signature_layout(const std::string& kernel, const Signature& declared, const Signature& derived, const std::string& derived_from) {
    const auto views = [&] {
        return " (the manifest declares (" + signature_text(declared) + "); " + derived_from + " says (" + signature_text(derived) + "))";
    };
    if (declared.size() != derived.size())
        return make_error(ErrorCode::mismatch, "kernel " + kernel + " takes " + std::to_string(derived.size()) + " parameters, the manifest declares " +
                                                   std::to_string(declared.size()) + views() + "; correct the manifest's signature");
    const auto want = param_offsets(declared), got = param_offsets(derived);
    for (size_t i = 0; i < declared.size(); ++i) {
        if (declared[i].size == derived[i].size && want[i] == got[i]) continue;
        return make_error(ErrorCode::mismatch, "kernel " + kernel + " parameter " + std::to_string(i) + ": the manifest declares " +
                                                   param_type_name(declared[i]) + " (" + std::to_string(declared[i].size) + " bytes at offset " +
                                                   std::to_string(want[i]) + "), the image has " + std::to_string(derived[i].size) +
                                                   " bytes at offset " + std::to_string(got[i]) + views() + "; correct the manifest's signature");
    }
    return {};
}

std::span<const KernelSpec> Manifest::kernels_named(std::string_view name) const {
    const auto [first, last] = std::equal_range(kernels.begin(), kernels.end(), name, [](const auto& x, const auto& y) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, KernelSpec>) return x.name < y;
        else return x < y.name;
    });
    return {first, last};
}

const KernelSpec* Manifest::find_kernel(std::string_view name, std::string_view module) const {
    for (const KernelSpec& k : kernels_named(name))
        if (module.empty() || k.module == module) return &k;
    return nullptr;
}

std::string expression_key(std::string_view expression) {
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string out;
    out.reserve(expression.size());
    bool space = false;
    for (const char c : expression) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            space = true;
            continue;
        }
        if (space && !out.empty() && word(out.back()) && word(c)) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

std::string expression_problem(std::string_view text) {
    if (text.empty() || text.size() > kMaxNameExpressionBytes)
        return "a name expression must be 1 to " + std::to_string(kMaxNameExpressionBytes) + " bytes (this one: " + std::to_string(text.size()) + ")";
    if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= ' ' && c <= '~'; }))
        return "name expression '" + shown_name(text) + "' holds a byte that is not printable ASCII";
    return {};
}

std::span<const ManifestIndex::Expression> ManifestIndex::find_expression(std::string_view key) const {
    const auto first = std::lower_bound(expressions_.begin(), expressions_.end(), key, [](const Expression& x, std::string_view k) { return x.expression < k; });
    auto last = first;
    while (last != expressions_.end() && last->expression == key) ++last;
    return {first, last};
}

QualifiedName split_module(std::string_view requested) noexcept {
    const size_t bang = requested.find(kModuleSeparator);
    if (bang == std::string_view::npos || bang + 1 == requested.size()) return {{}, requested};
    const std::string_view module = requested.substr(0, bang);
    if (!valid_name(module, limits::max_long_name_length)) return {{}, requested};
    return {module, requested.substr(bang + 1)};
}

std::string qualified_name(std::string_view module, std::string_view name) {
    std::string out;
    out.reserve(module.size() + 1 + name.size());
    out.append(module).append(1, kModuleSeparator).append(name);
    return out;
}

std::vector<std::string> plan_variables(const KernelSpec& kernel) {
    std::vector<std::string> v = kernel.problem;
    v.insert(v.end(), std::begin(kDeviceVariables), std::end(kDeviceVariables));
    v.insert(v.end(), std::begin(kOutputVariables), std::end(kOutputVariables));
    return v;
}

namespace {

// validate_kernel but for the names (which ManifestIndex::build checked for every record).
Result<void> validate_kernel_fields(const KernelSpec& k) {
    if (k.signature.size() > kMaxParameters) return invalid("kernel " + k.name + ": more than " + std::to_string(kMaxParameters) + " parameters");
    if (k.problem.size() > kMaxProblemParameters) return invalid("kernel " + k.name + ": more than " + std::to_string(kMaxProblemParameters) + " problem parameters");
    std::set<std::string> params;
    for (const auto& p : k.problem) {
        const bool reserved = std::find(std::begin(kDeviceVariables), std::end(kDeviceVariables), p) != std::end(kDeviceVariables) ||
                              std::find(std::begin(kOutputVariables), std::end(kOutputVariables), p) != std::end(kOutputVariables);
        if (!identifier(p) || reserved || !params.insert(p).second)
            return invalid("kernel " + k.name + ": problem parameter '" + p + "' must be a unique identifier other than " +
                           "sms, l2_bytes, smem_cap, cc, block, blocks_per_sm, smem");
    }
    if (k.plans.size() > kMaxRules) return invalid("kernel " + k.name + ": more than " + std::to_string(kMaxRules) + " plan rules");
    if (k.plans.empty()) return {};  // (an imported kernel's case: nothing below to check)
    const std::vector<std::string> vars = plan_variables(k);
    const size_t base = k.problem.size() + std::size(kDeviceVariables);
    for (size_t r = 0; r < k.plans.size(); ++r) {
        const PlanRule& rule = k.plans[r];
        const bool ranged = rule.capability_min != 0 || rule.capability_max != 0;
        const std::string where = "kernel " + k.name + " plan rule " + std::to_string(r) + " (" +
                                  (rule.device_class.empty() ? "capabilities " + sm_capability(rule.capability_min) + "-" + sm_capability(rule.capability_max)
                                                             : rule.device_class) +
                                  ")";
        // The hardware matrix (common/hardware_matrix.hpp): the class, and a capability of it.
        if (!rule.device_class.empty() || !ranged) {
            const auto cls = parse_device_class(rule.device_class);
            if (!cls) return invalid(where + ": class must be modern, a100 or rtx (or give a capability range)");
            if (rule.capability != 0 && !class_has_capability(*cls, rule.capability))
                return invalid(where + ": capability " + sm_capability(rule.capability) + " is not in class " + rule.device_class);
        } else if (rule.capability != 0) {
            return invalid(where + ": a single capability belongs to a class rule; give it as a range (capability_min = capability_max)");
        }
        if (ranged && (rule.capability_min < 10 || rule.capability_max > 999 || rule.capability_min > rule.capability_max))
            return invalid(where + ": the capability range must run from a capability to a later one (e.g. 75 to 89)");
        // Each output may use the problem, the device and the outputs computed before it.
        const std::pair<const std::string*, size_t> exprs[] = {
            {&rule.when, base}, {&rule.block, base}, {&rule.block_y, base}, {&rule.block_z, base}, {&rule.blocks_per_sm, base + 1}, {&rule.smem, base + 2},
            {&rule.grid, base + 3}, {&rule.grid_y, base + 3}, {&rule.grid_z, base + 3}, {&rule.cluster[0], base + 3}, {&rule.cluster[1], base + 3},
            {&rule.cluster[2], base + 3}, {&rule.pdl, base + 3}};
        for (const auto& [text, visible] : exprs) {
            auto e = Expression::parse(*text, std::span(vars).first(visible));
            if (!e) return invalid(where + ": " + e.error().message);
        }
    }
    return {};
}

// A rule without the 3-D fields: what a 1.0 and 0.3 reader understands.
bool rule_is_1d(const PlanRule& r) { return r.block_y == "1" && r.block_z == "1" && r.grid_y == "1" && r.grid_z == "1"; }

bool kernel_needs_11(const KernelSpec& k) {
    if (k.name.size() > limits::max_name_length || k.module.size() > limits::max_name_length) return true;
    if (std::any_of(k.signature.begin(), k.signature.end(), param_type_is_11)) return true;
    for (const PlanRule& r : k.plans)
        if (r.device_class.empty() || r.capability_min != 0 || r.capability_max != 0 || !rule_is_1d(r)) return true;
    return false;
}

}  // namespace

Result<void> validate_kernel(const KernelSpec& k, size_t max_name) {
    if (!valid_name(k.name, max_name))
        return invalid("kernel name '" + printable(k.name.substr(0, 64)) + "' " + name_problem(k.name, max_name) + " (" + kNameRules + ")");
    if (!valid_name(k.module, max_name))
        return invalid("kernel " + k.name + ": module name '" + printable(k.module.substr(0, 64)) + "' " + name_problem(k.module, max_name) + " (" +
                       kNameRules + ")");
    return validate_kernel_fields(k);
}

bool needs_manifest_11(const Manifest& m) { return std::any_of(m.kernels.begin(), m.kernels.end(), kernel_needs_11); }

Result<void> validate_manifest(const Manifest& m) {
    if (m.content_version.size() > kMaxContentVersion) return invalid("content version longer than " + std::to_string(kMaxContentVersion) + " characters");
    if (!is_printable(m.content_version))
        return invalid("content version '" + printable(m.content_version) + "' holds a byte that is not printable ASCII");
    if (m.kernels.size() > kMaxKernels) return invalid("more than " + std::to_string(kMaxKernels) + " kernels");
    std::set<std::pair<std::string_view, std::string_view>> names;
    for (const KernelSpec& k : m.kernels) {
        SDM_TRY(validate_kernel(k, limits::max_long_name_length));
        if (!names.insert({k.name, k.module}).second) return invalid("kernel " + k.name + " is listed twice in module " + k.module);
    }
    if (m.expressions.size() > kMaxNameExpressions) return invalid("more than " + std::to_string(kMaxNameExpressions) + " name expressions");
    std::set<std::pair<std::string, std::string_view>> expressions;
    for (const NameExpression& x : m.expressions) {
        if (const std::string problem = expression_problem(x.expression); !problem.empty()) return invalid(problem);
        if (!names.contains({x.symbol, x.module}))
            return invalid("name expression '" + x.expression + "' names kernel " + shown_name(x.symbol) + " of module " + shown_name(x.module) +
                           ", which the manifest does not list");
        if (!expressions.insert({expression_key(x.expression), x.module}).second) return invalid("name expression '" + x.expression + "' is recorded twice for module " + x.module);
    }
    return {};
}

bool has_repeated_names(const Manifest& m) {
    std::set<std::string_view> names;
    for (const KernelSpec& k : m.kernels)
        if (!names.insert(k.name).second) return true;
    return false;
}

Result<ByteVector> encode_manifest(const Manifest& m) {
    SDM_TRY(validate_manifest(m));
    const bool v11 = needs_manifest_11(m), repeated = has_repeated_names(m);
    const bool v12 = repeated || !m.expressions.empty();
    Encoder e;
    e.bytes().insert(e.bytes().end(), reinterpret_cast<const std::byte*>(kManifestMagic), reinterpret_cast<const std::byte*>(kManifestMagic) + 4);
    e.bytes().resize(kPreamble);
    store_u16(e.bytes(), 4, kManifestMajor);
    store_u16(e.bytes(), 6, v12 ? kManifestMinor12 : v11 ? kManifestMinor11 : kManifestMinor);
    std::byte abi[4];
    store_u16(abi, 0, m.kernel_abi_major);
    store_u16(abi, 2, m.kernel_abi_minor);
    e.raw(tag::kernel_abi, abi);
    e.text(tag::content_version, m.content_version);
    // Optional: a reader that does not know the tag applies the matrix to every archive, as
    // sdm 0.2 did.
    if (m.hardware_matrix) e.text(tag::hardware_matrix, kSdmHardwareMatrix, false);
    // Required: a reader that takes names as unique would serve one module's kernel for both.
    if (repeated) e.text(tag::scoped_names, "module");
    std::vector<const KernelSpec*> sorted;
    for (const auto& k : m.kernels) sorted.push_back(&k);
    std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return std::tie(a->name, a->module) < std::tie(b->name, b->module); });
    for (const KernelSpec* k : sorted) {
        const size_t kernel = e.open(tag::kernel);
        e.text(tag::name, k->name);
        e.text(tag::module, k->module);
        e.text(tag::signature, signature_text(k->signature));
        for (const auto& p : k->problem) e.text(tag::problem, p);
        for (const PlanRule& r : k->plans) {
            const size_t rule = e.open(tag::plan);
            if (!r.device_class.empty()) e.text(tag::device_class, r.device_class);
            if (r.capability != 0) e.u16(tag::capability, r.capability);
            if (r.capability_min != 0 || r.capability_max != 0) {
                e.u16(tag::capability_min, r.capability_min);
                e.u16(tag::capability_max, r.capability_max);
            }
            e.text(tag::when, r.when);
            e.text(tag::block, r.block);
            e.text(tag::blocks_per_sm, r.blocks_per_sm);
            e.text(tag::smem, r.smem);
            e.text(tag::grid, r.grid);
            e.text(tag::cluster_x, r.cluster[0]);
            e.text(tag::cluster_y, r.cluster[1]);
            e.text(tag::cluster_z, r.cluster[2]);
            e.text(tag::pdl, r.pdl);
            // Required (the default flag): a reader that does not know them refuses the manifest
            // as unsupported rather than launch a 3-D plan in one dimension. Only when used: a 1-D
            // rule's bytes are those of every earlier writer.
            if (!rule_is_1d(r)) {
                e.text(tag::block_y, r.block_y);
                e.text(tag::block_z, r.block_z);
                e.text(tag::grid_y, r.grid_y);
                e.text(tag::grid_z, r.grid_z);
            }
            e.close(rule);
        }
        e.close(kernel);
    }
    // Optional: a reader that does not know them finds the kernels by their symbols only.
    std::vector<const NameExpression*> expressions;
    std::vector<NameExpression> keyed;  // stored in their key form (expression_key)
    keyed.reserve(m.expressions.size());
    for (const auto& x : m.expressions) keyed.push_back({expression_key(x.expression), x.module, x.symbol});
    for (const auto& x : keyed) expressions.push_back(&x);
    std::sort(expressions.begin(), expressions.end(), [](auto a, auto b) { return std::tie(a->expression, a->module) < std::tie(b->expression, b->module); });
    for (const NameExpression* x : expressions) {
        const size_t item = e.open(tag::name_expression, false);
        e.text(tag::expression, x->expression);
        e.text(tag::expression_module, x->module);
        e.text(tag::expression_symbol, x->symbol);
        e.close(item);
    }
    store_u32(e.bytes(), 8, static_cast<uint32_t>(e.bytes().size() - kPreamble));
    return e.take();
}

Result<ManifestIndex> ManifestIndex::build(Bytes b) {
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
    ManifestIndex m;
    bool scoped = false;  // tag 5: a name may be listed by several modules
    // A kernel's item takes at least 40 bytes (its header, a name's and a module's); bounded by the
    // input's real size, so a hostile count costs nothing.
    m.kernels_.reserve(std::min<size_t>(kMaxKernels, b.size() / 40));
    m.minor_ = minor;
    m.max_name_ = minor >= kManifestMinor11 ? limits::max_long_name_length : limits::max_name_length;
    bool have_abi = false;
    SDM_TRY(fields(b.subspan(kPreamble), "top level",
                   {{tag::kernel_abi, false}, {tag::content_version, false}, {tag::kernel, true}, {tag::hardware_matrix, false},
                    {tag::scoped_names, false}, {tag::name_expression, true}},
                   [&](const Item& item) -> Result<void> {
                       if (item.tag == tag::kernel_abi) {
                           if (item.payload.size() != 4) return bad("kernel ABI must be 4 bytes");
                           m.kernel_abi_major = load_u16(item.payload, 0);
                           m.kernel_abi_minor = load_u16(item.payload, 2);
                           have_abi = true;
                       } else if (item.tag == tag::content_version) {
                           SDM_TRY_GET(s, text_of(item, "content version"));
                           if (s->size() > kMaxContentVersion) return bad("content version longer than " + std::to_string(kMaxContentVersion) + " characters");
                           if (!is_printable(*s)) return bad("content version '" + printable(*s) + "' holds a byte that is not printable ASCII");
                           m.content_version = std::move(*s);
                       } else if (item.tag == tag::hardware_matrix) {
                           SDM_TRY_GET(s, text_of(item, "hardware matrix"));
                           if (*s != kSdmHardwareMatrix) return bad("hardware matrix '" + printable(*s) + "' is not 'sdm', the one this sdm knows");
                           m.hardware_matrix = true;
                       } else if (item.tag == tag::scoped_names) {
                           if (as_text(item.payload) != "module") return bad("scoped names '" + printable(std::string(as_text(item.payload).substr(0, 64))) + "' is not 'module'");
                           scoped = true;
                       } else if (item.tag == tag::name_expression) {
                           SDM_TRY(m.add_expression(item.payload));
                       } else {
                           // Only the name and the module now; the rest at the kernel's first use (spec()).
                           if (m.kernels_.size() >= kMaxKernels) return bad("more than " + std::to_string(kMaxKernels) + " kernels");
                           // Built only for a message: a mount indexes up to 65,536 kernels.
                           const auto where = [&] { return "kernel " + std::to_string(m.kernels_.size()); };
                           Kernel k;
                           k.item = item.payload;
                           bool have_name = false, have_module = false;
                           // The kernel's own items, walked as for_each_item does (without its message).
                           const Bytes body = item.payload;
                           for (size_t at = 0; at < body.size();) {
                               if (body.size() - at < kItemHeader) return bad(where() + ": truncated item header");
                               const uint32_t length = load_u32(body, at + 4);
                               if (length > body.size() - at - kItemHeader)
                                   return bad(where() + ": item of " + std::to_string(length) + " bytes runs past its container");
                               const Item field{load_u16(body, at), load_u16(body, at + 2), body.subspan(at + kItemHeader, length)};
                               at += kItemHeader + length;
                               if (field.tag != tag::name && field.tag != tag::module) continue;
                               bool& have = field.tag == tag::name ? have_name : have_module;
                               if (have) return bad(where() + ": field " + std::to_string(field.tag) + " appears twice");
                               have = true;
                               const std::string_view text = as_text(field.payload);
                               if (!valid_name(text, m.max_name_))
                                   return bad(where() + ": " + (field.tag == tag::name ? "kernel" : "module") + " name '" + printable(text.substr(0, 64)) +
                                              "' " + name_problem(text, m.max_name_) + " (" + kNameRules + ")");
                               (field.tag == tag::name ? k.name : k.module) = text;
                           }
                           if (!have_name || !have_module) return bad(where() + ": a kernel needs name, module and signature");
                           m.kernels_.push_back(k);
                       }
                       return {};
                   }));
    if (!have_abi) return bad("no kernel ABI version");
    // The encoder writes kernels sorted by (name, module): checked in one pass, sorted only when they are not.
    const auto by_name = [](const Kernel& x, const Kernel& y) { return std::tie(x.name, x.module) < std::tie(y.name, y.module); };
    if (!std::is_sorted(m.kernels_.begin(), m.kernels_.end(), by_name)) std::sort(m.kernels_.begin(), m.kernels_.end(), by_name);
    for (size_t i = 1; i < m.kernels_.size(); ++i) {
        const Kernel &a = m.kernels_[i - 1], &k = m.kernels_[i];
        if (k.name != a.name) continue;
        if (k.module == a.module) return bad("kernel " + shown_name(k.name) + " is listed twice in module " + shown_name(k.module));
        if (!scoped)
            return bad("kernel " + shown_name(k.name) + " is listed by modules " + shown_name(a.module) + " and " +
                       shown_name(k.module) + ", but the manifest does not declare module-scoped names (tag 5)");
    }
    // Each expression names a listed kernel, once per module.
    const auto by_expression = [](const Expression& x, const Expression& y) { return std::tie(x.expression, x.module) < std::tie(y.expression, y.module); };
    if (!std::is_sorted(m.expressions_.begin(), m.expressions_.end(), by_expression)) std::sort(m.expressions_.begin(), m.expressions_.end(), by_expression);
    for (size_t i = 0; i < m.expressions_.size(); ++i) {
        const Expression& x = m.expressions_[i];
        const std::string shown = "name expression '" + shown_name(x.expression) + "'";
        if (i > 0 && x.expression == m.expressions_[i - 1].expression && x.module == m.expressions_[i - 1].module)
            return bad(shown + " is recorded twice for module " + shown_name(x.module));
        if (m.find(x.symbol, x.module) == nullptr)
            return bad(shown + " names kernel " + shown_name(x.symbol) + " of module " + shown_name(x.module) +
                       ", which the manifest does not list");
    }
    // By module too, stably (so by name within a module): a module's kernels in one binary search.
    m.by_module_.resize(m.kernels_.size());
    for (size_t i = 0; i < m.kernels_.size(); ++i) m.by_module_[i] = static_cast<uint32_t>(i);
    std::stable_sort(m.by_module_.begin(), m.by_module_.end(), [&](uint32_t x, uint32_t y) { return m.kernels_[x].module < m.kernels_[y].module; });
    return m;
}

std::vector<const ManifestIndex::Kernel*> ManifestIndex::of_module(std::string_view module) const {
    const auto [first, last] = std::equal_range(by_module_.begin(), by_module_.end(), module, [&](const auto& x, const auto& y) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, uint32_t>) return kernels_[x].module < y;
        else return x < kernels_[y].module;
    });
    std::vector<const Kernel*> out;
    out.reserve(static_cast<size_t>(last - first));
    for (auto it = first; it != last; ++it) out.push_back(&kernels_[*it]);
    return out;
}

std::span<const ManifestIndex::Kernel> ManifestIndex::find_all(std::string_view name) const {
    const auto first = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Kernel& k, std::string_view n) { return k.name < n; });
    auto last = first;
    while (last != kernels_.end() && last->name == name) ++last;  // one per module
    return {first, last};
}

const ManifestIndex::Kernel* ManifestIndex::find(std::string_view name, std::string_view module) const {
    const auto all = find_all(name);
    if (module.empty()) return all.size() == 1 ? &all.front() : nullptr;
    const auto it = std::lower_bound(all.begin(), all.end(), module, [](const Kernel& k, std::string_view m) { return k.module < m; });
    return it != all.end() && it->module == module ? &*it : nullptr;
}

Result<void> ManifestIndex::add_expression(Bytes item) {
    if (expressions_.size() >= kMaxNameExpressions) return bad("more than " + std::to_string(kMaxNameExpressions) + " name expressions");
    const auto where = [&] { return "name expression " + std::to_string(expressions_.size()); };
    Expression x;
    bool have[3] = {false, false, false};
    for (size_t at = 0; at < item.size();) {
        if (item.size() - at < kItemHeader) return bad(where() + ": truncated item header");
        const uint32_t length = load_u32(item, at + 4);
        if (length > item.size() - at - kItemHeader) return bad(where() + ": item of " + std::to_string(length) + " bytes runs past its container");
        const uint16_t field = load_u16(item, at), flags = load_u16(item, at + 2);
        const std::string_view text = as_text(item.subspan(at + kItemHeader, length));
        at += kItemHeader + length;
        if (field < tag::expression || field > tag::expression_symbol) {
            if (flags & kRequiredFlag) return make_error(ErrorCode::archive_unsupported, "manifest: " + where() + " has required field " + std::to_string(field) +
                                                                                             " that this sdm does not know (written by a newer packer); update sdm");
            continue;
        }
        if (have[field - 1]) return bad(where() + ": field " + std::to_string(field) + " appears twice");
        have[field - 1] = true;
        if (field == tag::expression) {
            if (const std::string problem = expression_problem(text); !problem.empty()) return bad(where() + ": " + problem);
            x.expression = text;
        } else {
            if (!valid_name(text, max_name_))
                return bad(where() + ": " + (field == tag::expression_module ? "module" : "kernel") + " name '" + printable(std::string(text.substr(0, 64))) + "' " +
                           name_problem(text, max_name_) + " (" + kNameRules + ")");
            (field == tag::expression_module ? x.module : x.symbol) = text;
        }
    }
    if (!have[0] || !have[1] || !have[2]) return bad(where() + ": a name expression needs its expression, module and symbol");
    expressions_.push_back(x);
    return {};
}

Result<KernelSpec> ManifestIndex::spec(const Kernel& kernel) const {
    const size_t index = static_cast<size_t>(&kernel - kernels_.data());
    SDM_TRY_GET(k, decode_kernel(kernel.item, index, max_name_));
    // Its name and module were checked by build(), as every record's.
    if (auto valid = validate_kernel_fields(*k); !valid) return bad(valid.error().message.substr(std::string_view("manifest: ").size()));
    if (minor_ < kManifestMinor11 && kernel_needs_11(*k))
        return bad("kernel " + k->name + " uses manifest 1.1 fields in a manifest of minor " + std::to_string(minor_));
    return k;
}

Result<Manifest> decode_manifest(Bytes b) {
    SDM_TRY_GET(index, ManifestIndex::build(b));
    Manifest m;
    m.kernel_abi_major = index->kernel_abi_major;
    m.kernel_abi_minor = index->kernel_abi_minor;
    m.content_version = index->content_version;
    m.hardware_matrix = index->hardware_matrix;
    for (const auto& x : index->expressions()) m.expressions.push_back({std::string(x.expression), std::string(x.module), std::string(x.symbol)});
    m.kernels.reserve(index->size());
    for (const auto& k : index->kernels()) {
        SDM_TRY_GET(spec, index->spec(k));
        m.kernels.push_back(std::move(*spec));
    }
    return m;
}

}  // namespace sdm::archive
