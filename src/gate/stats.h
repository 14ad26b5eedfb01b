// Percentiles and means for the gate's latency figures.
#pragma once
#include <vector>

namespace spore::gate {

// The q-th percentile (q in [0, 100]) with linear interpolation between closest ranks, as
// numpy.percentile's default: p50 of {1, 2, 3, 4} is 2.5. NaN for an empty sample.
double percentile(std::vector<double> xs, double q);
double mean(const std::vector<double>& xs);

}  // namespace spore::gate
