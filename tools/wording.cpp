#include "wording.hpp"

namespace sdm::tools {

std::string plural(uint64_t n, std::string_view noun, std::string_view plural_form) {
    std::string out = std::to_string(n) + " ";
    if (n == 1) out += noun;
    else if (!plural_form.empty()) out += plural_form;
    else (out += noun) += 's';
    return out;
}

std::string kernel_abi_text(uint16_t major, uint16_t minor) {
    if (major == 0 && minor == 0) return "no kernel ABI";
    return "kernel ABI " + std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace sdm::tools
