// Text for the Windows API, for the platform files of archive/ and runtime/ (Windows only): UTF-8,
// sdm's text, to and from UTF-16, the "...W" calls' text; and the system's message for an error code.
#pragma once

#include <string>
#include <string_view>

namespace sdm {

std::wstring wide(std::string_view text);       // empty when `text` is empty or not valid UTF-8
std::string narrow(std::wstring_view text);
std::string system_message(unsigned long err);  // FormatMessage's text, without its final period

}  // namespace sdm
