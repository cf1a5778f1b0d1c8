#include "kernel_handle.hpp"

#include <algorithm>

#include "archive/manifest.hpp"

namespace sdm::runtime {

namespace {

// A type of a signature derived from an image (b8..b64, opaque): any parameter of its size and
// alignment.
bool untyped(const archive::ParamType& t) {
    using archive::ParamKind;
    return t.kind == ParamKind::b8 || t.kind == ParamKind::b16 || t.kind == ParamKind::b32 || t.kind == ParamKind::b64 || t.kind == ParamKind::opaque;
}

}  // namespace

Result<void> check_signature(const std::string& kernel, const std::string& archive, const std::string& signature, std::string_view expected) {
    auto parsed = archive::parse_signature(expected);
    if (!parsed)
        return make_error(ErrorCode::invalid_argument, "the signature expected for kernel " + kernel + " ('" + std::string(expected) +
                                                           "') does not parse: " + parsed.error().message);
    const std::string want = archive::signature_text(*parsed);
    if (want == signature) return {};
    auto declared = archive::parse_signature(signature);
    if (!declared) return make_error(ErrorCode::internal, "kernel " + kernel + " of archive " + archive + ": its signature (" + signature + ") does not parse");
    const auto& have = *declared;
    const auto& host = *parsed;
    const bool derived = std::any_of(have.begin(), have.end(), untyped);
    const std::string advice = derived ? " (the archive's signature was derived from the image, as `sdm import` does: b32 is any 4-byte parameter, b64 any "
                                         "8-byte one such as a pointer; docs/FORMAT.md, \"Derived signatures\"). Correct the host's signature"
                                       : ". Use an archive built for this host, or rebuild the host against this archive's kernels";
    if (have.size() != host.size())
        return make_error(ErrorCode::mismatch, "kernel " + kernel + " of archive " + archive + " takes " + std::to_string(have.size()) + " parameter(s) (" +
                                                   signature + "), but the host was built for " + std::to_string(host.size()) + " (" + want + ")" + advice);
    const auto have_at = archive::param_offsets(have), host_at = archive::param_offsets(host);
    for (size_t i = 0; i < have.size(); ++i) {
        const bool same = have[i].kind == host[i].kind && have[i].size == host[i].size && have[i].align == host[i].align;
        const bool agrees = (untyped(have[i]) || untyped(host[i])) && have[i].size == host[i].size && have[i].align == host[i].align && have_at[i] == host_at[i];
        if (same || agrees) continue;
        return make_error(ErrorCode::mismatch, "kernel " + kernel + " of archive " + archive + ": parameter " + std::to_string(i) + " is " +
                                                   archive::param_type_name(have[i]) + " (" + std::to_string(have[i].size) + " bytes at offset " +
                                                   std::to_string(have_at[i]) + ") in the archive's signature (" + signature + "), but the host passes " +
                                                   archive::param_type_name(host[i]) + " (" + std::to_string(host[i].size) + " bytes at offset " +
                                                   std::to_string(host_at[i]) + ") in (" + want + ")" + advice);
    }
    return {};  // every parameter agrees in layout
}

}  // namespace sdm::runtime
