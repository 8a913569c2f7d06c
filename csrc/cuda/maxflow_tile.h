// The GPU max-flow's tile (csrc/cuda/maxflow.cu): its geometry and the directions of
// its arcs.
#pragma once

namespace grabcut::cuda::tile {

constexpr int kTileW = 32;
// 32x16 tiles, two blocks per SM (64 registers). A global relabel by sweeps needs
// about one sweep per tile its wave crosses, so taller tiles mean fewer grid-wide
// sweeps; 32x32 tiles halve the blocks per SM and lose more than that gains.
constexpr int kTileH = 16;
constexpr int kThreads = kTileW * kTileH;
constexpr int kPadW = kTileW + 2;
constexpr int kPadH = kTileH + 2;
constexpr int kPad = kPadW * kPadH;
constexpr int kInf = 0x3fffffff;
// MaxflowSchedule::region's step between region labels: above every distance inside a
// tile, so that a height D * kRegionStep + s orders by D first.
constexpr int kRegionStep = 2 * kThreads;

// Directions 0..3 are the forward n-links of core/maxflow.h, 4..7 their opposites.
__host__ __device__ __forceinline__ constexpr int dir_dy(int k) { return (k == 0 || k == 4) ? 0 : (k < 4 ? 1 : -1); }
__host__ __device__ __forceinline__ constexpr int dir_dx(int k) {
  return (k == 0 || k == 1 || k == 7) ? 1 : ((k == 2 || k == 6) ? 0 : -1);
}

// The directions whose neighbour of the tile's pixel (lx, ly) is a pixel of the tile
// too (bit k: direction k); the others lead into the halo.
__host__ __device__ __forceinline__ constexpr unsigned int inner_directions(int lx, int ly) {
  unsigned int inner = 0;
  for (int k = 0; k < 8; ++k) {
    const int nlx = lx + dir_dx(k);
    const int nly = ly + dir_dy(k);
    if (nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH) inner |= 1U << k;
  }
  return inner;
}

}  // namespace grabcut::cuda::tile
