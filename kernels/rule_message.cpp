#include "kernels/rule_message.hpp"

#include "base/errors.hpp"

namespace attn {

RuleValue::RuleValue(std::string n, long long v) : name(std::move(n)), value(std::to_string(v)) {}
RuleValue::RuleValue(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}

std::string fill_rule(const char* text, const std::vector<RuleValue>& values) {
  const std::string in = text;
  std::string out;
  size_t at = 0;
  while (at < in.size()) {
    const size_t open = in.find('{', at);
    if (open == std::string::npos) break;
    const size_t close = in.find('}', open);
    ATTN_ASSERT(close != std::string::npos, "unclosed placeholder in rule text: " + in);
    const std::string name = in.substr(open + 1, close - open - 1);
    const RuleValue* found = nullptr;
    for (const RuleValue& v : values) {
      if (v.name == name) found = &v;
    }
    ATTN_ASSERT(found != nullptr, "no value for {" + name + "} in rule text: " + in);
    out += in.substr(at, open - at) + found->value;
    at = close + 1;
  }
  return out + in.substr(at);
}

}  // namespace attn
