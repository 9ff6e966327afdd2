#include "validate/trace/trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <istream>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <unordered_map>
#include <zlib.h>

#include "models/input/diagnostics.hpp"

namespace plumb {

namespace {

// A read-only stream over a file through zlib: gzip is inflated, anything else passes through.
class GzipBuffer : public std::streambuf {
 public:
  explicit GzipBuffer(const std::string& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_) gzbuffer(file_, 1 << 18);
  }
  ~GzipBuffer() override {
    if (file_) gzclose(file_);
  }
  GzipBuffer(const GzipBuffer&) = delete;
  GzipBuffer& operator=(const GzipBuffer&) = delete;
  bool is_open() const { return file_ != nullptr; }
  bool failed() const { return failed_; }
  std::uint64_t stored_bytes() const { return file_ ? static_cast<std::uint64_t>(gzoffset(file_)) : 0; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = file_ ? gzread(file_, buffer_, sizeof buffer_) : -1;
    if (n < 0) failed_ = true;
    if (n <= 0) return traits_type::eof();
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_ = nullptr;
  bool failed_ = false;
  char buffer_[1 << 16];
};

// An id a trace gives as a JSON number (External id, stream, device, pid, tid), as an integer: -1 where
// it is not a whole number in [0, limit] (a damaged or hostile file), never an out-of-range conversion.
std::int64_t id_of(double v, double limit) {
  return v >= 0 && v <= limit && v == std::floor(v) ? static_cast<std::int64_t>(v) : -1;
}
constexpr double kMaxExternalId = 9007199254740992.0;  // 2^53: every integer below it is exact in a double
constexpr double kMaxStream = 2147483647.0;

// Bytes an element of a c10 ScalarType as PyTorch names it in a collective's "dtype"; 0: not a type
// whose size plumb knows.
int element_bytes_of(const std::string& dtype) {
  if (dtype == "BFloat16" || dtype == "Half" || dtype == "Short" || dtype == "UInt16") return 2;
  if (dtype == "Float" || dtype == "Int" || dtype == "UInt32" || dtype == "ComplexHalf") return 4;
  if (dtype == "Double" || dtype == "Long" || dtype == "UInt64" || dtype == "ComplexFloat") return 8;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype.starts_with("Float8_") || dtype.starts_with("QInt8") ||
      dtype.starts_with("QUInt8"))
    return 1;
  return 0;
}

// "Process Group Ranks" as PyTorch writes it: "[0, 1, 2, 3]", or cut short "[0, 8, 16, ...]" in a large
// group. Sets the lowest and highest rank and the stride where the listed ranks are evenly spaced (a
// list cut short is taken to go on at its stride up to the group's size).
void read_group_ranks(const std::string& text, CollectiveArgs& c) {
  std::vector<double> ranks;
  bool cut = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] >= '0' && text[i] <= '9') {
      double v = 0;
      for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) v = v * 10 + (text[i] - '0');
      ranks.push_back(v);
    } else {
      cut |= text[i] == '.';
      ++i;
    }
  }
  if (ranks.empty() || ranks.size() > static_cast<std::size_t>(c.group_size)) return;
  const double step = ranks.size() > 1 ? ranks[1] - ranks[0] : 0;
  bool even = step > 0;
  for (std::size_t i = 1; i < ranks.size() && even; ++i) even = ranks[i] - ranks[i - 1] == step;
  const double lowest = *std::min_element(ranks.begin(), ranks.end());
  double highest = *std::max_element(ranks.begin(), ranks.end());
  if (cut) {
    if (!even) return;  // cut short and uneven: where the rest lie is unknown
    highest = ranks[0] + step * static_cast<double>(c.group_size - 1);
  } else if (ranks.size() != static_cast<std::size_t>(c.group_size)) {
    return;  // the list disagrees with the group's size
  }
  if (highest > kMaxStream) return;
  c.lowest_rank = static_cast<std::int64_t>(lowest);
  c.highest_rank = static_cast<std::int64_t>(highest);
  c.rank_stride = even ? static_cast<std::int64_t>(step) : 0;
}

// nlohmann's SAX events, keeping only what a GPU event needs. Depth counts open containers; the
// events array is root.traceEvents (or the root array), an event one level inside it, its args two.
class TraceSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit TraceSax(GpuTrace& out) : out_(out) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& v) override {
    if (in_args_ && depth_ == events_depth_ + 3 && key_ == "Input type") input_types_.push_back(v);
    if (in_args_ && depth_ == events_depth_ + 2) {
      if (key_ == "Collective name") collective_ = v;
      else if (key_ == "dtype") dtype_ = v;
      else if (key_ == "Process Group Ranks") group_ranks_ = v;
    }
    if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "name") name_ = v;
      else if (key_ == "ph") ph_ = v;
      else if (key_ == "cat") cat_ = v;
    } else if (in_device_properties_ && depth_ == 3 && key_ == "name" && out_.device_name.empty()) {
      out_.device_name = v;
    }
    return scalar();
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (events_depth_ > 0 && depth_ == events_depth_ + 1) begin_event();
    if (in_event_ && depth_ == events_depth_ + 2 && key_ == "args") in_args_ = true;
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (in_event_ && depth_ == events_depth_ + 2) in_args_ = false;
    if (in_event_ && depth_ == events_depth_ + 1) end_event();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (in_args_ && depth_ == events_depth_ + 4 && key_ == "Input Dims") input_dims_.emplace_back();
    if (depth_ == 1 && !root_seen_) events_depth_ = 1;  // a bare array of events
    if (depth_ == 2 && key_ == "traceEvents") events_depth_ = 2;
    if (depth_ == 2 && key_ == "deviceProperties") in_device_properties_ = true;
    root_seen_ = true;
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_depth_ = -1, events_found_ = true;
    if (depth_ == 2) in_device_properties_ = false;
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_at_ = position;
    error_ = e.what();
    return false;
  }

  bool events_found() const { return events_found_ || events_depth_ > 0; }
  std::size_t error_at() const { return error_at_; }
  const std::string& error() const { return error_; }

 private:
  bool scalar() {
    if (depth_ == 0) root_seen_ = true;
    return true;
  }
  bool number(double v) {
    if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "ts") ts_ = v;
      else if (key_ == "dur") dur_ = v;
      else if (key_ == "tid") tid_ = v;
      else if (key_ == "pid") pid_ = v;
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      if (key_ == "stream") stream_ = v;
      else if (key_ == "device") device_ = v;
      else if (key_ == "External id") external_ = v;
      else if (key_ == "correlation") correlation_ = v;
      else if (key_ == "In msg nelems") in_elements_ = v;
      else if (key_ == "Out msg nelems") out_elements_ = v;
      else if (key_ == "Group size") group_size_ = v;
    } else if (in_args_ && depth_ == events_depth_ + 4 && key_ == "Input Dims" && !input_dims_.empty()) {
      input_dims_.back().push_back(v);
    }
    return scalar();
  }
  void begin_event() {
    in_event_ = true;
    name_.clear(), ph_.clear(), cat_.clear();
    ts_ = dur_ = tid_ = pid_ = stream_ = device_ = external_ = correlation_ = in_elements_ = out_elements_ = group_size_ = -1;
    input_dims_.clear(), input_types_.clear();
    collective_.clear(), dtype_.clear(), group_ranks_.clear();
  }
  // A host call that puts work on a stream: a kernel launch, an asynchronous copy or memset.
  static bool launch_call(const std::string& cat, const std::string& name) {
    const bool host = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "Driver";
    return host && (name.find("Launch") != std::string::npos || name.find("Memcpy") != std::string::npos ||
                    name.find("Memset") != std::string::npos);
  }
  // The annotation of a collective's kernel, where it is whole: sizes whole and at most 2^53 elements, a
  // group of 1 to 2^31 ranks, a dtype of known size.
  void add_collective(std::size_t event) {
    CollectiveArgs c;
    c.event = event;
    c.collective = collective_;
    c.element_bytes = element_bytes_of(dtype_);
    for (double v : {in_elements_, out_elements_})
      if (id_of(v, kMaxExternalId) < 0) return;
    if (id_of(group_size_, kMaxStream) < 1 || c.element_bytes == 0) return;
    c.in_elements = in_elements_, c.out_elements = out_elements_;
    c.group_size = id_of(group_size_, kMaxStream);
    read_group_ranks(group_ranks_, c);
    out_.collectives.push_back(std::move(c));
  }
  static bool gpu_category(const std::string& cat) {
    return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" || cat == "gpu_memset" || cat == "Memset";
  }
  // The shape of a GEMM op from its recorded input dims: which inputs are A and B, by op.
  void add_gemm_shape() {
    std::size_t a = 0;
    bool batched = false;
    if (name_ == "aten::mm" || name_ == "aten::_scaled_mm") a = 0;
    else if (name_ == "aten::addmm") a = 1;
    else if (name_ == "aten::bmm") a = 0, batched = true;
    else if (name_ == "aten::baddbmm") a = 1, batched = true;
    else return;
    const std::size_t rank = batched ? 3 : 2;
    if (input_dims_.size() < a + 2 || input_dims_[a].size() != rank || input_dims_[a + 1].size() != rank) return;
    const std::vector<double>&A = input_dims_[a], &B = input_dims_[a + 1];
    GemmOpShape g;
    g.groups = batched ? A[0] : 1;
    g.m = A[rank - 2], g.k = A[rank - 1], g.n = B[rank - 1];
    // Sizes as a GEMM can have them (whole, positive, at most 2^31 a dimension); anything else is not a
    // shape to fit (a hostile or damaged trace), and the op is left out.
    for (double x : {g.m, g.n, g.k, g.groups, B[rank - 2]})
      if (!(x >= 1 && x <= 2147483648.0) || x != std::floor(x)) return;
    if (B[rank - 2] != g.k) return;
    const std::string type = a < input_types_.size() ? input_types_[a] : "";
    if (type == "c10::BFloat16") g.dtype = GemmInputType::bf16;
    else if (type == "c10::Half") g.dtype = GemmInputType::fp16;
    else if (type.starts_with("c10::Float8_e")) g.dtype = GemmInputType::fp8;
    else if (type == "float") g.dtype = GemmInputType::fp32;
    else return;
    out_.gemm_shapes[id_of(external_, kMaxExternalId)] = g;
  }
  void end_event() {
    in_event_ = false;
    ++out_.events_seen;
    if (cat_ == "cpu_op" && id_of(external_, kMaxExternalId) >= 0 && !input_dims_.empty()) add_gemm_shape();
    if (ph_ == "X" && ts_ >= 0 && launch_call(cat_, name_)) {
      out_.launches.push_back({ts_, id_of(tid_, kMaxExternalId)});
      if (id_of(correlation_, kMaxExternalId) >= 0) launches_.emplace_back(id_of(correlation_, kMaxExternalId), ts_);
    }
    if (ph_ != "X" || !gpu_category(cat_) || ts_ < 0 || dur_ < 0) return;
    auto [it, added] = name_index_.try_emplace(name_, static_cast<std::uint32_t>(out_.names.size()));
    if (added) out_.names.push_back(name_);
    GpuEvent e;
    e.name = it->second;
    e.stream = static_cast<std::int32_t>(id_of(stream_ >= 0 ? stream_ : tid_, kMaxStream));
    e.device = static_cast<std::int32_t>(id_of(device_ >= 0 ? device_ : pid_, kMaxStream));
    e.start_us = ts_;
    e.duration_us = dur_;
    e.external_id = id_of(external_, kMaxExternalId);
    out_.events.push_back(e);
    correlations_.push_back(id_of(correlation_, kMaxExternalId));
    if (!collective_.empty()) add_collective(out_.events.size() - 1);
  }

 public:
  // Each GPU event's launch time from the host call of the same correlation id (the first such call).
  void join_launches() {
    std::stable_sort(launches_.begin(), launches_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < out_.events.size(); ++i) {
      if (correlations_[i] < 0) continue;
      auto it = std::lower_bound(launches_.begin(), launches_.end(), correlations_[i], [](const auto& l, std::int64_t id) { return l.first < id; });
      if (it != launches_.end() && it->first == correlations_[i]) out_.events[i].launch_us = it->second;
    }
    launches_ = {};
    correlations_ = {};
  }

 private:

  GpuTrace& out_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
  int depth_ = 0, events_depth_ = 0;
  bool root_seen_ = false, events_found_ = false, in_event_ = false, in_args_ = false, in_device_properties_ = false;
  std::string key_, name_, ph_, cat_;
  double ts_ = -1, dur_ = -1, tid_ = -1, pid_ = -1, stream_ = -1, device_ = -1, external_ = -1, correlation_ = -1;
  double in_elements_ = -1, out_elements_ = -1, group_size_ = -1;
  std::string collective_, dtype_, group_ranks_;       // a collective kernel's annotation
  std::vector<std::pair<std::int64_t, double>> launches_;  // (correlation, host call start) of every launch call
  std::vector<std::int64_t> correlations_;              // each GPU event's, beside out_.events
  std::vector<std::vector<double>> input_dims_;  // a CPU op's args["Input Dims"]
  std::vector<std::string> input_types_;         // and args["Input type"]
  std::size_t error_at_ = 0;
  std::string error_;
};

}  // namespace

const char* gemm_input_type_name(GemmInputType t) {
  switch (t) {
    case GemmInputType::bf16: return "bf16";
    case GemmInputType::fp16: return "fp16";
    case GemmInputType::fp8: return "fp8";
    case GemmInputType::fp32: return "fp32";
  }
  return "?";
}

GpuTrace read_gpu_trace(const std::string& path) {
  auto fail = [&](const std::string& where, const std::string& message) { throw InputError({Diagnostic{path, where, message}}); };
  GzipBuffer buffer(path);
  if (!buffer.is_open()) fail("", "cannot read the file (does it exist?)");
  std::istream in(&buffer);
  GpuTrace trace;
  trace.file = path;
  TraceSax sax(trace);
  const bool ok = nlohmann::json::sax_parse(in, &sax, nlohmann::json::input_format_t::json, /*strict=*/false);
  if (buffer.failed()) fail("", "cannot read the file (a damaged gzip stream?)");
  if (!ok) fail(fmt::format("byte {}", sax.error_at()), fmt::format("not a profiler trace: malformed JSON ({})", sax.error()));
  if (!sax.events_found()) fail("", "no \"traceEvents\" list: is this a PyTorch profiler (Chrome trace) file?");
  trace.bytes_read = buffer.stored_bytes();
  sax.join_launches();
  return trace;
}

}  // namespace plumb
