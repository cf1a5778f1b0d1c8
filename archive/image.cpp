#include "image.hpp"

#include "fatbin.hpp"

namespace sdm::archive {
namespace {

// The NVVM IR container (what nvcc -dlto, NVRTC -dlto and nvlink write as LTO-IR). Its header, as
// NVIDIA's own readers declare it: u32 magic, four u8 version pairs (container, NVVM IR, NVVM
// debug, LLVM), u16 offset of the option tuples, u16 IR level, u32 offset of the option data,
// u32 offset of the IR; offsets from the container's first byte. The tuples are {u16 key, u16
// value}: key 1 the arch times 10, key 32 the arch-specific variant (value 1). CUDA 11.x-13.0
// write container 1.65, tuples at 24, four bytes of option data and the IR after them; the IR
// itself is an opaque, obfuscated stream whose framing sdm cannot read, which is why a link of
// LTO-IR runs isolated (docs/LOADING.md, "A compiler that crashes").
namespace nvvm {
inline constexpr uint32_t magic = 0x7f4e43edu;
inline constexpr size_t header_size = 24;
inline constexpr size_t options = 12, ir_level = 14, options_data = 16, ir = 20;
inline constexpr uint16_t key_arch = 1, key_arch_specific = 32;
inline constexpr size_t max_tuples = 256;
}  // namespace nvvm

Error bad_ltoir(const std::string& why) { return make_error(ErrorCode::archive_corrupt, "not a valid LTO-IR module: " + why); }

}  // namespace

Result<ImageInfo> inspect_ltoir(Bytes b) {
    if (b.size() < nvvm::header_size || load_u32(b, 0) != nvvm::magic)
        return bad_ltoir("no NVVM IR container header (magic 0x7f4e43ed and 24 bytes)");
    if (load_u8(b, 4) != 1) return bad_ltoir("container version " + std::to_string(load_u8(b, 4)) + "." + std::to_string(load_u8(b, 5)) + ", not 1.x");
    // nvJitLink follows these offsets without a size to check them against: each must lie inside
    // the container, in the order the format lays them out, and leave a non-empty IR.
    const uint64_t options = load_u16(b, nvvm::options), options_data = load_u32(b, nvvm::options_data), ir = load_u32(b, nvvm::ir);
    if (options < nvvm::header_size || options % 4 != 0 || options > options_data || (options_data - options) % 4 != 0 || options_data > ir ||
        ir >= b.size())
        return bad_ltoir("its option tuples at " + std::to_string(options) + ", option data at " + std::to_string(options_data) + " and IR at " +
                         std::to_string(ir) + " do not lie in order inside its " + std::to_string(b.size()) + " bytes");
    if (load_u16(b, nvvm::ir_level) == 0) return bad_ltoir("IR level 0");
    const uint64_t tuples = (options_data - options) / 4;
    if (tuples > nvvm::max_tuples) return bad_ltoir(std::to_string(tuples) + " option tuples (at most " + std::to_string(nvvm::max_tuples) + ")");
    ImageInfo info;
    info.kind = Kind::ltoir;
    for (uint64_t t = 0; t < tuples; ++t) {
        const size_t at = static_cast<size_t>(options + 4 * t);
        const uint16_t key = load_u16(b, at), value = load_u16(b, at + 2);
        if (key == nvvm::key_arch) {
            if (info.sm != 0) return bad_ltoir("names its arch twice");
            if (value % 10 != 0 || value < 100 || value > 9990) return bad_ltoir("arch option " + std::to_string(value) + " is not an SM times 10");
            info.sm = static_cast<uint16_t>(value / 10);
            info.virtual_sm = info.sm;
        } else if (key == nvvm::key_arch_specific && value == 1) {
            info.variant = Variant::a;  // the f variant is not recorded
        }
    }
    if (info.sm == 0) return bad_ltoir("no arch option (key 1)");
    return info;
}

Result<ImageInfo> inspect_fatbin(Bytes b) {
    // The runtime picks one inner image as it picks among bare ones and hands on only that (a cubin
    // to the driver, PTX to its own JIT), so every inner image gets the checks a bare image of its
    // kind gets, decoded first where it is compressed (its declared size checked before anything
    // is allocated); parse_fatbin checks each entry's sizes and offsets. An entry sdm cannot check
    // fails the whole container.
    SDM_TRY_GET(container, parse_fatbin(b));
    for (const FatbinEntry& e : container->entries) {
        const std::string which = "fatbin " + fatbin_entry_label(e) + " at offset " + std::to_string(e.offset);
        if (!e.image_kind)
            return make_error(ErrorCode::archive_corrupt, which + ": entry kind " + std::to_string(e.kind) +
                                                              " is not one sdm can check (1 PTX, 2 cubin, 8 LTO-IR); it is not handed to the driver. "
                                                              "Import the fatbin with sdm import, which keeps the images it can check");
        auto raw = fatbin_entry_payload(e);
        if (!raw)
            return make_error(ErrorCode::archive_corrupt, raw.error().message + (raw.error().code == ErrorCode::unsupported
                                                                                     ? " (an inner image sdm cannot check is not handed to the driver)"
                                                                                     : ""));
        auto inner = check_declared_target(*e.image_kind, e.sm, e.variant, *raw, which);
        if (!inner) return make_error(ErrorCode::archive_corrupt, inner.error().message);
        SDM_TRY(refuse_raw_ltoir(e, which));  // the IR inside is what sdm cannot check
    }
    ImageInfo info;
    info.kind = Kind::fatbin;
    return info;
}

Result<ImageInfo> inspect_image(Kind kind, Bytes bytes) {
    switch (kind) {
    case Kind::cubin: return inspect_cubin(bytes);
    case Kind::ptx: return inspect_ptx(bytes);
    case Kind::ltoir: return inspect_ltoir(bytes);
    case Kind::fatbin: return inspect_fatbin(bytes);
    default: break;
    }
    return make_error(ErrorCode::invalid_argument, std::string("kind ") + kind_name(kind) + " is not an image");
}

Result<ImageInfo> check_declared_target(Kind kind, uint16_t sm, Variant variant, Bytes bytes, const std::string& what) {
    auto info = inspect_image(kind, bytes);
    if (!info) return make_error(info.error().code, what + ": " + info.error().message);
    const std::string declared = target_name(kind, sm, variant);
    if (kind_has_arch(kind) && info->sm != 0 && info->sm != sm) {
        return make_error(ErrorCode::mismatch,
                          what + ": declared " + declared + " but its bytes are for " +
                              target_name(kind, info->sm, info->variant.value_or(Variant::base)) +
                              "; pass the target the image was compiled for");
    }
    if (info->variant && *info->variant != variant) {
        return make_error(ErrorCode::mismatch, what + ": declared " + declared + " but its bytes are for " +
                                                   target_name(kind, info->sm, *info->variant) +
                                                   "; pass the target the image was compiled for");
    }
    return info;
}

}  // namespace sdm::archive
