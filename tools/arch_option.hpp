// The --arch option of the commands that take one.
#pragma once

#include <optional>
#include <string_view>

#include "archive/format.hpp"

namespace sdm::tools {

// An --arch value as people write it: a bare SM ("90", "90a": of kind `bare`), or a target name
// ("sm_90", "sm_90a", "compute_90", "lto_90"); nullopt when it is neither.
std::optional<archive::Target> parse_arch_option(std::string_view text, archive::Kind bare);

}  // namespace sdm::tools
