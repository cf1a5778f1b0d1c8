// libFuzzer target: the C++ name parsers a lookup runs on text from outside, never the demangler
// (archive/cxx_names.hpp): the base name of a mangled symbol and whether its template arguments
// may hold a pack, the brackets' check, normalisation, the canonical form, the spellings of a
// declaration, its base name and template arguments, and the default-argument comparison. Each must
// end in one pass, whatever the text; the canonical form is bounded and its own canonical form.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "archive/cxx_names.hpp"

namespace {
bool inside(std::string_view part, std::string_view whole) { return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string_view base = sdm::archive::mangled_base_name(text);
    if (!inside(base, text)) __builtin_trap();  // a view into the input
    (void)sdm::archive::mangled_template_pack(text);
    (void)sdm::archive::check_cxx_brackets(text);
    const std::string normalized = sdm::archive::normalize_cxx(text);
    const auto spellings = sdm::archive::cxx_spellings(normalized);
    if (spellings.signatures.size() > sdm::archive::kMaxQualifications || spellings.expressions.size() > sdm::archive::kMaxQualifications ||
        spellings.bases.size() > sdm::archive::kMaxQualifications)
        __builtin_trap();
    (void)sdm::archive::cxx_base_name(normalized);
    const std::string canonical = sdm::archive::canonical_cxx(text);
    if (canonical.size() > 3 * size + 16 || sdm::archive::canonical_cxx(canonical) != canonical) __builtin_trap();
    const auto canonical_spellings = sdm::archive::cxx_spellings(canonical);
    for (const auto name : canonical_spellings.expressions) {
        const std::string_view arguments = sdm::archive::cxx_template_arguments(name);
        if (!inside(arguments, name)) __builtin_trap();
        // A list is a prefix of itself only when it is "<>" (every list answers to "<>").
        if (sdm::archive::template_arguments_prefix(arguments, arguments) && arguments != "<>" && arguments.size() > 2) __builtin_trap();
        (void)sdm::archive::template_arguments_prefix(sdm::archive::cxx_template_arguments(canonical), arguments);
    }
    return 0;
}
