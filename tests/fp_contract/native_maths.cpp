// Compiled with -march=native (CMakeLists.txt): see maths_table.h.
#include "fp_contract/maths_body.h"
#include "fp_contract/maths_table.h"

namespace fp_contract_test {

std::vector<double> native_maths() { return compute_maths(); }

double native_multiply_add(double a, double b, double c) { return a * b + c; }

}  // namespace fp_contract_test
