// Shell completion scripts from the command line's own definition (completion.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace sdm::tools {

// The completion script for `shell` ("bash", "zsh") of `app`; nullopt for another shell.
std::optional<std::string> completion_script(const CLI::App& app, const std::string& shell);

}  // namespace sdm::tools
