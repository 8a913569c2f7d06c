// No FMA contraction in the host build (csrc/host_flags.txt): the CPU rounds every
// multiply and add on its own, as the CUDA backend (-fmad=false) does.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fp_contract/maths_table.h"

namespace {

TEST(FpContract, MultiplyAddRoundsTheProductFirst) {
  // (1 + 2^-30)(1 - 2^-30) = 1 - 2^-60 rounds to 1 in double, so the sum is 0 when the
  // product is rounded on its own; a fused multiply-add keeps it and gives -2^-60.
  volatile double a = 1.0 + 0x1p-30;
  volatile double b = 1.0 - 0x1p-30;
  volatile double c = -1.0;
  EXPECT_EQ(fp_contract_test::native_multiply_add(a, b, c), 0.0);
}

TEST(FpContract, CoreMathsIsBitIdenticalForEveryInstructionSet) {
  const std::vector<double> native = fp_contract_test::native_maths();
  const std::vector<double> baseline = fp_contract_test::baseline_maths();
  ASSERT_EQ(native.size(), baseline.size());
  int differing = 0;
  for (std::size_t i = 0; i < native.size(); ++i) {
    if (std::memcmp(&native[i], &baseline[i], sizeof(double)) != 0) ++differing;
  }
  EXPECT_EQ(differing, 0) << "of " << native.size() << " results";
}

}  // namespace
