// The reason a refused config gets, from the text a variant's traits keep beside its rules.
// Traits headers are read by the device compiler too, so a rule's text there is a constant with
// {name} placeholders (`rule_text(rule)`); the host fills them with this config's numbers:
//
//   fill_rule("needs {shared_bytes} bytes of shared memory (limit {limit})",
//             {{"shared_bytes", 120000}, {"limit", 232448}})
//   -> "needs 120000 bytes of shared memory (limit 232448)"
#pragma once

#include <string>
#include <vector>

namespace attn {

struct RuleValue {
  RuleValue(std::string name, long long value);
  RuleValue(std::string name, std::string value);
  std::string name, value;
};

// `text` with every {name} replaced by its value. A placeholder without a value is a programming
// error (asserted), so a message never reaches a user with a hole in it.
std::string fill_rule(const char* text, const std::vector<RuleValue>& values);

}  // namespace attn
