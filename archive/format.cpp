#include "format.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "common/bytes.hpp"
#include "common/hash.hpp"
#include "common/text.hpp"

namespace sdm::archive {

namespace {

// Each enum's values and their names, once: the names, is_known and parse_kind read these.
template <typename E>
struct Named {
    E value;
    const char* name;
};
constexpr Named<Kind> kKinds[] = {{Kind::cubin, "cubin"},       {Kind::ptx, "ptx"},           {Kind::ltoir, "ltoir"},
                                  {Kind::fatbin, "fatbin"},     {Kind::manifest, "manifest"}, {Kind::dictionary, "dictionary"}};
constexpr Named<Codec> kCodecs[] = {{Codec::stored, "stored"}, {Codec::zstd, "zstd"}, {Codec::zstd_dict, "zstd+dict"}, {Codec::zstd_prefix, "zstd+prefix"}};
constexpr Named<Variant> kVariants[] = {{Variant::base, ""}, {Variant::a, "a"}, {Variant::f, "f"}};

template <typename E, size_t N>
const Named<E>* find(const Named<E> (&table)[N], E value) noexcept {
    for (const auto& n : table)
        if (n.value == value) return &n;
    return nullptr;
}

}  // namespace

const char* kind_name(Kind kind) noexcept {
    const auto* n = find(kKinds, kind);
    return n != nullptr ? n->name : "unknown";
}

const char* codec_name(Codec codec) noexcept {
    const auto* n = find(kCodecs, codec);
    return n != nullptr ? n->name : "unknown";
}

const char* variant_suffix(Variant variant) noexcept {
    const auto* n = find(kVariants, variant);
    return n != nullptr ? n->name : "?";
}

bool is_known(Kind kind) noexcept { return find(kKinds, kind) != nullptr; }
bool is_known(Codec codec) noexcept { return find(kCodecs, codec) != nullptr; }
bool is_known(Variant variant) noexcept { return find(kVariants, variant) != nullptr; }

bool kind_has_arch(Kind kind) noexcept {
    return kind == Kind::cubin || kind == Kind::ptx || kind == Kind::ltoir;
}

std::optional<Kind> parse_kind(std::string_view name) noexcept {
    for (const auto& n : kKinds)
        if (name == n.name) return n.value;
    return std::nullopt;
}

std::string target_name(Kind kind, uint16_t sm, Variant variant) {
    const char* prefix = kind == Kind::cubin ? "sm_" : kind == Kind::ptx ? "compute_" : kind == Kind::ltoir ? "lto_" : nullptr;
    if (prefix == nullptr) return kind_name(kind);
    return std::string(prefix) + std::to_string(sm) + variant_suffix(variant);
}

std::optional<Target> parse_target(std::string_view text) noexcept {
    Target target;
    if (text.starts_with("sm_")) {
        target.kind = Kind::cubin;
        text.remove_prefix(3);
    } else if (text.starts_with("compute_")) {
        target.kind = Kind::ptx;
        text.remove_prefix(8);
    } else if (text.starts_with("lto_")) {
        target.kind = Kind::ltoir;
        text.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    if (!text.empty() && (text.back() == 'a' || text.back() == 'f')) {
        target.variant = text.back() == 'a' ? Variant::a : Variant::f;
        text.remove_suffix(1);
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < 10 || value > 999) return std::nullopt;
    target.sm = static_cast<uint16_t>(value);
    return target;
}

std::string sm_capability(uint16_t sm) {
    return std::to_string(sm / 10) + "." + std::to_string(sm % 10);
}

namespace {

// Which bytes a name may hold, one table look-up per byte: a mount checks every kernel's name
// and module (65,536 of each at the format's limit).
constexpr std::array<bool, 256> kNameByte = [] {
    std::array<bool, 256> allowed{};
    for (int c = '!'; c <= '~'; ++c) allowed[static_cast<size_t>(c)] = kNameForbidden.find(static_cast<char>(c)) == std::string_view::npos;
    return allowed;
}();

}  // namespace

bool valid_name(std::string_view name, size_t max_length) noexcept {
    if (name.empty() || name.size() > max_length || name.front() == '.') return false;
    bool ok = true;
    for (const char c : name) ok &= kNameByte[static_cast<unsigned char>(c)];
    return ok;
}

std::string release_line_problem(std::string_view name) {
    if (name.empty()) return "is empty";
    if (name.size() > header::release_line_size)
        return "is " + std::to_string(name.size()) + " bytes long, more than " + std::to_string(header::release_line_size);
    const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!alnum(name.front())) return "does not start with a lower-case letter or a digit";
    for (const char c : name)
        if (!alnum(c) && c != '.' && c != '_' && c != '-' && c != '/') return "holds a byte other than [a-z0-9._/-]";
    return {};
}

std::string name_problem(std::string_view name, size_t max_length) {
    if (name.empty()) return "is empty";
    if (name.size() > max_length) {
        std::string why = "is " + std::to_string(name.size()) + " bytes long, more than " + std::to_string(max_length);
        if (max_length < limits::max_long_name_length && name.size() <= limits::max_long_name_length) why += " (format 1.1 allows 65535)";
        return why;
    }
    if (name.front() == '.') return "starts with '.'";
    for (const char c : name) {
        if (c == ' ') return "contains a space";
        if (c < ' ' || c > '~') return "contains the byte " + printable(std::string_view(&c, 1)) + ", which is not printable ASCII";
        if (kNameForbidden.find(c) != std::string_view::npos) return std::string("contains '") + c + "'";
    }
    return {};
}

uint64_t header_hash_of(std::span<const std::byte> b, uint32_t header_size) {
    if (header_size == kHeaderSize) return xxh3_64(b.first(header::header_hash));
    ByteVector joined(header::header_hash + (header_size - kHeaderSize));
    std::memcpy(joined.data(), b.data(), header::header_hash);
    std::memcpy(joined.data() + header::header_hash, b.data() + kHeaderSize, header_size - kHeaderSize);
    return xxh3_64(joined);
}

}  // namespace sdm::archive
