// Compiled for the target's baseline instruction set: see maths_table.h.
#include "fp_contract/maths_body.h"
#include "fp_contract/maths_table.h"

namespace fp_contract_test {

std::vector<double> baseline_maths() { return compute_maths(); }

}  // namespace fp_contract_test
