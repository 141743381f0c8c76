#include "workloads/mask_input_file.hpp"

#include <fstream>
#include <iterator>
#include <sstream>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

nlohmann::json read_mask_json_file(const std::string& path, const std::string& expected_sha256) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {"cannot open the file"});
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw InputError(path, {"cannot read the file"});
  if (size_t(size) > kMaxMaskFileBytes) {
    throw InputError(path, {"the file has " + std::to_string(size) + " bytes, over the limit of " +
                            std::to_string(kMaxMaskFileBytes) + " for mask files"});
  }
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(&text[0], size)) throw InputError(path, {"cannot read the file"});

  if (!expected_sha256.empty()) {
    const std::string actual = sha256_hex(text);
    if (actual != expected_sha256) {
      throw InputError(path, {"the file changed since the workload was read (sha256 " + actual +
                              ", expected " + expected_sha256 + ")"});
    }
  }

  StrictJsonLimits limits;
  limits.max_bytes = kMaxMaskFileBytes;
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
  std::vector<std::string> problems = recorded_;
  if (omitted_ > 0) {
    problems.push_back("... and " + std::to_string(omitted_) + " more problems");
  }
  throw InputError(source, problems);
}

}  // namespace attn
