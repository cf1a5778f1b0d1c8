// Counts said in words that agree with them ("1 cubin", "2 cubins", "1 entry", "3 entries"), for
// every message of the tool that prints a number before a noun.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sdm::tools {

// "N noun" with the noun singular for 1 and plural otherwise (0 included: "0 kernels");
// `plural_form` empty: the singular with an "s".
std::string plural(uint64_t n, std::string_view noun, std::string_view plural_form = {});

// "kernel ABI 1.2", or "no kernel ABI" for 0.0: what the header holds when the archive declares
// none (no manifest, or one written without a manifest source; docs/FORMAT.md, header bytes 80..83).
std::string kernel_abi_text(uint16_t major, uint16_t minor);

}  // namespace sdm::tools
