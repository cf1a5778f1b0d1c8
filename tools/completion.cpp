// `sdm completion bash|zsh`: shell completion scripts written from the command line's own
// definition (the CLI11 app main.cpp builds), so that they cannot drift from it: every command,
// subcommand and option, with its description for zsh. Installed by Meson (tools/meson.build).
#include "completion.hpp"

#include <string>
#include <vector>

namespace sdm::tools {
namespace {

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
    std::vector<const CLI::App*> out;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(sub);
    return out;
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> out;  // --help and -h among them: the app's own option
    for (const auto* opt : app.get_options()) {
        for (const auto& n : opt->get_lnames()) out.push_back("--" + n);
        for (const auto& n : opt->get_snames()) out.push_back("-" + n);
    }
    return out;
}

std::string joined(const std::vector<std::string>& words) {
    std::string s;
    for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
    return s;
}

// Text inside a zsh single-quoted _arguments spec: quotes, brackets and colons escaped.
std::string zsh_text(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (c == '\'') out += "'\\''";
        else if (c == '[' || c == ']' || c == ':') out += std::string("\\") + c;
        else out += c;
    }
    return out;
}

std::string bash(const CLI::App& app) {
    std::string s = "# bash completion for sdm (written by `sdm completion bash`)\n_sdm() {\n"
                    "  local cur=${COMP_WORDS[COMP_CWORD]} words=\"\"\n"
                    "  case \"${COMP_WORDS[1]}\" in\n";
    std::vector<std::string> names{"help"};
    for (const auto* cmd : commands_of(app)) {
        names.push_back(cmd->get_name());
        const auto subs = commands_of(*cmd);
        s += "    " + cmd->get_name() + ")\n";
        if (subs.empty()) {
            s += "      words=\"" + joined(option_names(*cmd)) + "\" ;;\n";
            continue;
        }
        std::vector<std::string> sub_names;
        for (const auto* sub : subs) sub_names.push_back(sub->get_name());
        s += "      if [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"" + joined(sub_names) + "\" -- \"$cur\")); return; fi\n"
             "      case \"${COMP_WORDS[2]}\" in\n";
        for (const auto* sub : subs) s += "        " + sub->get_name() + ") words=\"" + joined(option_names(*sub)) + "\" ;;\n";
        s += "      esac ;;\n";
    }
    s += "    help) COMPREPLY=($(compgen -W \"" + joined(std::vector<std::string>(names.begin() + 1, names.end())) + "\" -- \"$cur\")); return ;;\n";
    s += "    *)\n      if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W \"" + joined(names) + " --help --version\" -- \"$cur\")); fi\n"
         "      return ;;\n  esac\n"
         "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$words\" -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
         "}\ncomplete -o filenames -F _sdm sdm\n";
    return s;
}

std::string zsh_arguments(const CLI::App& cmd, const std::string& indent) {
    std::string s = indent + "_arguments -s '--help[Print this help message and exit]'";
    for (const auto* opt : cmd.get_options()) {
        if (opt->get_name() == "--help" || opt->get_name() == "-h,--help") continue;
        const std::string what = zsh_text(opt->get_description());
        const bool flag = opt->get_type_size() == 0;
        for (const auto& n : opt->get_lnames()) s += " \\\n" + indent + "  '--" + n + "[" + what + "]" + (flag ? "" : ":value:_files") + "'";
        for (const auto& n : opt->get_snames()) s += " \\\n" + indent + "  '-" + n + "[" + what + "]" + (flag ? "" : ":value:_files") + "'";
    }
    return s + " \\\n" + indent + "  '*:file:_files'\n";
}

std::string zsh(const CLI::App& app) {
    std::string s = "#compdef sdm\n# zsh completion for sdm (written by `sdm completion zsh`)\n_sdm() {\n  local -a commands\n  commands=(\n"
                    "    'help:Print the help of a command'\n";
    for (const auto* cmd : commands_of(app)) s += "    '" + cmd->get_name() + ":" + zsh_text(cmd->get_description()) + "'\n";
    s += "  )\n  if (( CURRENT == 2 )); then _describe 'command' commands; return; fi\n  case $words[2] in\n";
    for (const auto* cmd : commands_of(app)) {
        s += "    " + cmd->get_name() + ")\n";
        const auto subs = commands_of(*cmd);
        if (subs.empty()) {
            s += zsh_arguments(*cmd, "      ") + "      ;;\n";
            continue;
        }
        s += "      if (( CURRENT == 3 )); then _values 'subcommand'";
        for (const auto* sub : subs) s += " '" + sub->get_name() + "[" + zsh_text(sub->get_description()) + "]'";
        s += "; return; fi\n      case $words[3] in\n";
        for (const auto* sub : subs) s += "        " + sub->get_name() + ")\n" + zsh_arguments(*sub, "          ") + "          ;;\n";
        s += "      esac ;;\n";
    }
    return s + "  esac\n}\n_sdm \"$@\"\n";
}

}  // namespace

std::optional<std::string> completion_script(const CLI::App& app, const std::string& shell) {
    if (shell == "bash") return bash(app);
    if (shell == "zsh") return zsh(app);
    return std::nullopt;
}

}  // namespace sdm::tools
