// The torchgrabcut operators: schemas and their CPU kernels. The layer only
// converts: it checks tensors, makes them contiguous, allocates outputs and calls
// the framework-free core. The CUDA kernels of the same schemas are registered in
// ops_cuda.cpp when the extension is built with CUDA.
#include <Python.h>
#include <ATen/Parallel.h>
#include <pybind11/pybind11.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/driver.h"
#include "core/gmm.h"
#include "core/maxflow.h"
#include "torch/op_checks.h"

namespace torchgrabcut {
namespace {

// Python's main thread (the one that runs signal handlers), set when the module is
// imported; 0 (never matches) when the library is loaded some other way.
std::atomic<unsigned long> python_main_thread{0};

// Ctrl-C during a CPU batch. torch's Python binding runs operators with the GIL
// released, so Python would run its SIGINT handler only once the whole batch has
// returned. Instead, between two images (at most every kPollInterval), the thread
// that called the operator, when it is Python's main thread, takes the GIL for a
// moment and runs the pending signal handlers (PyErr_CheckSignals). When one
// raises (KeyboardInterrupt), no further image is started, the running ones
// finish, and the exception reaches the caller as itself. Nothing the caller
// passed is written, so its data is intact. Other threads (Python cannot deliver
// signals to them, and a C++ caller may not touch the interpreter) never poll.
class InterruptCheck {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{20};

  InterruptCheck()
      : caller_(std::this_thread::get_id()),
        enabled_(Py_IsInitialized() != 0 && PyGILState_GetThisThreadState() != nullptr &&
                 PyThread_get_thread_ident() == python_main_thread.load()),
        last_poll_(std::chrono::steady_clock::now()) {}
  InterruptCheck(const InterruptCheck&) = delete;
  InterruptCheck& operator=(const InterruptCheck&) = delete;
  ~InterruptCheck() {
    // Still held only when another error ended the batch first: that one is raised.
    if (type_ == nullptr && value_ == nullptr && traceback_ == nullptr) return;
    const PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF(type_);
    Py_XDECREF(value_);
    Py_XDECREF(traceback_);
    PyGILState_Release(gil);
  }

  // Polls on the calling thread only; true once a signal handler has raised.
  bool stop_requested() {
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

  // On the calling thread, after the batch: re-raises the handler's exception.
  void rethrow_if_stopped() {
    if (!stop_.load(std::memory_order_relaxed)) return;
    const PyGILState_STATE gil = PyGILState_Ensure();
    PyErr_Restore(type_, value_, traceback_);
    type_ = value_ = traceback_ = nullptr;
    pybind11::error_already_set error;  // takes the exception over from the interpreter
    PyGILState_Release(gil);
    throw error;
  }

 private:
  std::thread::id caller_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_poll_;  // touched by the calling thread only
  std::atomic<bool> stop_{false};
  PyObject* type_ = nullptr;  // owned references, handed back by rethrow_if_stopped
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
};

std::tuple<at::Tensor, at::Tensor> grabcut_cpu_kernel(const at::Tensor& image, const at::Tensor& mask,
                                                      const at::Tensor& model, at::IntArrayRef sizes,
                                                      int64_t max_iter, int64_t components, double gamma,
                                                      int64_t seed, bool init_model, bool freeze_model) {
  const GrabCutArgs args =
      check_grabcut_args(image, mask, model, sizes, max_iter, components, gamma, seed, init_model, freeze_model);
  const at::Tensor image_c = image.contiguous();
  at::Tensor mask_out = mask.contiguous().clone();
  at::Tensor model_out = model.detach().contiguous().clone();
  const int64_t batch = image.size(0);
  const int64_t pitch_h = image.size(2);
  const int64_t pitch_w = image.size(3);
  std::vector<std::string> errors(static_cast<size_t>(batch));
  std::vector<char> out_of_memory(static_cast<size_t>(batch), 0);
  // Images in parallel when there are several (torch's intra-op threads, each image
  // on one: the core runs single-threaded inside a parallel region); a single image
  // gives the core's per-pixel stages torch's thread count for the calling thread
  // (torch.set_num_threads), explicitly rather than through OpenMP's defaults.
  grabcut::GrabCutOptions options = args.options;
  options.num_threads = at::get_num_threads();
  InterruptCheck interrupt;
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      if (b > 0 && interrupt.stop_requested()) return;
      const int64_t h = args.heights[b];
      const int64_t w = args.widths[b];
      at::Tensor img = image_c[b].slice(1, 0, h).slice(2, 0, w).contiguous();
      at::Tensor msk = mask_out[b].slice(0, 0, h).slice(1, 0, w).contiguous();
      at::Tensor mdl = model_out[b];
      try {
        grabcut::grabcut_cpu(img.data_ptr<uint8_t>(), static_cast<int>(h), static_cast<int>(w),
                             msk.data_ptr<uint8_t>(), mdl.data_ptr<double>(), options);
      } catch (const std::bad_alloc&) {
        out_of_memory[static_cast<size_t>(b)] = 1;
        continue;
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(b)] = e.what();
        continue;
      }
      if (h != pitch_h || w != pitch_w) mask_out[b].slice(0, 0, h).slice(1, 0, w).copy_(msk);
    }
  });
  interrupt.rethrow_if_stopped();
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK_WITH(OutOfMemoryError, !out_of_memory[static_cast<size_t>(b)],
                     "torchgrabcut.grabcut: out of host memory for the scratch of image ", b, " (",
                     args.heights[b], "x", args.widths[b], ", ", args.heights[b] * args.widths[b],
                     " pixels); use smaller images or fewer at once");
  }
  for (int64_t b = 0; b < batch; ++b) {
    const std::string& err = errors[static_cast<size_t>(b)];
    TORCH_CHECK_VALUE(err.empty(), batch > 1 ? "image " + std::to_string(b) + " of the batch: " + err : err);
  }
  return {mask_out, model_out};
}

std::tuple<at::Tensor, at::Tensor> maxflow_grid_cpu_kernel(const at::Tensor& terminal, const at::Tensor& nlinks) {
  check_maxflow_args(terminal, nlinks);
  const at::Tensor term_c = terminal.contiguous();
  const at::Tensor nl_c = grid_nlinks(nlinks);
  const int64_t batch = terminal.size(0);
  const int64_t h = terminal.size(1);
  const int64_t w = terminal.size(2);
  at::Tensor cut = at::empty({batch, h, w}, terminal.options().dtype(at::kByte));
  at::Tensor flows = at::empty({batch}, terminal.options().dtype(at::kLong));
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    grabcut::GridMaxflowSolver solver;
    for (int64_t b = begin; b < end; ++b) {
      grabcut::GridGraphView graph;
      graph.height = static_cast<int>(h);
      graph.width = static_cast<int>(w);
      graph.terminal = term_c[b].data_ptr<int32_t>();
      for (int d = 0; d < grabcut::kNumForwardDirections; ++d) graph.nlink[d] = nl_c[b][d].data_ptr<int32_t>();
      flows[b] = solver.solve(graph, cut[b].data_ptr<uint8_t>());
    }
  });
  return {cut, flows};
}

// Test hook: the largest team of OpenMP threads the CPU stages ran with since the
// last call (then reset), so tests can check the thread count without timing.
int64_t max_stage_threads() { return grabcut::take_max_stage_threads(); }

}  // namespace

TORCH_LIBRARY(torchgrabcut, m) {
  m.def(
      "grabcut(Tensor image, Tensor mask, Tensor model, int[] sizes, int max_iter, int components, "
      "float gamma, int seed, bool init_model, bool freeze_model) -> (Tensor, Tensor)");
  m.def("maxflow_grid(Tensor terminal, Tensor nlinks) -> (Tensor, Tensor)");
  // Host images into a padded GPU batch and masks back, one transfer each (CUDA
  // only: csrc/torch/batch_transfer_cuda.cpp).
  m.def("upload_images_(Tensor(a!) batch, Tensor[] images) -> ()");
  m.def("download_masks(Tensor masks, int[] sizes) -> Tensor");
  m.def("_max_stage_threads() -> int", &max_stage_threads);
}

// Not differentiable: the outputs are integer masks and a refitted model. Falling
// through the autograd key means no graph is recorded and no output requires grad.
TORCH_LIBRARY_IMPL(torchgrabcut, Autograd, m) {
  m.impl("grabcut", torch::CppFunction::makeFallthrough());
  m.impl("maxflow_grid", torch::CppFunction::makeFallthrough());
  m.impl("upload_images_", torch::CppFunction::makeFallthrough());
  m.impl("download_masks", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) {
  m.impl("grabcut", &grabcut_cpu_kernel);
  m.impl("maxflow_grid", &maxflow_grid_cpu_kernel);
}

}  // namespace torchgrabcut

// An empty Python module, so that `from torchgrabcut import _C` loads this library
// (which registers the operators) the ordinary way.
extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "torchgrabcut operators (torch.ops.torchgrabcut)", -1,
                               nullptr, nullptr, nullptr, nullptr, nullptr};
  PyObject* result = PyModule_Create(&module);
  if (result == nullptr) return nullptr;
  // threading.main_thread().ident: the import may run on another thread.
  PyObject* threading = PyImport_ImportModule("threading");
  PyObject* main = threading == nullptr ? nullptr : PyObject_CallMethod(threading, "main_thread", nullptr);
  PyObject* ident = main == nullptr ? nullptr : PyObject_GetAttrString(main, "ident");
  const unsigned long id = ident == nullptr ? 0 : PyLong_AsUnsignedLong(ident);
  Py_XDECREF(ident);
  Py_XDECREF(main);
  Py_XDECREF(threading);
  if (PyErr_Occurred() != nullptr) {
    Py_DECREF(result);
    return nullptr;
  }
  torchgrabcut::python_main_thread.store(id);
  return result;
}
