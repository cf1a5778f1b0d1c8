#include "image.hpp"

#include "fatbin.hpp"

namespace sdm::archive {

Result<ImageInfo> inspect_ltoir(Bytes b) {
    if (b.size() < 28 || load_u32(b, 0) != 0x7f4e43edu)
        return make_error(ErrorCode::archive_corrupt, "not a valid LTO-IR module: no NVVM IR magic (0x7f4e43ed)");
    ImageInfo info;
    info.kind = Kind::ltoir;
    const uint16_t arch = load_u16(b, 26);
    if (arch % 10 == 0 && arch >= 100 && arch <= 9990) info.sm = static_cast<uint16_t>(arch / 10);
    return info;
}

Result<ImageInfo> inspect_fatbin(Bytes b) {
    // The driver walks the entries by their own sizes and offsets: parse_fatbin checks each.
    SDM_TRY(parse_fatbin(b));
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
