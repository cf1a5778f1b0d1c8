#include "image.hpp"

namespace sdm::archive {
namespace {

// An nvcc fatbinary: a 16-byte header (u32 magic, u16 version, u16 header size, u64 size of the
// entries), then entries, each a header (u16 kind, u16 version, u32 header size, u64 payload size,
// then fields that depend on the kind) and its payload.
constexpr uint64_t kFatbinHeader = 16;
constexpr uint32_t kFatbinEntryHeader = 16;

}  // namespace

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
    const auto bad = [](const std::string& why) { return make_error(ErrorCode::archive_corrupt, "not a valid fatbin: " + why); };
    if (b.size() < kFatbinHeader || load_u32(b, 0) != 0xba55ed50u) return bad("no fatbin magic (0xba55ed50)");
    const uint64_t declared = load_u64(b, 8), header = load_u16(b, 6);
    if (header < kFatbinHeader) return bad("header size " + std::to_string(header) + " is below 16");
    const auto total = checked_add(declared, header);
    if (!total || *total > b.size())
        return bad("declares " + std::to_string(declared) + " bytes of entries but holds " + std::to_string(b.size()));
    // The driver walks the entries by their own sizes: each header and payload must lie inside the
    // region the fatbin header declares, and together they must fill it exactly.
    uint64_t at = header;
    for (size_t n = 0; at < *total; ++n) {
        const std::string which = "entry " + std::to_string(n) + " at offset " + std::to_string(at);
        if (*total - at < kFatbinEntryHeader) return bad(which + ": its header runs past the end");
        const uint32_t entry_header = load_u32(b, at + 4);
        const uint64_t payload = load_u64(b, at + 8);
        if (entry_header < kFatbinEntryHeader || entry_header > *total - at)
            return bad(which + ": header size " + std::to_string(entry_header) + " does not fit");
        if (payload > *total - at - entry_header) return bad(which + ": its payload of " + std::to_string(payload) + " bytes runs past the end");
        at += entry_header + payload;
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
