#include "workloads/mask_input_file.hpp"

#include <optional>
#include <string>

#include "base/bounded_file.hpp"
#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

nlohmann::json read_mask_json_file(const std::string& path, const std::string& expected_sha256) {
  BoundedReadFailure failure;
  const std::optional<std::string> bytes = read_bounded_file(path, kMaxMaskFileBytes, failure);
  if (!bytes) {
    if (failure.kind == BoundedReadFailure::Kind::too_large) {
      throw InputError(path, {"the file has more than " + std::to_string(kMaxMaskFileBytes) +
                              " bytes, over the limit for mask files"});
    }
    throw InputError(path, {describe_failure(failure, kMaxMaskFileBytes)});
  }
  const std::string& text = *bytes;

  if (!expected_sha256.empty()) {
    const std::string actual = sha256_hex(text);
    if (actual != expected_sha256) {
      throw InputError(path, {"the file changed since the workload was read (sha256 " + actual +
                              ", expected " + expected_sha256 + ")"});
    }
  }

  StrictJsonLimits limits;
  limits.max_bytes = kMaxMaskFileBytes;
  // Mask files are grids and index lists: their size limit alone bounds them (no value count).
  limits.max_values = kMaxMaskFileBytes;
  StrictJsonResult parsed = parse_strict_json(text, limits);
  if (!parsed.problems.empty()) throw InputError(path, parsed.problems);
  if (!parsed.value.is_object()) {
    throw InputError(path,
                     {"(top level): expected an object, got " + json_type_name(parsed.value)});
  }
  return std::move(parsed.value);
}

void ProblemList::add(std::string problem) {
  if (recorded_.size() < limit_) {
    recorded_.push_back(std::move(problem));
  } else {
    ++omitted_;
  }
}

void ProblemList::throw_if_any(const std::string& source) const {
  if (recorded_.empty()) return;
  throw InputError(source, recorded_, omitted_);
}

}  // namespace attn
