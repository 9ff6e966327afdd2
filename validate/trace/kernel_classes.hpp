#pragma once
// GPU kernels sorted into classes by name: the ordered rules of hw_profiles/kernel_classes.json (data,
// so a new kernel family is one line there), the first matching rule winning.
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

enum class TimelineRole { compute, communication, copy };

struct KernelClass {
  std::string name;      // "grouped_gemm", "ep_combine", …
  TimelineRole kind = TimelineRole::compute;
  std::string plumb_op;  // gemm, attention, memory, communication: how plumb prices it
};

class KernelClassifier {
 public:
  // The bundled table (hw_profiles/kernel_classes.json), or another file in its format; InputError
  // names the rule that is wrong (a bad pattern included).
  static KernelClassifier bundled();
  static KernelClassifier from_file(const std::string& path);

  // The class a kernel name falls in; nullopt for a name no rule matches (an unknown kernel). Names
  // are matched once each and remembered: traces repeat a few hundred names millions of times.
  std::optional<std::size_t> classify(const std::string& kernel_name);
  const std::vector<KernelClass>& classes() const { return classes_; }
  const std::string& file() const { return file_; }

 private:
  struct Rule {
    std::regex pattern;
    std::size_t class_index;
  };
  std::string file_;
  std::vector<KernelClass> classes_;
  std::vector<Rule> rules_;
  std::unordered_map<std::string, std::optional<std::size_t>> seen_;
};

}  // namespace plumb
