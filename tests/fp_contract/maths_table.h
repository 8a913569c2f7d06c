// The same float maths of the core, compiled twice: once for the full instruction set
// of the building CPU (native_maths.cpp, -march=native where the compiler accepts it)
// and once for the target's baseline (baseline_maths.cpp). A compiler fuses a * b + c
// into one FMA when it may (its default) and the target has one, which changes the
// last bit of results; with the project's host flags (csrc/host_flags.txt) it may not,
// and the two tables must agree bit for bit, as the CPU and CUDA backends must.
#pragma once

#include <vector>

namespace fp_contract_test {

std::vector<double> native_maths();
std::vector<double> baseline_maths();
// a * b + c, written as in the core, compiled natively.
double native_multiply_add(double a, double b, double c);

}  // namespace fp_contract_test
