// --arch values as people write them: 90, 90a, sm_90, sm_90a, compute_90, lto_90.
#include <cctype>

#include "arch_option.hpp"

namespace sdm::tools {

std::optional<archive::Target> parse_arch_option(std::string_view text, archive::Kind bare) {
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
        const char* prefix = bare == archive::Kind::ptx ? "compute_" : bare == archive::Kind::ltoir ? "lto_" : "sm_";
        return archive::parse_target(std::string(prefix) + std::string(text));
    }
    return archive::parse_target(text);
}

}  // namespace sdm::tools
