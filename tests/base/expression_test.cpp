#include "base/expression.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace attn {
namespace {

const std::map<std::string, int64_t> kShape = {{"num_seqs", 7},
                                               {"head_dim", 128},
                                               {"page_size", 16},
                                               {"warps", 4},
                                               {"zero", 0},
                                               {"big", std::numeric_limits<int64_t>::max()},
                                               {"small", std::numeric_limits<int64_t>::min()}};

int64_t value_of(const std::string& text) {
  return Expression::parse(text).evaluate(kShape);
}

// The column and reason of the error `text` gives (parsing or evaluating).
std::string error_of(const std::string& text) {
  try {
    value_of(text);
  } catch (const ExpressionError& e) {
    EXPECT_EQ(e.code(), ExitCode::invalid_input);
    return e.what();
  }
  return "no error";
}

TEST(Expression, ArithmeticFollowsPrecedenceAndParentheses) {
  EXPECT_EQ(value_of("1 + 2 * 3"), 7);
  EXPECT_EQ(value_of("(1 + 2) * 3"), 9);
  EXPECT_EQ(value_of("10 - 4 - 3"), 3);  // left to right
  EXPECT_EQ(value_of("100 / 10 / 5"), 2);
  EXPECT_EQ(value_of("-7 / 2"), -3);  // truncates toward zero, as C does
  EXPECT_EQ(value_of("-7 % 3"), -1);
  EXPECT_EQ(value_of("- -3"), 3);
  EXPECT_EQ(value_of("head_dim * warps + page_size % 5"), 513);
}

TEST(Expression, FunctionsTakeTwoArguments) {
  EXPECT_EQ(value_of("min(head_dim, 64)"), 64);
  EXPECT_EQ(value_of("max(num_seqs, page_size)"), 16);
  EXPECT_EQ(value_of("ceil_div(num_seqs, 2)"), 4);
  EXPECT_EQ(value_of("ceil_div(8, 2)"), 4);
  EXPECT_EQ(value_of("ceil_div(-7, 2)"), -3);  // rounds toward +infinity
  EXPECT_EQ(value_of("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(value_of("min(max(1, 2), ceil_div(9, 4))"), 2);
}

TEST(Expression, ComparisonsAndLogicGiveOneOrZero) {
  EXPECT_EQ(value_of("warps * 32 <= 1024"), 1);
  EXPECT_EQ(value_of("head_dim % 64 == 0 && page_size >= 8"), 1);
  EXPECT_EQ(value_of("head_dim != 128 || warps > 8"), 0);
  EXPECT_EQ(value_of("!(warps < 2)"), 1);
  EXPECT_EQ(value_of("(1 < 2) == 1"), 1);
  EXPECT_EQ(value_of("1 + 1 < 3"), 1);  // comparisons bind looser than arithmetic
}

TEST(Expression, AndOrShortCircuit) {
  // The right side would divide by zero or name an unknown axis: it is not evaluated.
  EXPECT_EQ(value_of("zero != 0 && 10 / zero > 1"), 0);
  EXPECT_EQ(value_of("zero == 0 || undefined_name > 1"), 1);
}

TEST(Expression, DivisionAndModuloByZeroNameTheColumn) {
  EXPECT_EQ(error_of("head_dim / zero"), "column 10: division by zero in 128 / 0");
  EXPECT_EQ(error_of("1 + head_dim % (page_size - 16)"), "column 14: modulo by zero in 128 % 0");
  EXPECT_EQ(error_of("ceil_div(num_seqs, zero)"), "column 1: division by zero in ceil_div(7, 0)");
}

TEST(Expression, OverflowIsAnErrorNotAWrap) {
  EXPECT_EQ(error_of("big + 1"), "column 5: 9223372036854775807 + 1 overflows a 64-bit integer");
  EXPECT_EQ(error_of("small - 1"), "column 7: -9223372036854775808 - 1 overflows a 64-bit integer");
  EXPECT_EQ(error_of("head_dim * big"),
            "column 10: 128 * 9223372036854775807 overflows a 64-bit integer");
  EXPECT_EQ(error_of("-small"),
            "column 1: negating -9223372036854775808 overflows a 64-bit integer");
  EXPECT_EQ(error_of("small / -1"),
            "column 7: -9223372036854775808 / -1 overflows a 64-bit integer");
  EXPECT_EQ(error_of("small % -1"),
            "column 7: -9223372036854775808 % -1 overflows a 64-bit integer");
  EXPECT_EQ(error_of("99999999999999999999"),
            "column 1: the number does not fit in a 64-bit integer");
  EXPECT_EQ(value_of("9223372036854775807"), std::numeric_limits<int64_t>::max());
}

TEST(Expression, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(error_of(""), "column 1: expected a number, a name or '(', got end of expression");
  EXPECT_EQ(error_of("1 +"), "column 4: expected a number, a name or '(', got end of expression");
  EXPECT_EQ(error_of("(1 + 2"),
            "column 7: expected ')' to close the '(' at column 1, got end of expression");
  EXPECT_EQ(error_of("1 2"), "column 3: unexpected '2'");
  EXPECT_EQ(error_of("warps = 4"), "column 7: '=' is no operator: compare with '=='");
  EXPECT_EQ(error_of("1 < 2 < 3"), "column 7: comparisons do not chain: write (a < b) && (b < c)");
  EXPECT_EQ(error_of("pow(2, 3)"),
            "column 1: unknown function 'pow' (there are min, max and ceil_div)");
  EXPECT_EQ(error_of("min(1)"), "column 6: min() takes two arguments: expected ',', got ')'");
  EXPECT_EQ(error_of("max(1, 2, 3)"), "column 9: max() takes two arguments: expected ')', got ','");
  EXPECT_EQ(error_of("1.5 * warps"), "column 2: numbers are decimal integers: unexpected '.'");
  EXPECT_EQ(error_of("warps & 1"), "column 7: unexpected '&'");
  EXPECT_EQ(error_of("warps\n+ 1"), "column 6: control character in expression");
}

TEST(Expression, UnknownNamesAreReportedWhenNeeded) {
  EXPECT_EQ(error_of("warps * wraps"), "column 9: unknown name 'wraps'");
  const Expression e = Expression::parse("ceil_div(num_seqs, warps) + num_seqs");
  ASSERT_EQ(e.names().size(), 2u);
  EXPECT_EQ(e.names().at("num_seqs"), 10u);  // first use
  EXPECT_EQ(e.names().at("warps"), 20u);
}

TEST(Expression, LengthAndNestingAreBounded) {
  EXPECT_EQ(error_of(std::string(1001, '1')), "column 1001: longer than 1000 characters");
  const std::string deep = std::string(70, '(') + "1" + std::string(70, ')');
  EXPECT_EQ(error_of(deep), "column 65: nested more than 64 levels deep");
  const std::string fits = std::string(60, '(') + "1" + std::string(60, ')');
  EXPECT_EQ(value_of(fits), 1);
  std::string chain = "1";
  for (int i = 0; i < 300; ++i) chain += "+1";  // a long chain is a loop, not nesting
  EXPECT_EQ(value_of(chain), 301);
}

}  // namespace
}  // namespace attn
