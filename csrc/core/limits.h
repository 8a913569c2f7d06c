// The limits of grabcut's arguments, enforced here (validate_options) and in the
// torch bindings, and read from there by the Python checks (torchgrabcut::limits):
// one definition for every layer.
#pragma once

namespace grabcut {

// A model's components per class: the GMM stages keep one class's components in
// fixed-size arrays (registers and shared memory on the GPU).
constexpr int kMaxComponents = 16;
// Iterations of one call: far beyond any fixed point GrabCut reaches (it converges
// in tens), and small enough that a mistyped count fails at once instead of
// running for days.
constexpr int kMaxIterations = 1000000;
// The smoothness weight: it keeps lambda_of(gamma) * kCapacityScale, the largest
// capacity (energy.h), and so every capacity inside int32, the max-flow's type.
constexpr double kMaxGamma = 1e4;

}  // namespace grabcut
