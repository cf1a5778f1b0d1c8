// The layering rule (docs/LOADING.md, "Layering"), loading nothing: which mounted archive serves a
// kernel on a device, and with which of its images. The newest mounted archive that lists the
// kernel and holds an image for the device serves it; older archives keep serving what newer ones
// cannot. Within the archive, image_selection.hpp picks the image.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/archives/archive_set.hpp"
#include "runtime/device/device.hpp"
#include "image_selection.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct MountedArchive;

// What serves kernel `name` on device `ordinal`.
struct ServedBy {
    std::shared_ptr<const MountedArchive> archive;
    std::string module;
    Selection selection;                   // the image of `module`, and how it becomes loadable
    std::string device;                    // "device 0 (NVIDIA H200, compute capability 9.0, class modern)"
    std::optional<DeviceClass> device_class;  // nullopt: outside the hardware matrix (served by capability)
    std::vector<std::string> passed_over;  // newer archives listing the kernel without an image for the device, and why
    DriverSwitches switches;               // as read for the selection
};

// The record of `requested` in `archive`: a listed name, or a module-qualified one
// ("MODULE!NAME", archive::split_module). nullptr when the archive does not list it;
// ErrorCode::ambiguous when it lists an unqualified name in several modules (the message names
// them and the qualified spellings): never silently one of them.
Result<const archive::ManifestIndex::Kernel*> listed_kernel(const MountedArchive& archive, std::string_view requested);

// The kernel a name expression recorded at build time names (manifest 1.2): in the newest mounted
// archive recording `requested` (a module-qualified one: in that module), as "MODULE!SYMBOL";
// nullopt when none records it; ErrorCode::ambiguous when that archive records it for several
// modules, naming them.
Result<std::optional<std::string>> recorded_expression(const ArchiveSet& archives, std::string_view requested);

// ErrorCode::not_found when no mounted archive lists the kernel (`name` as listed_kernel takes it);
// the newest listing archive's no_image error when none has an image for the device.
Result<ServedBy> served_by(const ArchiveSet& archives, Devices& devices, int32_t ordinal, const std::string& name);

// "device 0 (NVIDIA H200, compute capability 9.0, class modern)", "... 7.5, unclassified)"
std::string device_text(const DeviceProperties& p, std::optional<DeviceClass> c);

}  // namespace sdm::runtime
