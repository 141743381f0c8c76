// Expression: the small integer language of kernel spec files (docs/user-kernels.md): launch
// dimensions and constraints written over tunable axes and batch quantities, evaluated on the host
// without running any of the user's code.
//
//   ceil_div(num_seqs * group, heads_per_cta)      warps * 32 <= 1024 && head_dim % 8 == 0
//
// Values are int64. Operators, loosest first: || then && (both short-circuit), the comparisons
// == != < <= > >= (one per operand pair, giving 1 or 0), + -, * / %, and the unary - and !.
// Functions: min(a, b), max(a, b), ceil_div(a, b). / and % truncate toward zero, as in C.
// Division or modulo by zero and any int64 overflow are errors naming the column where the
// operator stands; so is a name without a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/errors.hpp"

namespace attn {

// A malformed expression, or one that cannot be evaluated with the given names. `column` is the
// 1-based character where the problem is; what() reads "column C: <reason>".
class ExpressionError : public Error {
 public:
  ExpressionError(size_t column, std::string reason);
  size_t column() const noexcept { return column_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  size_t column_;
  std::string reason_;
};

class Expression {
 public:
  static constexpr size_t kMaxChars = 1000;  // longer text is refused
  static constexpr int kMaxDepth = 64;       // nested parentheses, calls and unary operators

  // Parses `text`; throws ExpressionError at the first syntax error.
  static Expression parse(const std::string& text);

  // The value with every name bound in `names`; throws ExpressionError on division or modulo by
  // zero, an overflow, or a name missing from `names` (only when its value is needed: the side of
  // && or || that is not evaluated may name anything).
  int64_t evaluate(const std::map<std::string, int64_t>& names) const;

  const std::string& text() const { return text_; }
  // Every name the expression refers to, with the column of its first use, sorted by name.
  const std::map<std::string, size_t>& names() const { return names_; }

  // The function names the language knows.
  static const std::vector<std::string>& functions();

 private:
  struct Node {
    enum Kind { number, name, unary, binary, call } kind;
    std::string op;  // operator or function name; the name for `name`
    int64_t value = 0;
    size_t column = 0;  // 1-based, of the operator, name, number or function
    std::vector<int> children;
  };
  class Parser;

  int64_t evaluate_node(int index, const std::map<std::string, int64_t>& names) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
  std::map<std::string, size_t> names_;
};

}  // namespace attn
