// Whether an image can serve a capability at all, by any of select_image's paths and whatever the
// device's class (image_selection.hpp holds the order and the class rule; image_selection.cpp
// implements both, so the rule is written once). Tools that split an archive by GPU target
// (`sdm push --per-target`) ask it of every image.
#pragma once

#include <cstdint>

#include "archive/format.hpp"
#include "common/hardware_matrix.hpp"

namespace sdm::runtime {

// Whether a virtual arch (PTX, LTO-IR) for (sm, variant) can be linked for capability `cc`: not
// newer than it; `a` exactly that capability, `f` the same family.
bool virtual_fits(uint16_t sm, archive::Variant variant, Capability cc);
// Whether an image of `kind` for (sm, variant) can serve `cc`: a cubin that runs_on it, PTX or
// LTO-IR that virtual_fits it, a fatbin always (sdm chooses inside it). The manifest and a
// dictionary are no image: false.
bool can_serve(archive::Kind kind, uint16_t sm, archive::Variant variant, Capability cc);

}  // namespace sdm::runtime
