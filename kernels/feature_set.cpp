#include "kernels/feature_set.hpp"

#include <algorithm>

namespace attn {

FeatureSet& FeatureSet::with(const std::string& name) {
  declared_[name].flag = true;
  return *this;
}

FeatureSet& FeatureSet::with(const std::string& name, std::initializer_list<const char*> values) {
  return with(name, std::vector<std::string>(values.begin(), values.end()));
}

FeatureSet& FeatureSet::with(const std::string& name, const std::vector<std::string>& values) {
  declared_[name] = Declared{values, {}, false};
  return *this;
}

FeatureSet& FeatureSet::with(const std::string& name, std::initializer_list<int> numbers) {
  Declared declared;
  for (int n : numbers) declared.ranges.emplace_back(n, n);
  declared_[name] = std::move(declared);
  return *this;
}

FeatureSet& FeatureSet::with_numbers(const std::string& name, const std::vector<int64_t>& numbers) {
  Declared declared;
  for (int64_t n : numbers) declared.ranges.emplace_back(n, n);
  declared_[name] = std::move(declared);
  return *this;
}

FeatureSet& FeatureSet::with_range(const std::string& name, int64_t min, int64_t max) {
  declared_[name] = Declared{{}, {{min, max}}, false};
  return *this;
}

FeatureSet& FeatureSet::without(const std::string& name) {
  declared_.erase(name);
  return *this;
}

FeatureSet& FeatureSet::without(const std::string& name, const std::string& value) {
  const auto it = declared_.find(name);
  if (it == declared_.end()) return *this;
  std::vector<std::string>& choices = it->second.choices;
  choices.erase(std::remove(choices.begin(), choices.end(), value), choices.end());
  if (choices.empty() && it->second.ranges.empty() && !it->second.flag) declared_.erase(it);
  return *this;
}

FeatureSet& FeatureSet::note(const std::string& name, std::string text) {
  notes_[{name, ""}] = std::move(text);
  return *this;
}

FeatureSet& FeatureSet::note(const std::string& name, const std::string& value, std::string text) {
  notes_[{name, value}] = std::move(text);
  return *this;
}

std::string FeatureSet::note_for(const FeatureUse& use) const {
  auto it = notes_.find({use.name, use.value});
  if (it == notes_.end()) it = notes_.find({use.name, ""});
  return it == notes_.end() ? "" : it->second;
}

bool FeatureSet::implements(const FeatureUse& use) const {
  const auto it = declared_.find(use.name);
  if (it == declared_.end()) return false;
  const Declared& d = it->second;
  if (use.number) {
    return std::any_of(d.ranges.begin(), d.ranges.end(), [&](const auto& range) {
      return range.first <= *use.number && *use.number <= range.second;
    });
  }
  if (use.value.empty()) return d.flag;
  return std::find(d.choices.begin(), d.choices.end(), use.value) != d.choices.end();
}

std::vector<std::pair<std::string, std::string>> FeatureSet::entries() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, d] : declared_) {
    if (d.flag) out.emplace_back(name, "");
    for (const std::string& value : d.choices) out.emplace_back(name, value);
    for (const auto& [min, max] : d.ranges) {
      out.emplace_back(name, min == max ? std::to_string(min)
                                        : std::to_string(min) + ".." + std::to_string(max));
    }
  }
  return out;
}

Support check_features(const FeatureSet& implemented, const BatchFeatures& used) {
  std::string missing, notes;
  for (const FeatureUse& use : used.uses) {
    if (implemented.implements(use)) continue;
    missing += (missing.empty() ? "" : ", ") + use.description;
    const std::string note = implemented.note_for(use);
    if (!note.empty() && notes.find(note) == std::string::npos) {
      notes += (notes.empty() ? "" : "; ") + note;
    }
  }
  if (missing.empty()) return Support::yes();
  return Support::no("does not implement: " + missing + (notes.empty() ? "" : " (" + notes + ")"));
}

}  // namespace attn
