// The JSON Schema of workload.json (workloads/schema/workload.schema.json, compiled into the
// binary): what `attn-bench workload schema` prints, for editors and other tools that check a
// file before attn-bench reads it. The parser (workload_spec.hpp) stays the authority: it checks
// everything the schema does and also what a schema cannot say (sums over the batch, the
// contents of referenced files, one value against another); docs/workload.md lists those rules.
#pragma once

#include <string_view>

namespace attn {

// The schema's text, as committed.
std::string_view workload_schema_text();

}  // namespace attn
