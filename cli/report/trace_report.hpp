#pragma once
// plumb trace: a profiler trace's GPU time by kernel class, by stream, the overlap of communication with
// compute, and the kernels no class rule knew; as a table or JSON.
#include <string>

#include "models/input/json_reader.hpp"
#include "validate/run/trace_collectives.hpp"
#include "validate/run/trace_compare.hpp"
#include "validate/trace/trace_summary.hpp"

namespace plumb {

// `collectives`: the annotated collectives by group and size (collective_logs_from_trace), listed with
// their fastest and median kernel and bus bandwidth.
std::string trace_text(const TraceSummary& s, std::size_t unknown_rows, const TraceCollectiveLogs& collectives);
Json trace_json(const TraceSummary& s, const TraceCollectiveLogs& collectives);
// plumb compare SCENARIO --trace: predicted against measured per op class and the span, worst first.
std::string trace_comparison_text(const TraceComparison& c);
Json trace_comparison_json(const TraceComparison& c);

}  // namespace plumb
