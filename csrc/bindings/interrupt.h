// Ctrl-C during a CPU batch. torch's Python binding runs operators with the GIL
// released, so Python would run its SIGINT handler only once the whole batch has
// returned. Instead, between two images (at most every kPollInterval), the thread
// that called the operator, when it is Python's main thread, takes the GIL for a
// moment and runs the pending signal handlers (PyErr_CheckSignals). When one
// raises (KeyboardInterrupt), no further image is started, the running ones
// finish, and the exception reaches the caller as itself. Nothing the caller
// passed is written, so its data is intact. Other threads (Python cannot deliver
// signals to them, and a C++ caller may not touch the interpreter) never poll.
//
// The interpreter is touched only in interrupt.cpp: the operators include this
// header without Python's.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

struct _object;  // Python's PyObject

namespace torchgrabcut {

// Records Python's main thread (threading.main_thread(), which the import may not
// run on) as the one whose calls poll. Called with the GIL held when the Python
// module is imported; false with a Python error set when it could not be found.
// Until then no call polls, as when the library is loaded without Python.
bool record_python_main_thread();

class InterruptCheck {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{20};

  InterruptCheck();
  InterruptCheck(const InterruptCheck&) = delete;
  InterruptCheck& operator=(const InterruptCheck&) = delete;
  ~InterruptCheck();

  // Polls on the calling thread only; true once a signal handler has raised.
  bool stop_requested();

  // On the calling thread, after the batch: re-raises the handler's exception.
  void rethrow_if_stopped();

 private:
  std::thread::id caller_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_poll_;  // touched by the calling thread only
  std::atomic<bool> stop_{false};
  _object* type_ = nullptr;  // owned references, handed back by rethrow_if_stopped
  _object* value_ = nullptr;
  _object* traceback_ = nullptr;
};

}  // namespace torchgrabcut
