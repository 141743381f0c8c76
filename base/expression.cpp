#include "base/expression.hpp"

#include <cctype>
#include <limits>
#include <utility>

namespace attn {

ExpressionError::ExpressionError(size_t column, std::string reason)
    : Error(ExitCode::invalid_input, "column " + std::to_string(column) + ": " + reason),
      column_(column),
      reason_(std::move(reason)) {}

const std::vector<std::string>& Expression::functions() {
  static const std::vector<std::string> names = {"ceil_div", "max", "min"};
  return names;
}

// Recursive descent over the grammar in the header, one function per precedence level.
class Expression::Parser {
 public:
  Parser(Expression& out) : out_(out), text_(out.text_) {}

  int parse_all() {
    const int root = parse_or();
    skip_space();
    if (at_ < text_.size() && text_[at_] == '=') fail(at_, "'=' is no operator: compare with '=='");
    if (at_ < text_.size()) fail(at_, "unexpected " + quote_here());
    return root;
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& reason) {
    throw ExpressionError(offset + 1, reason);
  }

  std::string quote_here() const {
    if (at_ >= text_.size()) return "end of expression";
    return "'" + std::string(1, text_[at_]) + "'";
  }

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }

  // Consumes `op` when it comes next (and is not the start of a longer operator).
  bool accept(const char* op) {
    skip_space();
    const std::string token(op);
    if (text_.compare(at_, token.size(), token) != 0) return false;
    const size_t next = at_ + token.size();
    if (token.size() == 1 && (token == "<" || token == ">" || token == "!") &&
        next < text_.size() && text_[next] == '=') {
      return false;
    }
    at_ = next;
    return true;
  }

  int add_node(Node node) {
    out_.nodes_.push_back(std::move(node));
    return int(out_.nodes_.size()) - 1;
  }

  int binary(const std::string& op, size_t column, int left, int right) {
    return add_node(Node{Node::binary, op, 0, column, {left, right}});
  }

  int parse_or() {
    int left = parse_and();
    for (;;) {
      skip_space();
      const size_t column = at_ + 1;
      if (!accept("||")) return left;
      left = binary("||", column, left, parse_and());
    }
  }

  int parse_and() {
    int left = parse_comparison();
    for (;;) {
      skip_space();
      const size_t column = at_ + 1;
      if (!accept("&&")) return left;
      left = binary("&&", column, left, parse_comparison());
    }
  }

  int parse_comparison() {
    const int left = parse_sum();
    skip_space();
    const size_t column = at_ + 1;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (accept(op)) {
        const int node = binary(op, column, left, parse_sum());
        skip_space();
        if (at_ < text_.size() &&
            (text_[at_] == '<' || text_[at_] == '>' || text_.compare(at_, 2, "==") == 0 ||
             text_.compare(at_, 2, "!=") == 0)) {
          fail(at_, "comparisons do not chain: write (a < b) && (b < c)");
        }
        return node;
      }
    }
    return left;
  }

  int parse_sum() {
    int left = parse_product();
    for (;;) {
      skip_space();
      const size_t column = at_ + 1;
      if (accept("+")) {
        left = binary("+", column, left, parse_product());
      } else if (accept("-")) {
        left = binary("-", column, left, parse_product());
      } else {
        return left;
      }
    }
  }

  int parse_product() {
    int left = parse_unary();
    for (;;) {
      skip_space();
      const size_t column = at_ + 1;
      if (accept("*")) {
        left = binary("*", column, left, parse_unary());
      } else if (accept("/")) {
        left = binary("/", column, left, parse_unary());
      } else if (accept("%")) {
        left = binary("%", column, left, parse_unary());
      } else {
        return left;
      }
    }
  }

  struct DepthGuard {
    Parser& parser;
    explicit DepthGuard(Parser& p, size_t offset) : parser(p) {
      if (++parser.depth_ > kMaxDepth) {
        parser.fail(offset, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
      }
    }
    ~DepthGuard() { --parser.depth_; }
  };

  int parse_unary() {
    skip_space();
    DepthGuard guard(*this, at_);
    const size_t column = at_ + 1;
    if (accept("-")) return add_node(Node{Node::unary, "-", 0, column, {parse_unary()}});
    if (accept("!")) return add_node(Node{Node::unary, "!", 0, column, {parse_unary()}});
    return parse_primary();
  }

  int parse_primary() {
    skip_space();
    const size_t start = at_;
    if (at_ >= text_.size()) fail(at_, "expected a number, a name or '(', got end of expression");
    const char c = text_[at_];
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name_or_call();
    if (accept("(")) {
      const int inner = parse_or();
      skip_space();
      if (!accept(")"))
        fail(at_, "expected ')' to close the '(' at column " + std::to_string(start + 1) +
                      ", got " + quote_here());
      return inner;
    }
    fail(at_, "expected a number, a name or '(', got " + quote_here());
  }

  int parse_number() {
    const size_t start = at_;
    int64_t value = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      const int digit = text_[at_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        fail(start, "the number does not fit in a 64-bit integer");
      }
      value = value * 10 + digit;
      ++at_;
    }
    if (at_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[at_])) ||
                               text_[at_] == '_' || text_[at_] == '.')) {
      fail(at_, "numbers are decimal integers: unexpected '" + std::string(1, text_[at_]) + "'");
    }
    return add_node(Node{Node::number, "", value, start + 1, {}});
  }

  int parse_name_or_call() {
    const size_t start = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
      ++at_;
    }
    const std::string name = text_.substr(start, at_ - start);
    skip_space();
    if (at_ < text_.size() && text_[at_] == '(') {
      bool known = false;
      for (const std::string& f : functions()) known = known || f == name;
      if (!known) fail(start, "unknown function '" + name + "' (there are min, max and ceil_div)");
      ++at_;
      const int a = parse_or();
      skip_space();
      if (!accept(","))
        fail(at_, name + "() takes two arguments: expected ',', got " + quote_here());
      const int b = parse_or();
      skip_space();
      if (!accept(")")) {
        fail(at_, name + "() takes two arguments: expected ')', got " + quote_here());
      }
      return add_node(Node{Node::call, name, 0, start + 1, {a, b}});
    }
    out_.names_.emplace(name, start + 1);
    return add_node(Node{Node::name, name, 0, start + 1, {}});
  }

  Expression& out_;
  const std::string& text_;
  size_t at_ = 0;
  int depth_ = 0;
};

Expression Expression::parse(const std::string& text) {
  Expression out;
  out.text_ = text;
  if (text.size() > kMaxChars) {
    throw ExpressionError(kMaxChars + 1,
                          "longer than " + std::to_string(kMaxChars) + " characters");
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t') throw ExpressionError(i + 1, "control character in expression");
    if (c >= 0x80) throw ExpressionError(i + 1, "non-ASCII character in expression");
  }
  Parser parser(out);
  out.root_ = parser.parse_all();
  return out;
}

int64_t Expression::evaluate(const std::map<std::string, int64_t>& names) const {
  ATTN_ASSERT(root_ >= 0, "evaluating an expression that was not parsed");
  return evaluate_node(root_, names);
}

int64_t Expression::evaluate_node(int index, const std::map<std::string, int64_t>& names) const {
  const Node& node = nodes_[size_t(index)];
  auto overflow = [&](const std::string& what) -> int64_t {
    throw ExpressionError(node.column, what + " overflows a 64-bit integer");
  };
  switch (node.kind) {
    case Node::number:
      return node.value;
    case Node::name: {
      const auto found = names.find(node.op);
      if (found == names.end())
        throw ExpressionError(node.column, "unknown name '" + node.op + "'");
      return found->second;
    }
    case Node::unary: {
      const int64_t v = evaluate_node(node.children[0], names);
      if (node.op == "!") return v == 0 ? 1 : 0;
      if (v == std::numeric_limits<int64_t>::min())
        return overflow("negating " + std::to_string(v));
      return -v;
    }
    case Node::binary: {
      const int64_t a = evaluate_node(node.children[0], names);
      if (node.op == "&&") return a != 0 && evaluate_node(node.children[1], names) != 0 ? 1 : 0;
      if (node.op == "||") return a != 0 || evaluate_node(node.children[1], names) != 0 ? 1 : 0;
      const int64_t b = evaluate_node(node.children[1], names);
      int64_t r = 0;
      const std::string shown = std::to_string(a) + " " + node.op + " " + std::to_string(b);
      if (node.op == "+") {
        if (__builtin_add_overflow(a, b, &r)) return overflow(shown);
        return r;
      }
      if (node.op == "-") {
        if (__builtin_sub_overflow(a, b, &r)) return overflow(shown);
        return r;
      }
      if (node.op == "*") {
        if (__builtin_mul_overflow(a, b, &r)) return overflow(shown);
        return r;
      }
      if (node.op == "/" || node.op == "%") {
        if (b == 0) {
          throw ExpressionError(node.column, std::string(node.op == "/" ? "division" : "modulo") +
                                                 " by zero in " + shown);
        }
        if (a == std::numeric_limits<int64_t>::min() && b == -1) return overflow(shown);
        return node.op == "/" ? a / b : a % b;
      }
      if (node.op == "==") return a == b;
      if (node.op == "!=") return a != b;
      if (node.op == "<") return a < b;
      if (node.op == "<=") return a <= b;
      if (node.op == ">") return a > b;
      if (node.op == ">=") return a >= b;
      ATTN_ASSERT(false, "unknown operator " + node.op);
      return 0;
    }
    case Node::call: {
      const int64_t a = evaluate_node(node.children[0], names);
      const int64_t b = evaluate_node(node.children[1], names);
      if (node.op == "min") return a < b ? a : b;
      if (node.op == "max") return a > b ? a : b;
      // ceil_div: the quotient rounded up (toward +infinity).
      const std::string shown = "ceil_div(" + std::to_string(a) + ", " + std::to_string(b) + ")";
      if (b == 0) throw ExpressionError(node.column, "division by zero in " + shown);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return overflow(shown);
      const int64_t q = a / b;
      return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
    }
  }
  ATTN_ASSERT(false, "unknown expression node");
  return 0;
}

}  // namespace attn
