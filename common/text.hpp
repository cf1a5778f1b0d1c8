// Text that came from an archive (names, versions, the writer's name, manifest expressions) is
// printed through printable(): a hostile archive cannot move a terminal's cursor, forge log lines
// or hide bytes in what the tools and the runtime's messages show.
#pragma once

#include <string>
#include <string_view>

namespace sdm {

// `text` with every byte outside printable ASCII (0x20..0x7E) and every backslash written as a
// C escape (\n, \t, \\, \xHH). Printable text comes back unchanged.
std::string printable(std::string_view text);

// Whether `text` holds only printable ASCII (0x20..0x7E).
bool is_printable(std::string_view text) noexcept;

}  // namespace sdm
