// A fetched kernel's handle, as the registry (registry/modules.hpp) keeps it in its module's slot
// (module_slot.hpp) and the code that resolves, checks, launches and copies globals reads it; and
// the check of a host's expected signature against the kernel's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/platform/driver.hpp"
#include "runtime/jit/jit_backend.hpp"
#include "launch.hpp"
#include "runtime/select/layering.hpp"
#include "runtime/load/library.hpp"
#include "archive/format.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

class ModuleSlot;

struct KernelHandle {
    ModuleSlot* slot{nullptr};  // the loaded module this kernel belongs to
    void* owner{nullptr};       // the runtime that fetched it (opaque here: the C ABI reaches it through this)
    std::string name;
    std::string module;
    std::string archive;
    std::string signature;
    int32_t ordinal{0};
    CUfunction function{nullptr};
    archive::Kind image_kind{archive::Kind::cubin};
    uint16_t image_sm{0};
    uint16_t loaded_sm{0};
    ImageSource source{ImageSource::archive_cubin};
    std::unique_ptr<Launcher> launcher;  // plans and launches for this kernel on this device
};

// Kernel `kernel`'s declared signature (of archive `archive`) against what a host expects
// ("ptr, f32,i32": spaces ignored): ErrorCode::mismatch naming both, or an invalid_argument for an
// expectation that does not parse.
Result<void> check_signature(const std::string& kernel, const std::string& archive, const std::string& signature, std::string_view expected);

}  // namespace sdm::runtime
