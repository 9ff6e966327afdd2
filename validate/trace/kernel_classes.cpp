#include "validate/trace/kernel_classes.hpp"

#include <fmt/format.h>

#include "models/input/catalogue.hpp"

namespace plumb {

KernelClassifier KernelClassifier::bundled() { return from_file((data_dir() / "hw_profiles/kernel_classes.json").string()); }

KernelClassifier KernelClassifier::from_file(const std::string& path) {
  Diagnostics d;
  SourceFile src{path, {}, &d, {}};
  Json doc = load_json_file(path, src);
  d.throw_if_any();
  KernelClassifier c;
  c.file_ = path;
  ObjectReader r(doc, "", src);
  r.string("about", Need::optional);
  const Json* rules = r.child("rules", Need::required);
  if (rules && (!rules->is_array() || rules->empty())) r.error("rules", "expected a list of {\"class\", \"pattern\", \"kind\", \"plumb_op\", \"source\"}");
  for (std::size_t i = 0; rules && rules->is_array() && i < rules->size(); ++i) {
    ObjectReader rule((*rules)[i], fmt::format("/rules/{}", i), src);
    const std::string name = rule.string("class", Need::required).value_or("");
    const std::string pattern = rule.string("pattern", Need::required).value_or("");
    const TimelineRole kind = rule.choice<TimelineRole>("kind", Need::required,
                                                    {{"compute", TimelineRole::compute}, {"communication", TimelineRole::communication}, {"copy", TimelineRole::copy}})
                                .value_or(TimelineRole::compute);
    const std::string op = rule.choice<std::string>("plumb_op", Need::required,
                                                    {{"gemm", "gemm"}, {"attention", "attention"}, {"memory", "memory"}, {"communication", "communication"}})
                               .value_or("memory");
    rule.string("source", Need::required);
    rule.finish();
    std::size_t index = c.classes_.size();
    for (std::size_t k = 0; k < c.classes_.size(); ++k)
      if (c.classes_[k].name == name) index = k;
    if (index == c.classes_.size()) c.classes_.push_back({name, kind, op});
    else if (c.classes_[index].kind != kind || c.classes_[index].plumb_op != op)
      src.error(fmt::format("/rules/{}/kind", i), fmt::format("class \"{}\" has another kind or plumb_op in an earlier rule", name));
    try {
      c.rules_.push_back({std::regex(pattern, std::regex::ECMAScript | std::regex::optimize), index});
    } catch (const std::regex_error& e) {
      src.error(fmt::format("/rules/{}/pattern", i), fmt::format("not a regular expression: {}", e.what()));
    }
  }
  r.finish();
  d.throw_if_any();
  return c;
}

std::optional<std::size_t> KernelClassifier::classify(const std::string& kernel_name) {
  if (auto it = seen_.find(kernel_name); it != seen_.end()) return it->second;
  std::optional<std::size_t> found;
  for (const Rule& rule : rules_)
    if (std::regex_search(kernel_name, rule.pattern)) {
      found = rule.class_index;
      break;
    }
  seen_.emplace(kernel_name, found);
  return found;
}

}  // namespace plumb
