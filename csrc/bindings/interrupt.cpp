#include <Python.h>
#include <pybind11/pybind11.h>

#include "bindings/interrupt.h"

namespace torchgrabcut {
namespace {

// Python's main thread (the one that runs signal handlers); 0 (never matches)
// until record_python_main_thread.
std::atomic<unsigned long> python_main_thread{0};

}  // namespace

bool record_python_main_thread() {
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* main = threading == nullptr ? nullptr : PyObject_CallMethod(threading, "main_thread", nullptr);
  PyObject* ident = main == nullptr ? nullptr : PyObject_GetAttrString(main, "ident");
  const unsigned long id = ident == nullptr ? 0 : PyLong_AsUnsignedLong(ident);
  Py_XDECREF(ident);
  Py_XDECREF(main);
  Py_XDECREF(threading);
  if (PyErr_Occurred() != nullptr) return false;
  python_main_thread.store(id);
  return true;
}

InterruptCheck::InterruptCheck()
    : caller_(std::this_thread::get_id()),
      enabled_(Py_IsInitialized() != 0 && PyGILState_GetThisThreadState() != nullptr &&
               PyThread_get_thread_ident() == python_main_thread.load()),
      last_poll_(std::chrono::steady_clock::now()) {}

InterruptCheck::~InterruptCheck() {
  // Still held only when another error ended the batch first: that one is raised.
  if (type_ == nullptr && value_ == nullptr && traceback_ == nullptr) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(type_);
  Py_XDECREF(value_);
  Py_XDECREF(traceback_);
  PyGILState_Release(gil);
}

bool InterruptCheck::stop_requested() {
  if (enabled_ && !stop_.load(std::memory_order_relaxed) && std::this_thread::get_id() == caller_ &&
      std::chrono::steady_clock::now() - last_poll_ >= kPollInterval) {
    last_poll_ = std::chrono::steady_clock::now();
    const PyGILState_STATE gil = PyGILState_Ensure();
    if (PyErr_CheckSignals() != 0) {
      PyErr_Fetch(&type_, &value_, &traceback_);
      stop_.store(true, std::memory_order_relaxed);
    }
    PyGILState_Release(gil);
  }
  return stop_.load(std::memory_order_relaxed);
}

void InterruptCheck::rethrow_if_stopped() {
  if (!stop_.load(std::memory_order_relaxed)) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyErr_Restore(type_, value_, traceback_);
  type_ = value_ = traceback_ = nullptr;
  pybind11::error_already_set error;  // takes the exception over from the interpreter
  PyGILState_Release(gil);
  throw error;
}

}  // namespace torchgrabcut
