// Shared definitions of the GrabCut core: labels, constants, and the macro that
// lets one inline function serve both the CPU and the CUDA backend.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GRABCUT_HD __host__ __device__ __forceinline__
#else
#define GRABCUT_HD inline
#endif

namespace grabcut {

// OpenCV's mask labels. Only the probable labels (2, 3) ever change.
enum Label : std::uint8_t {
  kBackground = 0,
  kForeground = 1,
  kProbBackground = 2,
  kProbForeground = 3,
};

GRABCUT_HD bool is_foreground_label(std::uint8_t label) { return (label & 1U) != 0; }
GRABCUT_HD bool is_probable_label(std::uint8_t label) { return (label & 2U) != 0; }

constexpr int kDefaultComponents = 5;
constexpr double kDefaultGamma = 50.0;
// Hard pixels are tied to their side with lambda = kLambdaPerGamma * gamma.
constexpr double kLambdaPerGamma = 9.0;
// Energies are turned into integer capacities by multiplying with this scale and
// rounding to nearest (ties to even). 256 keeps an n-link (at most gamma = 50 by
// default, so 12800) and the residual of an undirected edge (twice that) inside
// int16, and gives every capacity a resolution of 1/256 energy units.
constexpr double kCapacityScale = 256.0;

// Parameters per Gaussian component in a model row: weight, mean[3], covariance[9].
constexpr int kParamsPerComponent = 13;

}  // namespace grabcut
