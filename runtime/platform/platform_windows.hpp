// What platform_windows.cpp and platform_child_windows.cpp share: UTF-8 and UTF-16, and the
// system's message for an error code. Windows only.
#pragma once

#include <string>
#include <string_view>

namespace sdm::runtime::platform {

std::wstring wide(std::string_view text);       // empty when `text` is not valid UTF-8
std::string narrow(std::wstring_view text);
std::string system_message(unsigned long err);  // FormatMessage's text, without its final period

}  // namespace sdm::runtime::platform
