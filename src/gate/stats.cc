#include "gate/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace spore::gate {

double percentile(std::vector<double> xs, double q) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(xs.begin(), xs.end());
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * (double)(xs.size() - 1);
  const size_t lo = (size_t)std::floor(pos), hi = (size_t)std::ceil(pos);
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - (double)lo);
}

double mean(const std::vector<double>& xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(xs.begin(), xs.end(), 0.0) / (double)xs.size();
}

}  // namespace spore::gate
