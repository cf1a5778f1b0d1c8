#include "plan_expr.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace sdm::archive {
namespace {

constexpr size_t kMaxLength = 1024;
constexpr size_t kMaxDepth = 64;

struct FunctionSpec {
    std::string_view name;
    Expression::Op op;
    int arity;
};
constexpr FunctionSpec kFunctions[] = {
    {"min", Expression::Op::min, 2},           {"max", Expression::Op::max, 2},
    {"ceil_div", Expression::Op::ceil_div, 2}, {"prev_pow2", Expression::Op::prev_pow2, 1},
    {"next_pow2", Expression::Op::next_pow2, 1}, {"clamp", Expression::Op::clamp, 3},
    {"log2", Expression::Op::log2, 1},
};

// Recursive descent, emitting postfix. Precedence, lowest first: ?:, ||, &&, comparisons, + -, * / %, unary.
class Parser {
public:
    Parser(std::string_view text, std::span<const std::string> variables) : text_(text), variables_(variables) {}

    Result<std::vector<Expression::Instruction>> run() {
        if (!ternary(0)) return failure();
        skip_space();
        if (at_ < text_.size()) return fail_at("unexpected '" + std::string(1, text_[at_]) + "'");
        return std::move(out_);
    }

private:
    using Op = Expression::Op;

    Error failure() { return error_; }
    Error fail_at(const std::string& why) {
        error_ = make_error(ErrorCode::invalid_argument, "plan expression '" + std::string(text_) + "': " + why + " at column " + std::to_string(at_ + 1));
        return error_;
    }
    bool fail(const std::string& why) {
        fail_at(why);
        return false;
    }
    void skip_space() {
        while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    }
    bool accept(std::string_view token) {
        skip_space();
        if (text_.substr(at_).starts_with(token)) {
            at_ += token.size();
            return true;
        }
        return false;
    }
    void emit(Op op, int64_t value = 0) { out_.push_back({op, value}); }

    bool ternary(size_t depth) {
        if (depth > kMaxDepth) return fail("nested too deeply");
        if (!logical_or(depth)) return false;
        if (accept("?")) {
            if (!ternary(depth + 1)) return false;
            if (!accept(":")) return fail("expected ':'");
            if (!ternary(depth + 1)) return false;
            emit(Op::select);
        }
        return true;
    }
    // A left-associative level: operands of the next level, joined by one of `ops`.
    template <size_t N>
    bool left_associative(size_t d, bool (Parser::*operand)(size_t), const std::pair<std::string_view, Op> (&ops)[N]) {
        if (!(this->*operand)(d)) return false;
        for (;;) {
            const auto* op = std::find_if(std::begin(ops), std::end(ops), [&](const auto& o) { return accept(o.first); });
            if (op == std::end(ops)) return true;
            if (!(this->*operand)(d)) return false;
            emit(op->second);
        }
    }
    bool logical_or(size_t d) {
        static constexpr std::pair<std::string_view, Op> kOps[] = {{"||", Op::lor}};
        return left_associative(d, &Parser::logical_and, kOps);
    }
    bool logical_and(size_t d) {
        static constexpr std::pair<std::string_view, Op> kOps[] = {{"&&", Op::land}};
        return left_associative(d, &Parser::comparison, kOps);
    }
    bool comparison(size_t d) {
        if (!additive(d)) return false;
        static constexpr std::pair<std::string_view, Op> kOps[] = {{"<=", Op::le}, {">=", Op::ge}, {"==", Op::eq},
                                                                   {"!=", Op::ne}, {"<", Op::lt},  {">", Op::gt}};
        for (const auto& [token, op] : kOps)
            if (accept(token)) {
                if (!additive(d)) return false;
                emit(op);
                return true;
            }
        return true;
    }
    bool additive(size_t d) {
        static constexpr std::pair<std::string_view, Op> kOps[] = {{"+", Op::add}, {"-", Op::sub}};
        return left_associative(d, &Parser::multiplicative, kOps);
    }
    bool multiplicative(size_t d) {
        static constexpr std::pair<std::string_view, Op> kOps[] = {{"*", Op::mul}, {"/", Op::div}, {"%", Op::mod}};
        return left_associative(d, &Parser::unary, kOps);
    }
    bool unary(size_t d) {
        if (d > kMaxDepth) return fail("nested too deeply");
        if (accept("-")) {
            if (!unary(d + 1)) return false;
            emit(Op::neg);
            return true;
        }
        if (accept("!")) {
            if (!unary(d + 1)) return false;
            emit(Op::lnot);
            return true;
        }
        return primary(d + 1);
    }
    bool primary(size_t d) {
        skip_space();
        if (at_ >= text_.size()) return fail("expression ends early");
        const char c = text_[at_];
        if (c == '(') {
            ++at_;
            if (!ternary(d + 1)) return false;
            return accept(")") || fail("expected ')'");
        }
        if (std::isdigit(static_cast<unsigned char>(c))) {
            int64_t value = 0;
            const auto [end, ec] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
            if (ec != std::errc{}) return fail("number out of range");
            at_ = static_cast<size_t>(end - text_.data());
            if (at_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
                return fail("malformed number");
            emit(Op::constant, value);
            return true;
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            const size_t start = at_;
            while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
            const std::string_view name = text_.substr(start, at_ - start);
            if (accept("(")) {
                const auto fn = std::find_if(std::begin(kFunctions), std::end(kFunctions), [&](const auto& f) { return f.name == name; });
                if (fn == std::end(kFunctions)) return fail("unknown function '" + std::string(name) + "'");
                for (int arg = 0; arg < fn->arity; ++arg) {
                    if (arg > 0 && !accept(",")) return fail(std::string(name) + " takes " + std::to_string(fn->arity) + " arguments");
                    if (!ternary(d + 1)) return false;
                }
                if (!accept(")")) return fail(std::string(name) + " takes " + std::to_string(fn->arity) + " arguments");
                emit(fn->op);
                return true;
            }
            const auto var = std::find(variables_.begin(), variables_.end(), name);
            if (var == variables_.end()) {
                std::string known;
                for (const auto& v : variables_) known += (known.empty() ? "" : ", ") + v;
                at_ = start;
                return fail("unknown name '" + std::string(name) + "' (known: " + known + ")");
            }
            emit(Op::variable, var - variables_.begin());
            return true;
        }
        return fail("unexpected '" + std::string(1, c) + "'");
    }

    std::string_view text_;
    std::span<const std::string> variables_;
    size_t at_{0};
    std::vector<Expression::Instruction> out_;
    Error error_;
};

// The builtins write their result through the pointer; evaluate them before reading it.
template <typename F>
std::optional<int64_t> checked(F&& op) {
    int64_t out = 0;
    if (op(&out)) return std::nullopt;
    return out;
}

}  // namespace

Result<Expression> Expression::parse(std::string_view text, std::span<const std::string> variables) {
    if (text.empty()) return make_error(ErrorCode::invalid_argument, "empty plan expression");
    if (text.size() > kMaxLength) return make_error(ErrorCode::invalid_argument, "plan expression longer than 1024 characters");
    Parser parser(text, variables);
    SDM_TRY_GET(program, parser.run());
    Expression e;
    e.text_ = std::string(text);
    e.program_ = std::move(*program);
    return e;
}

// An error poisons its value instead of stopping evaluation, so that `c ? a : b`, `&&` and `||`
// fail only when the branch they take failed: `N > 0 ? X / N : 0` is fine for N == 0.
Result<int64_t> Expression::evaluate(std::span<const int64_t> values) const {
    struct Slot {
        int64_t value;
        const char* error;  // non-null: this value could not be computed
    };
    Slot stack[kMaxDepth * 4 + 8];
    size_t top = 0;
    const auto fail = [&](const std::string& why) { return make_error(ErrorCode::invalid_argument, "plan expression '" + text_ + "': " + why); };
    for (const Instruction& in : program_) {
        if (top >= std::size(stack) - 1) return fail("too complex to evaluate");
        if (in.op == Op::constant) {
            stack[top++] = {in.value, nullptr};
            continue;
        }
        if (in.op == Op::variable) {
            if (static_cast<size_t>(in.value) >= values.size()) return fail("a variable has no value");
            stack[top++] = {values[static_cast<size_t>(in.value)], nullptr};
            continue;
        }
        const int arity = in.op == Op::neg || in.op == Op::lnot || in.op == Op::prev_pow2 || in.op == Op::next_pow2 || in.op == Op::log2 ? 1
                          : in.op == Op::select || in.op == Op::clamp                                                                 ? 3
                                                                                                                                      : 2;
        top -= static_cast<size_t>(arity);
        const Slot* arg = &stack[top];
        Slot out{0, nullptr};
        if (in.op == Op::select) {
            out = arg[0].error ? arg[0] : (arg[0].value != 0 ? arg[1] : arg[2]);
        } else if (in.op == Op::land || in.op == Op::lor) {
            const bool decided = !arg[0].error && ((in.op == Op::land) == (arg[0].value == 0));
            if (decided) out = {in.op == Op::lor ? 1 : 0, nullptr};
            else if (arg[0].error) out = arg[0];
            else if (arg[1].error) out = arg[1];
            else out = {arg[1].value != 0, nullptr};
        } else if (const Slot* bad = std::find_if(arg, arg + arity, [](const Slot& a) { return a.error != nullptr; }); bad != arg + arity) {
            out = *bad;
        } else {
            const int64_t a = arg[0].value, b = arity > 1 ? arg[1].value : 0, c = arity > 2 ? arg[2].value : 0;
            std::optional<int64_t> r;
            const char* error = "64-bit overflow";
            switch (in.op) {
            case Op::neg: r = checked([&](int64_t* o) { return __builtin_sub_overflow(int64_t{0}, a, o); }); break;
            case Op::lnot: r = a == 0; break;
            case Op::prev_pow2:
            case Op::next_pow2:
            case Op::log2: {
                if (a < 1) {
                    error = "the argument of a power-of-two function is below 1";
                    break;
                }
                const int log = 63 - __builtin_clzll(static_cast<uint64_t>(a));
                if (in.op == Op::log2) r = log;
                else if (in.op == Op::prev_pow2) r = int64_t{1} << log;
                else if ((a & (a - 1)) == 0) r = a;
                else if (log < 62) r = int64_t{1} << (log + 1);
                break;
            }
            case Op::clamp:
                if (b > c) error = "clamp bounds are reversed (low > high)";
                else r = std::clamp(a, b, c);
                break;
            case Op::add: r = checked([&](int64_t* o) { return __builtin_add_overflow(a, b, o); }); break;
            case Op::sub: r = checked([&](int64_t* o) { return __builtin_sub_overflow(a, b, o); }); break;
            case Op::mul: r = checked([&](int64_t* o) { return __builtin_mul_overflow(a, b, o); }); break;
            case Op::div:
            case Op::mod:
            case Op::ceil_div:
                if (b == 0) error = "division by zero";
                else if (a == INT64_MIN && b == -1) error = "64-bit overflow";
                else if (in.op == Op::div) r = a / b;
                else if (in.op == Op::mod) r = a % b;
                else r = a / b + ((a % b != 0) && ((a < 0) == (b < 0)) ? 1 : 0);
                break;
            case Op::lt: r = a < b; break;
            case Op::le: r = a <= b; break;
            case Op::gt: r = a > b; break;
            case Op::ge: r = a >= b; break;
            case Op::eq: r = a == b; break;
            case Op::ne: r = a != b; break;
            case Op::min: r = std::min(a, b); break;
            case Op::max: r = std::max(a, b); break;
            default: return fail("internal: unknown instruction");
            }
            out = r ? Slot{*r, nullptr} : Slot{0, error};
        }
        stack[top++] = out;
    }
    if (top != 1) return fail("internal: malformed program");
    if (stack[0].error) return fail(stack[0].error);
    return stack[0].value;
}

}  // namespace sdm::archive
