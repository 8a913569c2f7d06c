// Error checking for every CUDA runtime call and kernel launch of the backend.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace grabcut::cuda {

inline void throw_on_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error in ") + what + " at " + file + ":" + std::to_string(line) +
                             ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  }
}

}  // namespace grabcut::cuda

#define GRABCUT_CUDA_CHECK(call) ::grabcut::cuda::throw_on_cuda_error((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports launch-configuration errors without synchronising.
#define GRABCUT_CUDA_CHECK_LAUNCH(name) ::grabcut::cuda::throw_on_cuda_error(cudaGetLastError(), name, __FILE__, __LINE__)
