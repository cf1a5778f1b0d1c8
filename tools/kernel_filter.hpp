// `--kernel PATTERN`, as sdm ls and sdm info read it: a glob (fnmatch(3)) that a kernel passes when
// its symbol or its demangled C++ name matches ('*generate*', '_ZN2ns4fill*', 'ns::fill<float*').
#pragma once

#include <fnmatch.h>

#include <string>

namespace sdm::tools {

// Whether the kernel `name`, whose C++ name is `demangled` (empty: none, or not demangled), passes
// `pattern`; an empty pattern passes every kernel.
inline bool kernel_matches(const std::string& pattern, const std::string& name, const std::string& demangled) {
    const auto glob = [&](const std::string& text) { return !text.empty() && ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0; };
    return pattern.empty() || glob(name) || glob(demangled);
}

}  // namespace sdm::tools
