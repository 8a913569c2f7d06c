// The body both maths_*.cpp files compile: exp, log and the mixture log-density the
// t-links are made of, over a fixed spread of inputs. flatten inlines every call, so
// the core's inline functions are compiled with this translation unit's flags (a
// shared out-of-line copy would make the comparison compare one code with itself).
#pragma once

#include <cstdint>
#include <vector>

#include "core/gmm.h"
#include "core/portable_math.h"

namespace fp_contract_test {
namespace {

[[gnu::flatten]] std::vector<double> compute_maths() {
  std::vector<double> out;
  for (int i = 0; i < 2000; ++i) {
    const double x = -0.0173 * i - 1e-3 * (i % 7);
    out.push_back(grabcut::portable_exp(x));
    out.push_back(grabcut::portable_log(1e-6 + 0.731 * i + 1e-4 * (i % 11)));
  }
  // Five components with full covariances, as a learnt background mixture has.
  double params[5 * grabcut::kParamsPerComponent] = {};
  for (int k = 0; k < 5; ++k) {
    double* p = params + k * grabcut::kParamsPerComponent;
    p[0] = 0.1 + 0.05 * k;
    for (int j = 0; j < 3; ++j) p[1 + j] = 30.0 + 40.0 * k + 7.0 * j;
    const double a = 90.0 + 31.0 * k, b = 12.5 + 3.0 * k;
    const double cov[9] = {a, b, 0.3 * b, b, a * 1.3, 0.7 * b, 0.3 * b, 0.7 * b, a * 0.8};
    for (int j = 0; j < 9; ++j) p[4 + j] = cov[j];
  }
  grabcut::ComponentEval comps[5];
  for (int k = 0; k < 5; ++k) comps[k] = grabcut::prepare_component(params + k * grabcut::kParamsPerComponent);
  for (int c = 0; c < 4096; ++c) {
    const double c0 = (c * 37) % 256, c1 = (c * 101) % 256, c2 = (c * 13) % 256;
    out.push_back(grabcut::mixture_log_density(comps, 5, c0, c1, c2));
  }
  return out;
}

}  // namespace
}  // namespace fp_contract_test
