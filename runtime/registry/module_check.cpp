#include "module_check.hpp"

#include "runtime/select/plan.hpp"

namespace sdm::runtime {

Result<std::unique_ptr<KernelHandle>> resolve_kernel(const CheckRooms& rooms, Driver& driver, const LoadedCode& code, const ServedBy& served, ModuleSlot& slot,
                                                     int32_t ordinal, ImageSource source, const archive::ManifestIndex::Kernel& listed) {
    const archive::Archive& a = served.archive->archive;
    const Selection& selected = served.selection;
    const auto& entry = a.entries()[selected.image.index];
    SDM_TRY_GET(decoded, served.archive->manifest->spec(listed));
    const archive::KernelSpec& spec = *decoded;
    CUfunction function = nullptr;
    if (code.library != nullptr) {
        SDM_TRY_GET(get_kernel, driver.resolve(EntryPoint::cuLibraryGetKernel));
        CUkernel kernel = nullptr;
        const CUresult rc = reinterpret_cast<decltype(&::cuLibraryGetKernel)>(*get_kernel)(&kernel, code.library, spec.name.c_str());
        if (rc == CUDA_ERROR_NOT_FOUND) return std::unique_ptr<KernelHandle>();
        if (rc != CUDA_SUCCESS) return driver.error(rc, EntryPoint::cuLibraryGetKernel, "resolving kernel " + spec.name);
        SDM_TRY(SDM_DRIVER_CALL(driver, cuKernelGetFunction, "loading kernel " + spec.name + " into the context of " + served.device, &function, kernel));
    } else {
        SDM_TRY_GET(get_function, driver.resolve(EntryPoint::cuModuleGetFunction));
        const CUresult rc = reinterpret_cast<decltype(&::cuModuleGetFunction)>(*get_function)(&function, code.module, spec.name.c_str());
        if (rc == CUDA_ERROR_NOT_FOUND) return std::unique_ptr<KernelHandle>();
        if (rc != CUDA_SUCCESS) return driver.error(rc, EntryPoint::cuModuleGetFunction, "resolving kernel " + spec.name);
    }
    auto h = std::make_unique<KernelHandle>();
    h->slot = &slot;
    h->owner = rooms.owner;
    h->name = spec.name;
    h->module = served.module;
    h->archive = a.label();
    h->signature = archive::signature_text(spec.signature);
    h->ordinal = ordinal;
    h->function = function;
    h->image_kind = entry.kind;
    h->image_sm = entry.sm;
    h->loaded_sm = selected.path == SelectionPath::jit ? selected.target_sm : entry.sm;
    if (selected.path == SelectionPath::fatbin) {  // the image sdm chose inside it (a cubin, or its PTX linked): the driver says which SM
        int binary_version = 0;
        SDM_TRY(SDM_DRIVER_CALL(driver, cuFuncGetAttribute, "reading the SM of kernel " + spec.name + "'s image", &binary_version,
                                CU_FUNC_ATTRIBUTE_BINARY_VERSION, function));
        h->loaded_sm = static_cast<uint16_t>(binary_version);
    }
    h->source = source;
    SDM_TRY_GET(table, PlanTable::compile(spec));  // validated at mount: this parses what decode_manifest accepted
    h->launcher = std::make_unique<Launcher>(rooms.load, rooms.plugins, ordinal, code.context, function, spec.name, served.module, a.label(), spec.signature, std::move(*table), &slot.streams());
    SDM_TRY(rooms.settings.apply(*h));  // what the host set on the kernel's name, before anyone sees the handle
    return h;
}

Result<void> validate_module(const CheckRooms& rooms, Driver& driver, const ServedBy& served, const KernelHandle& any, int32_t ordinal) {
    const archive::Archive& a = served.archive->archive;
    const Selection& selected = served.selection;
    const auto& entry = a.entries()[selected.image.index];
    // The image policy is the SDM hardware matrix's: it rules on the archives that follow it.
    const bool policy = served.archive->follows_matrix() && served.device_class;
    const bool plugins = rooms.plugins.count() > 0;
    if (!policy && !plugins) return {};
    SDM_TRY_GET(props, rooms.load.devices().properties(ordinal));
    const std::string image = a.describe(selected.image.index);
    // A JIT's output is its input's identity "@" its target. Appended, not "@" + target_name(...):
    // GCC 12 -O3 warns a false -Wrestrict on operator+(const char*, string&&) (GCC bug 105651).
    std::string identity = crypto::digest_hex(a.identity(selected.image.index));
    if (selected.path == SelectionPath::jit)
        identity.append("@").append(archive::target_name(archive::Kind::cubin, selected.target_sm, selected.target_variant));
    // The driver says what it compiled from.
    const LoadedImageFacts facts{ordinal,
                                 served.device_class.value_or(DeviceClass::modern),
                                 identity,
                                 image + " (module " + served.module + ")",
                                 served.device,
                                 props->name,
                                 props->capability,
                                 served.switches};
    // The policy's verdicts are memoized; a plugin's are not (it may rule on anything, and a plugin
    // loaded later must see images accepted before it came).
    if (!plugins && rooms.image_policy.accepted(facts)) return {};
    int ptx_version = 0;
    SDM_TRY(SDM_DRIVER_CALL(driver, cuFuncGetAttribute, "reading the PTX version of " + image, &ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, any.function));
    if (policy) SDM_TRY(rooms.image_policy.check(facts, ptx_version));
    if (!plugins) return {};
    const PlanDevice pd = plan_device_of(*props, served.device_class, served.device);
    return rooms.plugins.validate_image({ordinal, pd, static_cast<uint32_t>(entry.kind), entry.sm, ptx_version, served.module, a.label()});
}

}  // namespace sdm::runtime
