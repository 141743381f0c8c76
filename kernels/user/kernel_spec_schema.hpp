// The JSON Schema of kernel spec files (kernels/user/schema/kernel_spec.schema.json, compiled into
// the binary): what `attn-bench kernel schema` prints, for editors and other tools that check a
// spec before attn-bench reads it. The parser (user_kernel_spec.hpp) stays the authority: it
// checks everything the schema does and also what a schema cannot say (the source files, the
// names and syntax of expressions, their values over every combination of axis values);
// docs/user-kernels.md lists those rules.
#pragma once

#include <string_view>

namespace attn {

// The schema's text, as committed.
std::string_view kernel_spec_schema_text();

}  // namespace attn
