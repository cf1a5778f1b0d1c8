// libFuzzer target: the C++ name parsers a lookup runs on text from outside, never the demangler
// (archive/cxx_names.hpp): the base name of a mangled symbol, the brackets' check, normalisation,
// the spellings of a declaration and its base name. Each must end in one pass, whatever the text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "archive/cxx_names.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string_view base = sdm::archive::mangled_base_name(text);
    if (base.data() < text.data() || base.data() + base.size() > text.data() + text.size()) __builtin_trap();  // a view into the input
    (void)sdm::archive::check_cxx_brackets(text);
    const std::string normalized = sdm::archive::normalize_cxx(text);
    const auto spellings = sdm::archive::cxx_spellings(normalized);
    if (spellings.signatures.size() > sdm::archive::kMaxQualifications || spellings.expressions.size() > sdm::archive::kMaxQualifications ||
        spellings.bases.size() > sdm::archive::kMaxQualifications)
        __builtin_trap();
    (void)sdm::archive::cxx_base_name(normalized);
    return 0;
}
