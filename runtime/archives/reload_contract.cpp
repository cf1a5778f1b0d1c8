#include "reload_contract.hpp"

#include "mounted_archive.hpp"
#include "common/text.hpp"

namespace sdm::runtime {

namespace {

std::string version(uint16_t major, uint16_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

constexpr const char* kHow = ". Ship the change as another archive (or a new kernel name), or restart the host; a host that takes any change "
                             "creates its runtime with SDM_RUNTIME_RELOAD_ANY_CONTRACT";

}  // namespace

Result<void> check_reload_contract(const MountedArchive& old, const MountedArchive& fresh, const std::vector<FetchedKernel>& fetched) {
    const auto& was = old.archive.header();
    const auto& now = fresh.archive.header();
    if (now.kernel_abi_major != was.kernel_abi_major || now.kernel_abi_minor < was.kernel_abi_minor)
        return make_error(ErrorCode::mismatch, "the new version declares kernel ABI " + version(now.kernel_abi_major, now.kernel_abi_minor) +
                                                   ", the version it would replace " + version(was.kernel_abi_major, was.kernel_abi_minor) +
                                                   (now.kernel_abi_major != was.kernel_abi_major ? ": another major breaks the kernels' contract"
                                                                                                 : ": a lower minor may lack what the host uses") +
                                                   kHow);
    if (!fresh.manifest) return {};
    for (const FetchedKernel& k : fetched) {
        // The same kernel: the same module's, else the one kernel of that name (a module renamed).
        const auto* record = fresh.manifest->find(k.name, k.module);
        if (record == nullptr) record = fresh.manifest->find(k.name);
        if (record == nullptr) continue;  // gone: its next fetch is SDM_ERROR_NOT_FOUND, never the wrong bytes
        SDM_TRY_GET(spec, fresh.manifest->spec(*record));
        const std::string signature = archive::signature_text(spec->signature);
        if (signature == k.signature) continue;
        const std::string name = shown_name(k.name);
        return make_error(ErrorCode::mismatch, "kernel " + name + " (module " + printable(k.module) + "), which this host has fetched, takes (" + k.signature +
                                                   ") in the version mounted and (" + signature + ") in the new one: launches with the old arguments "
                                                   "would pass it the wrong bytes" + kHow);
    }
    return {};
}

}  // namespace sdm::runtime
