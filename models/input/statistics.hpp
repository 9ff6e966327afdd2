#pragma once
// Summary statistics of measured samples (kernel gaps, launch intervals, fit inputs, errors).
#include <vector>

namespace plumb {

// The middle value; for an even count, the mean of the two middle ones. 0 for no samples.
double median(std::vector<double> values);

}  // namespace plumb
