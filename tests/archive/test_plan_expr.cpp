// Plan expressions: grammar, precedence, functions, checked arithmetic, unknown names.
#include <catch2/catch.hpp>

#include "archive/plan_expr.hpp"

using namespace sdm;
using namespace sdm::archive;

namespace {
const std::vector<std::string> kVars{"B", "K", "D", "sms", "l2_bytes"};

int64_t eval(const std::string& text, std::vector<int64_t> values = {16384, 32, 256, 132, 62914560}) {
    auto e = Expression::parse(text, kVars);
    if (!e) FAIL(e.error().message);
    auto v = e->evaluate(values);
    if (!v) FAIL(v.error().message);
    return *v;
}
std::string parse_error(const std::string& text) {
    auto e = Expression::parse(text, kVars);
    return e ? std::string() : e.error().message;
}
std::string eval_error(const std::string& text, std::vector<int64_t> values = {1, 2, 3, 4, 5}) {
    auto e = Expression::parse(text, kVars);
    REQUIRE(e);
    auto v = e->evaluate(values);
    return v ? std::string() : v.error().message;
}
}  // namespace

TEST_CASE("precedence and associativity", "[plan_expr]") {
    CHECK(eval("1 + 2 * 3") == 7);
    CHECK(eval("(1 + 2) * 3") == 9);
    CHECK(eval("10 - 4 - 3") == 3);
    CHECK(eval("100 / 10 / 5") == 2);
    CHECK(eval("7 % 4") == 3);
    CHECK(eval("-3 + 5") == 2);
    CHECK(eval("!0 + !5") == 1);
    CHECK(eval("1 < 2 && 3 >= 3 || 0") == 1);
    CHECK(eval("0 || 0 && 1") == 0);
    CHECK(eval("D <= 256 ? 128 : 512") == 128);
    CHECK(eval("D > 256 ? 1 : D > 128 ? 2 : 3") == 2);
    CHECK(eval("2 == 2") == 1);
    CHECK(eval("2 != 2") == 0);
}

TEST_CASE("functions and variables", "[plan_expr]") {
    CHECK(eval("min(prev_pow2(D / 3), 256)") == 64);
    CHECK(eval("next_pow2(100)") == 128);
    CHECK(eval("next_pow2(64)") == 64);
    CHECK(eval("log2(1024)") == 10);
    CHECK(eval("ceil_div(B, 100)") == 164);
    CHECK(eval("clamp(K * 100, 64, 1024)") == 1024);
    CHECK(eval("max(sms * 4, 1)") == 528);
    CHECK(eval("B * K * D * 4 > l2_bytes") == 1);
    // Scaling: the same rule gives GB300's tuned constant on 152 SMs.
    CHECK(eval("sms * 4", {1, 1, 1, 152, 135528448}) == 608);
}

TEST_CASE("bad expressions are refused at parse time with the column", "[plan_expr]") {
    CHECK_THAT(parse_error("1 +"), Catch::Contains("ends early"));
    CHECK_THAT(parse_error("foo + 1"), Catch::Contains("unknown name 'foo'") && Catch::Contains("known: B, K, D"));
    CHECK_THAT(parse_error("pow(2, 3)"), Catch::Contains("unknown function 'pow'"));
    CHECK_THAT(parse_error("min(1)"), Catch::Contains("min takes 2 arguments"));
    CHECK_THAT(parse_error("(1 + 2"), Catch::Contains("expected ')'"));
    CHECK_THAT(parse_error("1 ? 2"), Catch::Contains("expected ':'"));
    CHECK_THAT(parse_error("12abc"), Catch::Contains("malformed number"));
    CHECK_THAT(parse_error("99999999999999999999"), Catch::Contains("out of range"));
    CHECK_THAT(parse_error("1 2"), Catch::Contains("column 3"));
    CHECK_THAT(parse_error(std::string(200, '(') + "1" + std::string(200, ')')), Catch::Contains("nested too deeply"));
    CHECK_THAT(parse_error(std::string(2000, '1')), Catch::Contains("longer than 1024"));
    CHECK_THAT(parse_error(""), Catch::Contains("empty"));
}

TEST_CASE("arithmetic errors are errors, not wrapped values", "[plan_expr]") {
    CHECK_THAT(eval_error("B / (K - 2)"), Catch::Contains("division by zero"));
    CHECK_THAT(eval_error("ceil_div(B, 0)"), Catch::Contains("division by zero"));
    CHECK_THAT(eval_error("9223372036854775807 + B"), Catch::Contains("overflow"));
    CHECK_THAT(eval_error("4611686018427387904 * 2"), Catch::Contains("overflow"));
    CHECK_THAT(eval_error("prev_pow2(0)"), Catch::Contains("below 1"));
    CHECK_THAT(eval_error("clamp(1, 5, 2)"), Catch::Contains("clamp bounds"));
    CHECK_THAT(eval_error("1 + (K > 0 ? B / 0 : 1)"), Catch::Contains("division by zero"));
}

TEST_CASE("?:, && and || fail only on the branch they take", "[plan_expr]") {
    CHECK(eval("K > 100 ? B / (K - 32) : 7") == 7);
    CHECK(eval("K == 32 || B / (K - 32) > 1") == 1);
    CHECK(eval("K != 32 && B / (K - 32) > 1") == 0);
    CHECK_THAT(eval_error("K == 2 && prev_pow2(0)"), Catch::Contains("below 1"));
}
