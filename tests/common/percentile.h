// The q-quantile (0..1) of a sample by the nearest rank, 0 for an empty sample: the
// median, 90th percentile and slowest case that the benchmarks and models report.
//
// Header-only host code, also compiled by nvcc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace grabcut::testing {

inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace grabcut::testing
