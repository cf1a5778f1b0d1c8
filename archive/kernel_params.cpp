// Kernel signatures derived from cubins (.nv.info.<kernel>, EIATTR_KPARAM_INFO) and PTX (.entry
// parameter lists). The layouts are those CUDA 13.0's ptxas and nvcc write (docs/FORMAT.md,
// "Derived signatures", says how each was verified).
#include "kernel_params.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

#include "elf.hpp"
#include "image.hpp"
#include "ptx_text.hpp"

namespace sdm::archive {
namespace {

using namespace elf;

// .nv.info records: u8 format, u8 attribute, then by format a 2-byte value (EIFMT_NVAL 1,
// EIFMT_BVAL 2, EIFMT_HVAL 3) or a u16 size and that many bytes (EIFMT_SVAL 4).
constexpr uint8_t kEifmtSval = 4;
constexpr size_t kKparamInfoSize = 12;
constexpr uint32_t kKparamSizeShift = 18;  // the size in bytes: bits 18..31 of the u32 at +8

Error corrupt(const std::string& what, const std::string& why) { return make_error(ErrorCode::archive_corrupt, what + ": " + why); }

// Why a derived signature cannot go into a manifest, or empty (manifest.hpp's limits).
std::string unrepresentable(const Signature& signature) {
    if (signature.size() > 64) return std::to_string(signature.size()) + " parameters, more than the 64 a manifest signature may hold";
    for (size_t i = 0; i < signature.size(); ++i) {
        if (signature[i].size > kMaxOpaqueSize)
            return "parameter " + std::to_string(i) + " is " + std::to_string(signature[i].size) + " bytes, more than the " +
                   std::to_string(kMaxOpaqueSize) + " of an opaque type";
        if (signature[i].align > kMaxOpaqueAlign)
            return "parameter " + std::to_string(i) + " is aligned to " + std::to_string(signature[i].align) + " bytes, more than " +
                   std::to_string(kMaxOpaqueAlign);
    }
    return {};
}

uint32_t largest_power_of_two_dividing(uint32_t a, uint32_t b, uint32_t cap) {
    uint32_t align = 1;
    while (align < cap && a % (align * 2) == 0 && b % (align * 2) == 0) align *= 2;
    return align;
}

struct Kparam {
    uint16_t ordinal;
    uint16_t offset;
    uint32_t size;
};

// One kernel's parameters from its .nv.info.<kernel> section (bounds checked by the caller). A
// sound table whose layout no signature expresses (a gap no alignment explains: cuBLASLt's and
// cuDNN's sm_90a kernels have them; a bank without its parameters) comes back with the reason in
// `inexpressible`.
Result<Signature> kparams_of(Bytes info, const std::string& what, std::string& inexpressible) {
    std::vector<Kparam> params;
    std::optional<uint32_t> bank_size;
    for (size_t at = 0; at < info.size();) {
        if (info.size() - at < 4) return corrupt(what, "a record is cut short at byte " + std::to_string(at));
        const uint8_t format = load_u8(info, at), attribute = load_u8(info, at + 1);
        if (format < 1 || format > kEifmtSval) return corrupt(what, "record at byte " + std::to_string(at) + " has unknown format " + std::to_string(format));
        if (format != kEifmtSval) {
            at += 4;
            continue;
        }
        const size_t size = load_u16(info, at + 2);
        if (size > info.size() - at - 4)
            return corrupt(what, "record at byte " + std::to_string(at) + " holds " + std::to_string(size) + " bytes, past the section's " +
                                     std::to_string(info.size()));
        const Bytes value = info.subspan(at + 4, size);
        if (attribute == kEiattrKparamInfo) {
            if (size < kKparamInfoSize) return corrupt(what, "EIATTR_KPARAM_INFO of " + std::to_string(size) + " bytes, not 12");
            params.push_back({load_u16(value, 4), load_u16(value, 6), load_u32(value, 8) >> kKparamSizeShift});
        } else if (attribute == kEiattrParamCbank) {
            if (size < 8) return corrupt(what, "EIATTR_PARAM_CBANK of " + std::to_string(size) + " bytes, not 8");
            bank_size = load_u16(value, 6);
        }
        at += 4 + size;
    }
    // ptxas lists the parameters last first; ordinals must be 0..n-1, each once.
    std::sort(params.begin(), params.end(), [](const Kparam& a, const Kparam& b) { return a.ordinal < b.ordinal; });
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i].ordinal != i)
            return corrupt(what, "the parameter table " + std::string(params[i].ordinal < i ? "repeats ordinal " : "skips to ordinal ") +
                                     std::to_string(params[i].ordinal) + " (a sound table numbers its parameters 0.." +
                                     std::to_string(params.size() - 1) + ")");
    Signature signature;
    uint32_t end = 0;
    for (size_t i = 0; i < params.size(); ++i) {
        const Kparam& p = params[i];
        const std::string where = "parameter " + std::to_string(i);
        if (p.size == 0) return corrupt(what, where + " is 0 bytes");
        if (p.offset < end)
            return corrupt(what, where + " at offset " + std::to_string(p.offset) + " overlaps the one before it (which ends at " +
                                     std::to_string(end) + ")");
        if (bank_size && uint64_t{p.offset} + p.size > *bank_size)
            return corrupt(what, where + " [" + std::to_string(p.offset) + ", +" + std::to_string(p.size) +
                                     ") passes the parameter bank of " + std::to_string(*bank_size) + " bytes");
        // The C layout of the signature so far must put this parameter at its recorded offset:
        // the alignment by the size-and-offset rule does unless a larger one left a gap before it.
        uint32_t align = largest_power_of_two_dividing(p.size, p.offset, 8);
        if ((end + align - 1) / align * align != p.offset) align = largest_power_of_two_dividing(p.size, p.offset, kMaxOpaqueAlign);
        if ((end + align - 1) / align * align != p.offset && inexpressible.empty())
            inexpressible = where + " sits at offset " + std::to_string(p.offset) + ", after a gap (the one before it ends at " +
                            std::to_string(end) + ") that no alignment of it explains: no signature has this layout";
        signature.push_back(derived_param_type(p.size, align));
        end = p.offset + p.size;
    }
    // cuBLASLt's and cuDNN's sm_100f kernels of several KiB of parameters record only the bank.
    if (params.empty() && bank_size && *bank_size > 0)
        inexpressible = "the cubin records a parameter bank of " + std::to_string(*bank_size) +
                        " bytes but not the parameters in it (no EIATTR_KPARAM_INFO): no signature can be derived";
    return signature;
}

// A PTX parameter's size and alignment from its declaration, the tokens after `.param` up to the
// ',' or ')' that ends it: `.u64 p`, `.align 2 .b8 h[2]`, `.u64 .ptr .global .align 16 p` (an
// alignment after .ptr is the pointee's, not the parameter's).
Result<ParamType> ptx_param(std::string_view text, size_t& at, const std::string& what) {
    uint32_t element = 0, align = 0, count = 1;
    bool pointer = false, named = false;
    for (;;) {
        const size_t before = at;
        const std::string_view token = next_token(text, at);
        if (token.empty()) return corrupt(what, "the parameter list does not end");
        if (token == "," || token == ")") {
            at = before;  // the caller reads it
            break;
        }
        if (token == "[") {
            const std::string_view n = next_token(text, at);
            uint64_t value = 0;
            if (!named || std::from_chars(n.data(), n.data() + n.size(), value).ptr != n.data() + n.size() || n.empty() || value == 0 ||
                value > (uint64_t{1} << 20) || next_token(text, at) != "]")
                return corrupt(what, "malformed array parameter");
            count = static_cast<uint32_t>(value);
            continue;
        }
        if (token.front() != '.') {
            if (named || !is_ident_char(token.front())) return corrupt(what, "unexpected '" + std::string(token.substr(0, 32)) + "' in a parameter");
            named = true;
            continue;
        }
        // A directive chain ".ptr.global.align" is one token: take its parts in turn.
        for (size_t start = 0; start < token.size();) {
            const size_t stop = std::min(token.find('.', start + 1), token.size());
            const std::string_view part = token.substr(start, stop - start);
            start = stop;
            if (part == ".align") {
                const std::string_view n = next_token(text, at);
                uint32_t value = 0;
                if (std::from_chars(n.data(), n.data() + n.size(), value).ptr != n.data() + n.size() || n.empty() || value == 0 ||
                    (value & (value - 1)) != 0 || value > 65536)
                    return corrupt(what, "malformed .align '" + std::string(n.substr(0, 32)) + "'");
                if (!pointer) align = value;
            } else if (part == ".ptr") {
                pointer = true;
            } else if (part.size() >= 3 && (part[1] == 'b' || part[1] == 'u' || part[1] == 's' || part[1] == 'f')) {
                const std::string_view bits = part.substr(2);
                const uint32_t size = bits == "8" ? 1 : bits == "16" ? 2 : bits == "32" ? 4 : bits == "64" ? 8 : 0;
                if (size == 0 || (part[1] == 'f' && size == 1)) {
                    if (!pointer) return corrupt(what, "unknown parameter type '" + std::string(part) + "'");
                } else if (!pointer) {
                    if (element != 0) return corrupt(what, "a parameter with two types");
                    element = size;
                }
            }
            // Other parts (.global, .const, .shared, .local after .ptr) name the pointee's space.
        }
    }
    if (element == 0 || !named) return corrupt(what, "a parameter without a type or a name");
    return derived_param_type(element * count, align != 0 ? align : element);
}

}  // namespace

ParamType derived_param_type(uint32_t size, uint32_t align) {
    if (size == align) {
        switch (size) {
        case 1: return ParamType::b8;
        case 2: return ParamType::b16;
        case 4: return ParamType::b32;
        case 8: return ParamType::b64;
        default: break;
        }
    }
    return {ParamKind::opaque, size, align};
}

Result<std::vector<KernelParams>> cubin_kernel_params(Bytes b) {
    // inspect_cubin checked the ELF header, that every table and section lies inside the image,
    // and found the entry points and their sections.
    SDM_TRY_GET(info, inspect_cubin(b));
    const uint64_t shoff = load_u64(b, 40);
    const uint16_t shnum = load_u16(b, 60), shstrndx = load_u16(b, 62);
    const size_t strh = shoff + size_t{shstrndx} * kSectionHeaderSize;
    const uint64_t names_off = load_u64(b, strh + 24), names_size = load_u64(b, strh + 32);
    // Each kernel's .nv.info.<kernel> section links (sh_info) to the kernel's .text section.
    std::unordered_map<uint32_t, uint16_t> info_of_text;
    for (uint16_t s = 1; s < shnum; ++s) {
        const size_t sh = shoff + size_t{s} * kSectionHeaderSize;
        if (load_u32(b, sh + 4) != kShtCudaInfo) continue;
        const uint32_t text = load_u32(b, sh + 44);
        if (text != 0) info_of_text.emplace(text, s);
    }
    std::vector<KernelParams> out;
    for (size_t k = 0; k < info->kernels.size(); ++k) {
        const std::string& name = info->kernels[k];
        const std::string what = "kernel " + name;
        const auto found = info_of_text.find(info->kernel_sections[k]);
        if (found == info_of_text.end())
            return corrupt(what, "no .nv.info section describes its parameters (give its signature in a manifest, or rebuild the cubin)");
        const size_t sh = shoff + size_t{found->second} * kSectionHeaderSize;
        // The section is .nv.info.<kernel>: compared in at most as many bytes as that name has.
        const std::string wanted = ".nv.info." + name;
        const uint32_t name_at = load_u32(b, sh);
        if (name_at >= names_size || names_size - name_at < wanted.size() + 1 ||
            as_text(b.subspan(names_off + name_at, wanted.size())) != wanted || load_u8(b, names_off + name_at + wanted.size()) != 0)
            return corrupt(what, "the .nv.info section linked to its code is not named " + wanted);
        std::string inexpressible;
        SDM_TRY_GET(signature, kparams_of(b.subspan(load_u64(b, sh + 24), load_u64(b, sh + 32)), what + " (" + wanted + ")", inexpressible));
        KernelParams params{name, std::move(*signature), {}};
        params.unrepresentable = inexpressible.empty() ? unrepresentable(params.signature) : inexpressible;
        params.offsets_exact = inexpressible.empty();
        out.push_back(std::move(params));
    }
    return out;
}

Result<std::vector<KernelParams>> ptx_kernel_params(Bytes bytes) {
    SDM_TRY(inspect_ptx(bytes));  // NUL bytes, .version, .target
    const std::string_view raw = as_text(bytes);
    const std::string text = strip_comments(raw.substr(0, raw.find('\0')));
    std::vector<KernelParams> out;
    size_t at = 0;
    for (std::string_view token = next_token(text, at); !token.empty(); token = next_token(text, at)) {
        if (token != ".entry") continue;
        KernelParams kernel;
        kernel.name = next_token(text, at);
        const std::string what = "PTX .entry " + kernel.name.substr(0, 256);
        size_t after = at;
        if (next_token(text, after) == "(") {
            at = after;
            size_t peek = at;
            if (next_token(text, peek) == ")") {
                at = peek;
            } else {
                for (;;) {
                    if (next_token(text, at) != ".param") return corrupt(what, "parameter " + std::to_string(kernel.signature.size()) + " is not a .param");
                    SDM_TRY_GET(type, ptx_param(text, at, what + " parameter " + std::to_string(kernel.signature.size())));
                    kernel.signature.push_back(*type);
                    const std::string_view separator = next_token(text, at);
                    if (separator == ")") break;
                    if (separator != ",") return corrupt(what, "parameters must be separated by ','");
                }
            }
        }
        kernel.unrepresentable = unrepresentable(kernel.signature);
        out.push_back(std::move(kernel));
    }
    std::sort(out.begin(), out.end(), [](const KernelParams& a, const KernelParams& b) { return a.name < b.name; });
    return out;
}

Result<std::vector<KernelParams>> image_kernel_params(Kind kind, Bytes bytes) {
    if (kind == Kind::cubin) return cubin_kernel_params(bytes);
    if (kind == Kind::ptx) return ptx_kernel_params(bytes);
    return std::vector<KernelParams>{};
}

}  // namespace sdm::archive
