// How far apart two names are: the edit distance with adjacent transpositions as one edit
// (optimal string alignment: "pakc" is one slip from "pack"), for "did you mean" hints (the tool's
// commands and options, the runtime's kernel names). O(|a| * |b|) time, O(|b|) memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sdm {

size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest `given` within given.size() / 3 + 1 edits (a typo, not another name), or "".
std::string closest(std::string_view given, const std::vector<std::string>& candidates);

}  // namespace sdm
