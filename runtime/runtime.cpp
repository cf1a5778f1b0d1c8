#include "runtime.hpp"

#include <string_view>

#include "runtime/platform/embedded_archive.hpp"
#include "runtime/platform/platform.hpp"
#include "runtime/platform/settings.hpp"
#include "runtime/archives/reload_contract.hpp"

namespace sdm::runtime {

Runtime::Runtime(RuntimeOptions options)
    : options_(std::move(options)),
      log_(options_.log_sink, options_.log_level),
      provenance_(options_.signatures, options_.embedded_key ? std::optional<std::string_view>(*options_.embedded_key) : embedded_archive_key(), log_),
      load_(log_, options_.cuda_driver, options_.contexts),
      cache_(log_, options_.cache, provenance_.authenticate_cache()),
      jit_(log_, options_.jit, options_.isolation, options_.nvjitlink),
      readahead_modules_(readahead_modules_from_environment(log_)),
      modules_(std::make_unique<Modules>(RegistryRooms{log_, archives_, load_, jit_, image_rooms(),
                                                       CheckRooms{load_, image_policy_, plugins_, kernel_settings_, this}},
                                         options_.device_memory_budget != 0 ? options_.device_memory_budget : device_memory_budget_from_environment(log_))),
      archives_(log_, provenance_, options_.kernel_abi_major),
      warmups_(new Warmups(*modules_, archives_, load_, log_, warmup_threads_from_environment(log_))) {
    // The embedded archive first (the SDM kernels, when this libsdm was built with nvcc).
    if (options_.mount_embedded) {
        if (const auto bytes = options_.embedded_bytes ? options_.embedded_bytes : embedded_archive()) {
            auto a = archive::Archive::open_memory(*bytes, options_.embedded_label);
            auto mounted = a ? archives_.mount(std::make_shared<MountedArchive>(MountedArchive{std::move(*a), std::nullopt, true, nullptr, {}}))
                             : Result<void>(std::move(a).error());
            if (!mounted) log_.error("the archive embedded in this libsdm does not mount: " + mounted.error().message);
        } else {
            log_.debug("this libsdm was built without an embedded archive (no nvcc, -Dkernels=disabled, or -Dtools=disabled: packing the kernels runs the sdm tool)");
        }
    }
    // Plan-provider plugins of $SDM_PLUGIN_PATH; one that cannot be used is logged and skipped.
    for (const auto& file : settings::paths(settings::Id::plugin_path))
        if (auto loaded = plugins_.load(file); !loaded) log_.warn("skipped plugin " + file + " of SDM_PLUGIN_PATH: " + loaded.error().message);
    // Then the files of $SDM_ARCHIVE_PATH, in order (later ones take precedence). One that cannot
    // be mounted is logged and skipped; the others serve.
    for (const auto& file : settings::paths(settings::Id::archive_path)) {
        if (auto mounted = archives_.mount_file(file); !mounted) {
            const std::string why = "skipped archive " + file + " of SDM_ARCHIVE_PATH: " + mounted.error().message;
            log_.warn(why);
            archives_.skipped(why);
        }
    }
}

Result<void> Runtime::reload(bool changed_only, uint32_t& reloaded) {
    const auto contract = [this](const MountedArchive& old, const MountedArchive& fresh) -> Result<void> {
        if (options_.reload_any_contract) return {};
        return check_reload_contract(old, fresh, modules_->fetched(&old));
    };
    return archives_.reload(changed_only, reloaded, [this](const MountedArchive* old) { modules_->retire(old); }, contract);
}

Result<void> Runtime::unmount(std::string_view label, uint32_t& unmounted) {
    return archives_.unmount(label, unmounted, [this](const MountedArchive* gone) { modules_->retire(gone); });
}

ImageRooms Runtime::image_rooms() noexcept { return ImageRooms{log_, load_, jit_, cache_, readahead_modules_}; }

void Runtime::record_error(const Error& error) {
    log_.debug(error.message);
    last_error_->record(error);
}

}  // namespace sdm::runtime
