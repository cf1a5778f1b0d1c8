// The archive embedded in libsdm (kernels/kernels.sdma, assembled in with .incbin when the
// `kernels` feature built it), or nothing in a libsdm built without nvcc.
#pragma once

#include <optional>

#include "bytes.hpp"

namespace sdm::runtime {

std::optional<Bytes> embedded_archive() noexcept;

// The ELF section of libsdm that holds it (capi/embedded.S), for tools that read another libsdm.
inline constexpr const char* kEmbeddedArchiveSection = ".sdm_archive";

}  // namespace sdm::runtime
