// exp and log written with + - * / and exact scaling only, so that the CPU and the
// CUDA backend compute bit-identical results (the C library's exp/log and CUDA's
// differ in the last bit now and then, which could flip a rounded capacity and so
// a pixel). Both backends are built without FMA contraction for the same reason.
// Accuracy: a few ulp over the range used here, far below the 1/256 capacity grid.
#pragma once

#include <cmath>

#include "core/common.h"

namespace grabcut {

constexpr double kLn2Hi = 6.93147180369123816490e-01;  // high bits of ln 2, exact in k * kLn2Hi
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi
constexpr double kInvLn2 = 1.44269504088896338700e+00;

// e^x for x <= 0 (the only sign used: densities and n-link weights); 0 below -745.
GRABCUT_HD double portable_exp(double x) {
  if (x < -745.0) return 0.0;
  const double k = rint(x * kInvLn2);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= 0.347
  // Taylor series to degree 14: the first dropped term is below 1e-19.
  double p = 1.0 / 87178291200.0;  // 1/14!
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return ldexp(p, static_cast<int>(k));
}

// Natural log for finite x > 0.
GRABCUT_HD double portable_log(double x) {
  int e = 0;
  double m = frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(f), f = (m - 1) / (m + 1), |f| <= 0.1716.
  const double f = (m - 1.0) / (m + 1.0);
  const double s = f * f;
  double p = 1.0 / 25.0;
  p = p * s + 1.0 / 23.0;
  p = p * s + 1.0 / 21.0;
  p = p * s + 1.0 / 19.0;
  p = p * s + 1.0 / 17.0;
  p = p * s + 1.0 / 15.0;
  p = p * s + 1.0 / 13.0;
  p = p * s + 1.0 / 11.0;
  p = p * s + 1.0 / 9.0;
  p = p * s + 1.0 / 7.0;
  p = p * s + 1.0 / 5.0;
  p = p * s + 1.0 / 3.0;
  p = p * s + 1.0;
  const double ed = static_cast<double>(e);
  return (ed * kLn2Hi + 2.0 * f * p) + ed * kLn2Lo;
}

}  // namespace grabcut
