// Text that came from an archive (names, versions, the writer's name, manifest expressions) is
// printed through printable(): a hostile archive cannot move a terminal's cursor, forge log lines
// or hide bytes in what the tools and the runtime's messages show.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdm {

// `text` with every byte outside printable ASCII (0x20..0x7E) and every backslash written as a
// C escape (\n, \t, \\, \xHH). Printable text comes back unchanged.
std::string printable(std::string_view text);

// Whether `text` holds only printable ASCII (0x20..0x7E).
bool is_printable(std::string_view text) noexcept;

// Lower-case hex of `bytes`, and back: exactly `size` bytes' worth of hex digits (either case),
// nothing else, or nullopt.
std::string hex_text(std::span<const uint8_t> bytes);
std::optional<std::vector<uint8_t>> parse_hex(std::string_view text, size_t size);

}  // namespace sdm
