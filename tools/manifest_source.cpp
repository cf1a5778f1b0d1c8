#include "manifest_source.hpp"

#include <array>
#include <algorithm>
#include <charconv>
#include <optional>
#include <cstdio>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "archive/format.hpp"
#include "common/text.hpp"

namespace sdm::tools {
namespace {

using archive::Manifest;

// Bounds on a source before toml++ parses it (check_shape). Real manifests nest three deep
// ([[kernel.plan]] and its cluster array) and hold a dozen keys per plan rule.
constexpr size_t kMaxSourceBytes = 64u << 20;
constexpr size_t kMaxSourceNesting = 16;
constexpr size_t kMaxSourceKeys = 4u << 20;

Error bad(const std::string& path, const toml::source_region& where, const std::string& why) {
    return make_error(ErrorCode::invalid_argument,
                      path + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column) + ": " + why);
}

Result<void> only_keys(const std::string& path, const toml::table& table, std::initializer_list<std::string_view> allowed,
                       const std::string& what) {
    for (const auto& [key, value] : table) {
        if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
            std::string list;
            for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            return bad(path, value.source(), "unknown key '" + std::string(key.str()) + "' in " + what + " (allowed: " + list + ")");
        }
    }
    return {};
}

Result<std::string> text(const std::string& path, const toml::table& t, std::string_view key, const std::string& what, bool required,
                         std::string fallback = {}) {
    const toml::node* node = t.get(key);
    if (node == nullptr) {
        if (required) return bad(path, t.source(), what + " needs '" + std::string(key) + "'");
        return fallback;
    }
    if (const auto* s = node->as_string()) return std::string(s->get());
    return bad(path, node->source(), what + ": '" + std::string(key) + "' must be a string");
}

// A plan expression may be written as a string or, when constant, as an integer or boolean.
Result<std::string> expression(const std::string& path, const toml::node* node, const std::string& what, std::string fallback) {
    if (node == nullptr) return fallback;
    if (const auto* s = node->as_string()) return std::string(s->get());
    if (const auto* i = node->as_integer()) return std::to_string(i->get());
    if (const auto* b = node->as_boolean()) return std::string(b->get() ? "1" : "0");
    return bad(path, node->source(), what + " must be an expression string, an integer or a boolean");
}

// A decimal number of 1 to 5 digits, nothing else (no sign, no space, no wrap-around): 0..65535.
std::optional<uint16_t> version_number(std::string_view text) {
    if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    unsigned value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    if (value > 65535) return std::nullopt;
    return static_cast<uint16_t>(value);
}

Result<std::pair<uint16_t, uint16_t>> version_pair(const std::string& path, const toml::node* node, const std::string& what) {
    const auto* s = node ? node->as_string() : nullptr;
    if (s == nullptr) return bad(path, node ? node->source() : toml::source_region{}, what + " must be a \"major.minor\" string");
    const std::string_view v = s->get();
    const auto dot = v.find('.');
    const auto major = dot == std::string_view::npos ? std::nullopt : version_number(v.substr(0, dot));
    const auto minor = dot == std::string_view::npos ? std::nullopt : version_number(v.substr(dot + 1));
    if (!major || !minor)
        return bad(path, node->source(), what + " '" + printable(v) + "' must be \"major.minor\", two decimal numbers of 0..65535");
    return std::pair<uint16_t, uint16_t>(*major, *minor);
}

// toml++ parses nested tables and values recursively: a source nested deeply enough overflows the
// stack. Measured here before the parser sees the text, outside strings and comments: how deeply
// arrays and inline tables nest, how many dots a line's keys hold, and how many keys there are.
Result<void> check_shape(const std::string& text, const std::string& path) {
    const auto refuse = [&](size_t line, const std::string& why) {
        return make_error(ErrorCode::invalid_argument, path + ":" + std::to_string(line) + ": " + why + "; a manifest source needs far less");
    };
    if (text.size() > kMaxSourceBytes)
        return make_error(ErrorCode::invalid_argument, path + ": " + std::to_string(text.size()) + " bytes, more than a manifest source may hold (" +
                                                           std::to_string(kMaxSourceBytes) + ")");
    size_t line = 1, depth = 0, dots = 0, keys = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            dots = 0;
        } else if (c == '#') {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
        } else if (c == '"' || c == '\'') {
            const bool multi = text.compare(i, 3, std::string(3, c)) == 0;
            const std::string close = multi ? std::string(3, c) : std::string(1, c);
            size_t j = i + close.size();
            for (; j < text.size(); ++j) {
                if (text[j] == '\n') ++line;
                if (c == '"' && text[j] == '\\') {
                    ++j;
                    continue;
                }
                if (text.compare(j, close.size(), close) == 0) break;
                if (!multi && text[j] == '\n') break;  // an unterminated string: the parser says so
            }
            i = std::min(j + close.size() - 1, text.size() - 1);
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxSourceNesting) return refuse(line, "arrays, inline tables or table headers nest more than " + std::to_string(kMaxSourceNesting) + " deep");
        } else if (c == ']' || c == '}') {
            if (depth > 0) --depth;
        } else if (c == '.') {
            if (++dots > kMaxSourceNesting) return refuse(line, "keys on one line hold more than " + std::to_string(kMaxSourceNesting) + " dots");
        } else if (c == '=') {
            if (++keys > kMaxSourceKeys) return refuse(line, "more than " + std::to_string(kMaxSourceKeys) + " keys");
        }
    }
    return {};
}

}  // namespace

Result<Manifest> parse_manifest_source(const std::string& source, const std::string& path) {
    SDM_TRY(check_shape(source, path));
    toml::table root;
    try {
        root = toml::parse(source, path);
    } catch (const toml::parse_error& e) {
        return bad(path, e.source(), std::string(e.description()));
    }
    SDM_TRY(only_keys(path, root, {"archive", "kernel"}, "the manifest"));
    Manifest m;
    const toml::table* archive = root["archive"].as_table();
    if (archive == nullptr) return bad(path, root.source(), "the manifest needs an [archive] table with kernel_abi");
    SDM_TRY(only_keys(path, *archive, {"kernel_abi", "content_version", "hardware_matrix"}, "[archive]"));
    SDM_TRY_GET(abi, version_pair(path, archive->get("kernel_abi"), "[archive] kernel_abi"));
    m.kernel_abi_major = abi->first;
    m.kernel_abi_minor = abi->second;
    SDM_TRY_GET(content, text(path, *archive, "content_version", "[archive]", false));
    m.content_version = *content;
    SDM_TRY_GET(matrix, text(path, *archive, "hardware_matrix", "[archive]", false));
    if (!matrix->empty() && *matrix != archive::kSdmHardwareMatrix)
        return bad(path, archive->get("hardware_matrix")->source(),
                   "[archive] hardware_matrix '" + printable(*matrix) + "' is not one sdm knows: the only matrix is \"" +
                       std::string(archive::kSdmHardwareMatrix) + "\" (the SDM kernels'); leave the key out for kernels served on any device");
    m.hardware_matrix = !matrix->empty();

    if (const toml::node* kernels = root.get("kernel")) {
        const toml::array* list = kernels->as_array();
        if (list == nullptr) return bad(path, kernels->source(), "'kernel' must be an array of tables ([[kernel]])");
        for (const toml::node& node : *list) {
            const toml::table* k = node.as_table();
            if (k == nullptr) return bad(path, node.source(), "each [[kernel]] must be a table");
            SDM_TRY(only_keys(path, *k, {"name", "module", "signature", "problem", "plan"}, "[[kernel]]"));
            archive::KernelSpec spec;
            SDM_TRY_GET(name, text(path, *k, "name", "[[kernel]]", true));
            spec.name = *name;
            const std::string what = "kernel " + spec.name;
            SDM_TRY_GET(module, text(path, *k, "module", what, true));
            spec.module = *module;
            SDM_TRY_GET(signature, text(path, *k, "signature", what, true));
            auto parsed = archive::parse_signature(*signature);
            if (!parsed) return bad(path, k->get("signature")->source(), what + ": " + parsed.error().message);
            spec.signature = std::move(*parsed);
            if (const toml::node* problem = k->get("problem")) {
                const toml::array* p = problem->as_array();
                if (p == nullptr) return bad(path, problem->source(), what + ": problem must be an array of names");
                for (const toml::node& n : *p) {
                    if (!n.is_string()) return bad(path, n.source(), what + ": problem parameter names are strings");
                    spec.problem.push_back(n.as_string()->get());
                }
            }
            if (const toml::node* plans = k->get("plan")) {
                const toml::array* p = plans->as_array();
                if (p == nullptr) return bad(path, plans->source(), what + ": 'plan' must be an array of tables ([[kernel.plan]])");
                for (const toml::node& n : *p) {
                    const toml::table* r = n.as_table();
                    if (r == nullptr) return bad(path, n.source(), what + ": each [[kernel.plan]] must be a table");
                    SDM_TRY(only_keys(path, *r, {"class", "capability", "capability_min", "capability_max", "when", "block", "blocks_per_sm", "smem", "grid", "cluster", "pdl"},
                                      "[[kernel.plan]]"));
                    archive::PlanRule rule;
                    const std::string rw = what + " plan rule " + std::to_string(spec.plans.size());
                    const bool ranged = r->get("capability_min") != nullptr || r->get("capability_max") != nullptr;
                    SDM_TRY_GET(cls, text(path, *r, "class", rw, !ranged));
                    rule.device_class = *cls;
                    const std::pair<uint16_t*, const char*> capabilities[] = {
                        {&rule.capability, "capability"}, {&rule.capability_min, "capability_min"}, {&rule.capability_max, "capability_max"}};
                    for (const auto& [field, key] : capabilities) {
                        const toml::node* cap = r->get(key);
                        if (cap == nullptr) continue;
                        SDM_TRY_GET(pair, version_pair(path, cap, rw + " " + key));
                        if (pair->first < 1 || pair->first > 99 || pair->second > 9)
                            return bad(path, cap->source(), rw + ": " + key + " must be \"major.minor\" with a one-digit minor (\"9.0\", \"10.3\")");
                        *field = static_cast<uint16_t>(pair->first * 10 + pair->second);
                    }
                    const std::pair<std::string*, const char*> fields[] = {
                        {&rule.when, "when"}, {&rule.blocks_per_sm, "blocks_per_sm"}, {&rule.smem, "smem"}, {&rule.pdl, "pdl"}};
                    for (const auto& [field, key] : fields) {
                        SDM_TRY_GET(e, expression(path, r->get(key), rw + " " + key, *field));
                        *field = *e;
                    }
                    // block and grid: an expression (x), or an array of 1 to 3 expressions [x, y, z].
                    const std::pair<std::array<std::string*, 3>, const char*> shapes[] = {
                        {{&rule.block, &rule.block_y, &rule.block_z}, "block"}, {{&rule.grid, &rule.grid_y, &rule.grid_z}, "grid"}};
                    for (const auto& [dims, key] : shapes) {
                        const toml::node* node = r->get(key);
                        const toml::array* a = node != nullptr ? node->as_array() : nullptr;
                        if (a == nullptr) {
                            SDM_TRY_GET(e, expression(path, node, rw + " " + key, *dims[0]));
                            *dims[0] = *e;
                            continue;
                        }
                        if (a->empty() || a->size() > 3)
                            return bad(path, node->source(), rw + ": " + key + " must be an expression or an array of 1 to 3 expressions [x, y, z]");
                        for (size_t i = 0; i < a->size(); ++i) {
                            SDM_TRY_GET(e, expression(path, a->get(i), rw + " " + key, "1"));
                            *dims[i] = *e;
                        }
                    }
                    if (rule.block.empty() || rule.grid.empty()) return bad(path, r->source(), rw + " needs block and grid");
                    if (const toml::node* cluster = r->get("cluster")) {
                        const toml::array* c = cluster->as_array();
                        if (c == nullptr || c->size() != 3) return bad(path, cluster->source(), rw + ": cluster must be an array of 3 expressions");
                        for (size_t i = 0; i < 3; ++i) {
                            SDM_TRY_GET(e, expression(path, c->get(i), rw + " cluster", "1"));
                            rule.cluster[i] = *e;
                        }
                    }
                    spec.plans.push_back(std::move(rule));
                }
            }
            m.kernels.push_back(std::move(spec));
        }
    }
    auto valid = archive::validate_manifest(m);
    if (!valid) return make_error(ErrorCode::invalid_argument, path + ": " + valid.error().message);
    std::sort(m.kernels.begin(), m.kernels.end(), [](const auto& a, const auto& b) { return std::tie(a.name, a.module) < std::tie(b.name, b.module); });
    return m;
}

std::string format_manifest_source(const Manifest& m) {
    std::ostringstream out;
    toml::table archive{{"kernel_abi", std::to_string(m.kernel_abi_major) + "." + std::to_string(m.kernel_abi_minor)},
                        {"content_version", m.content_version}};
    if (m.hardware_matrix) archive.insert("hardware_matrix", archive::kSdmHardwareMatrix);
    toml::array kernels;
    for (const auto& k : m.kernels) {
        toml::array problem;
        for (const auto& p : k.problem) problem.push_back(p);
        toml::array plans;
        for (const auto& r : k.plans) {
            toml::table rule{{"when", r.when}, {"blocks_per_sm", r.blocks_per_sm},
                             {"smem", r.smem}, {"cluster", toml::array{r.cluster[0], r.cluster[1], r.cluster[2]}},
                             {"pdl", r.pdl}};
            if (r.block_y == "1" && r.block_z == "1") rule.insert("block", r.block);
            else rule.insert("block", toml::array{r.block, r.block_y, r.block_z});
            if (r.grid_y == "1" && r.grid_z == "1") rule.insert("grid", r.grid);
            else rule.insert("grid", toml::array{r.grid, r.grid_y, r.grid_z});
            if (!r.device_class.empty()) rule.insert("class", r.device_class);
            if (r.capability != 0) rule.insert("capability", archive::sm_capability(r.capability));
            if (r.capability_min != 0) rule.insert("capability_min", archive::sm_capability(r.capability_min));
            if (r.capability_max != 0) rule.insert("capability_max", archive::sm_capability(r.capability_max));
            plans.push_back(std::move(rule));
        }
        toml::table kernel{{"name", k.name}, {"module", k.module}, {"signature", archive::signature_text(k.signature)},
                           {"problem", std::move(problem)}};
        if (!plans.empty()) kernel.insert("plan", std::move(plans));
        kernels.push_back(std::move(kernel));
    }
    toml::table root{{"archive", std::move(archive)}};
    if (!kernels.empty()) root.insert("kernel", std::move(kernels));
    out << root << "\n";
    return out.str();
}

}  // namespace sdm::tools
