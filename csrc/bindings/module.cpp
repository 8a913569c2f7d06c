// The Python module torchgrabcut._C: empty, so that `from torchgrabcut import _C`
// loads this library (whose static initialisers register the operators) the
// ordinary way.
#include <Python.h>

#include "bindings/interrupt.h"

extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "torchgrabcut operators (torch.ops.torchgrabcut)", -1,
                               nullptr, nullptr, nullptr, nullptr, nullptr};
  PyObject* result = PyModule_Create(&module);
  if (result == nullptr) return nullptr;
  if (!torchgrabcut::record_python_main_thread()) {
    Py_DECREF(result);
    return nullptr;
  }
  return result;
}
