// The PTX tokenizer that inspect_ptx (ptx.cpp) and the parameter lists of kernel_params.cpp share.
// Linear in the text; nothing here allocates more than one copy of it.
#pragma once

#include <string>
#include <string_view>

namespace sdm::archive {

// Letters, digits, '_', '$' and '.': the characters of a PTX identifier or directive.
bool is_ident_char(char c);
// The text without its comments (// and /* */), each replaced by a space or a newline, so that
// directives stay whitespace-separated tokens.
std::string strip_comments(std::string_view text);
// The token at or after `at`: a run of identifier characters, or one punctuation character; empty
// at the end. Advances `at` past it.
std::string_view next_token(std::string_view text, size_t& at);

}  // namespace sdm::archive
