// exp and log written with + - * / and exact scaling only, so that the CPU and the
// CUDA backend compute bit-identical results (the C library's exp/log and CUDA's
// differ in the last bit now and then, which could flip a rounded capacity and so
// a pixel). Both backends are built without FMA contraction for the same reason.
// Accuracy: a few ulp over the range used here, far below the 1/256 capacity grid.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/common.h"

namespace grabcut {

#if !defined(__CUDA_ARCH__)
// Host replacements for ldexp and frexp with the same results, computed from the
// exponent bits inline: the C library's calls cost about a fifth of the t-links.

// 2^k for -1022 <= k <= 1023 (a normal double).
inline double power_of_two(int k) {
  const std::uint64_t bits = static_cast<std::uint64_t>(k + 1023) << 52U;
  double r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

// ldexp(p, k): p * 2^k rounded once, as ldexp rounds. A multiplication by an exact
// power of two rounds the exact product once; below 2^-1022 the first factor keeps
// the product normal (exact) and the second rounds it into the subnormals.
inline double host_ldexp(double p, int k) {
  if (k >= -1022 && k <= 1023) return p * power_of_two(k);
  if (k < -1022 && k >= -1022 - 64) return (p * power_of_two(k + 64)) * power_of_two(-64);
  return std::ldexp(p, k);
}

// frexp(x, e) for normal positive x from its bits; anything else goes to std::frexp.
inline double host_frexp(double x, int* e) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const auto biased = static_cast<int>(bits >> 52U);  // sign bit included: negative x is >= 2048
  if (biased == 0 || biased >= 0x7ff) return std::frexp(x, e);
  *e = biased - 1022;
  bits = (bits & ((std::uint64_t{1} << 52U) - 1U)) | (std::uint64_t{1022} << 52U);
  double m;
  std::memcpy(&m, &bits, sizeof m);
  return m;
}
#endif

constexpr double kLn2Hi = 6.93147180369123816490e-01;  // high bits of ln 2, exact in k * kLn2Hi
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi
constexpr double kInvLn2 = 1.44269504088896338700e+00;

// The Taylor series of e^r to degree 14, for |r| <= 0.347: the first dropped term
// is below 1e-19.
GRABCUT_HD double exp_series(double r) {
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
  return p;
}

// e^x for x <= 0 (the only sign used: densities and n-link weights); 0 below -745.
GRABCUT_HD double portable_exp(double x) {
  if (x < -745.0) return 0.0;
  const double k = rint(x * kInvLn2);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= 0.347
  const double p = exp_series(r);
#if defined(__CUDA_ARCH__)
  return ldexp(p, static_cast<int>(k));
#else
  return host_ldexp(p, static_cast<int>(k));
#endif
}

#if !defined(__CUDA_ARCH__)
// portable_exp(x) bit for bit for -700 <= x <= 0, without branches so that a loop
// of them vectorises: rint by adding and subtracting 1.5 * 2^52 (the same rounding
// to nearest even for |x / ln 2| < 2^51; only the sign of a zero k differs, which
// no later operation sees), 2^k from the bits of that sum (its low bits hold k),
// and a plain multiplication because 2^k and the result are normal doubles. Other
// x (NaN included) give some value, without undefined behaviour, for callers that
// compute it unconditionally and discard it.
inline double portable_exp_in_range(double x) {
  constexpr double kRoundingShift = 6755399441055744.0;  // 1.5 * 2^52
  const double shifted = x * kInvLn2 + kRoundingShift;
  const double k = shifted - kRoundingShift;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  const double p = exp_series(r);
  std::uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits + 1023U) << 52U;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}
#endif

// log(m * 2^e) for m in [0.5, 1), the parts frexp gives.
GRABCUT_HD double log_from_parts(double m, int e) {
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

// Natural log for finite x > 0.
GRABCUT_HD double portable_log(double x) {
  int e = 0;
#if defined(__CUDA_ARCH__)
  const double m = frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
#else
  const double m = host_frexp(x, &e);
#endif
  return log_from_parts(m, e);
}

}  // namespace grabcut
