// The archive embedded in libsdm (kernels/kernels.sdma, assembled in with .incbin when the
// `kernels` feature built it), or nothing in a libsdm built without nvcc.
#pragma once

#include <optional>
#include <string_view>

#include "common/bytes.hpp"

namespace sdm::runtime {

std::optional<Bytes> embedded_archive() noexcept;
// The public key the build signed it with: the text of its .pub file (kernels/embedded.pub),
// embedded beside it; nullopt in a build without signing.
std::optional<std::string_view> embedded_archive_key() noexcept;

// The ELF section of libsdm that holds it (capi/embedded.S), for tools that read another libsdm.
inline constexpr const char* kEmbeddedArchiveSection = ".sdm_archive";
inline constexpr const char* kEmbeddedKeySection = ".sdm_archive_key";

}  // namespace sdm::runtime
