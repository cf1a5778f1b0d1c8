// Integer expressions of the manifest's plan tables ("min(prev_pow2(D / 4), 256)", "sms * 2",
// "values_bytes > l2_bytes"). Parsed once when a manifest is decoded (so a bad rule is refused at
// pack time and at mount time, never at launch), evaluated as a small postfix program with
// checked 64-bit arithmetic. Grammar and functions: docs/FORMAT.md, "Plan expressions".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace sdm::archive {

class Expression {
public:
    // `variables` are the names the text may use; evaluate() takes their values in that order.
    static Result<Expression> parse(std::string_view text, std::span<const std::string> variables);

    Result<int64_t> evaluate(std::span<const int64_t> values) const;
    const std::string& text() const noexcept { return text_; }

    enum class Op : uint8_t {
        constant, variable, neg, lnot, add, sub, mul, div, mod, lt, le, gt, ge, eq, ne, land, lor,
        select, min, max, ceil_div, prev_pow2, next_pow2, clamp, log2,
    };
    struct Instruction {
        Op op;
        int64_t value;  // constant, or variable index
    };

private:
    std::string text_;
    std::vector<Instruction> program_;
};

}  // namespace sdm::archive
