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

// How much of a name (a kernel's, a module's, a name expression) a message shows: the first
// kShownNameBytes of it; a longer one is cut there (names may run to 65,535 bytes).
inline constexpr size_t kShownNameBytes = 256;
// `name` for a message: printable(), and cut after kShownNameBytes with "... (N bytes)".
std::string shown_name(std::string_view name);

// Whether `text` holds only printable ASCII (0x20..0x7E).
bool is_printable(std::string_view text) noexcept;

// Lower-case hex of `bytes`, and back: exactly `size` bytes' worth of hex digits (either case),
// nothing else, or nullopt.
std::string hex_text(std::span<const uint8_t> bytes);
std::optional<std::vector<uint8_t>> parse_hex(std::string_view text, size_t size);

}  // namespace sdm
