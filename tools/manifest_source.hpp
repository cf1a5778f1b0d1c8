// The manifest's human-readable source: TOML in, TOML out (docs/FORMAT.md, "Manifest source").
#pragma once

#include <string>

#include "archive/manifest.hpp"
#include "common/result.hpp"

namespace sdm::tools {

Result<archive::Manifest> parse_manifest_source(const std::string& text, const std::string& path);
std::string format_manifest_source(const archive::Manifest& manifest);

}  // namespace sdm::tools
