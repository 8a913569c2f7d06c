#include "core/energy.h"

#include <vector>

namespace grabcut {
namespace {

int pixel_distance(const std::uint8_t* image, std::int64_t n, std::int64_t p, std::int64_t q) {
  const int d0 = image[p] - image[q];
  const int d1 = image[n + p] - image[n + q];
  const int d2 = image[2 * n + p] - image[2 * n + q];
  return d0 * d0 + d1 * d1 + d2 * d2;
}

// The t-links' colour cache: direct-mapped, 2^14 entries (128 KiB a thread, within
// a core's L2).
constexpr int kColourCacheBits = 14;
constexpr std::size_t kColourCacheSize = std::size_t{1} << kColourCacheBits;
constexpr std::uint32_t kNoColour = 0xFFFFFFFFU;  // no packed colour has a high byte

std::uint32_t packed_colour(std::uint8_t c0, std::uint8_t c1, std::uint8_t c2) {
  return static_cast<std::uint32_t>(c0) | (static_cast<std::uint32_t>(c1) << 8U) |
         (static_cast<std::uint32_t>(c2) << 16U);
}

std::uint32_t colour_slot(std::uint32_t colour) {
  return (colour * 0x9E3779B1U) >> (32U - kColourCacheBits);  // Fibonacci hashing
}

}  // namespace

std::int64_t sum_squared_differences_cpu(const std::uint8_t* image, int h, int w) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  std::int64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::int64_t p = static_cast<std::int64_t>(y) * w + x;
      if (x > 0) total += pixel_distance(image, n, p, p - 1);
      if (x > 0 && y > 0) total += pixel_distance(image, n, p, p - w - 1);
      if (y > 0) total += pixel_distance(image, n, p, p - w);
      if (x + 1 < w && y > 0) total += pixel_distance(image, n, p, p - w + 1);
    }
  }
  return total;
}

void nlinks_cpu(const std::uint8_t* image, int h, int w, double gamma, double beta,
                std::int32_t* const nlink[kNumForwardDirections]) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  // Squared colour distances are integers in 0..kMaxSquaredDistance. When the image
  // has more links (4 per pixel) than the two tables have entries, tabulating the
  // capacity once replaces an exp per link by a lookup; on smaller images (a dataset's
  // crops) the tables would cost more than they save. Same values either way.
  const bool tabulate = 4 * n > 2 * (static_cast<std::int64_t>(kMaxSquaredDistance) + 1);
  std::vector<std::int32_t> straight;
  std::vector<std::int32_t> diagonal;
  if (tabulate) {
    straight.resize(kMaxSquaredDistance + 1);
    diagonal.resize(kMaxSquaredDistance + 1);
#pragma omp parallel for schedule(static)
    for (int d2 = 0; d2 <= kMaxSquaredDistance; ++d2) {
      straight[d2] = nlink_capacity(gamma, beta, d2, false);
      diagonal[d2] = nlink_capacity(gamma, beta, d2, true);
    }
  }
  const auto capacity = [&](int d2, bool diag) {
    if (tabulate) return diag ? diagonal[d2] : straight[d2];
    return nlink_capacity(gamma, beta, d2, diag);
  };
#pragma omp parallel for schedule(static) if (tabulate)
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::int64_t p = static_cast<std::int64_t>(y) * w + x;
      const bool right = x + 1 < w;
      const bool down = y + 1 < h;
      const bool left = x > 0;
      nlink[kRight][p] = right ? capacity(pixel_distance(image, n, p, p + 1), false) : 0;
      nlink[kDownRight][p] = (down && right) ? capacity(pixel_distance(image, n, p, p + w + 1), true) : 0;
      nlink[kDown][p] = down ? capacity(pixel_distance(image, n, p, p + w), false) : 0;
      nlink[kDownLeft][p] = (down && left) ? capacity(pixel_distance(image, n, p, p + w - 1), true) : 0;
    }
  }
}

void tlinks_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                const double* model, double gamma, std::int32_t* terminal) {
  const std::vector<ComponentEval> evals = prepare_model_cpu(model, k);
  const UsableComponents bg(evals.data(), k);
  const UsableComponents fg(evals.data() + k, k);
  const double lambda = lambda_of(gamma);
  const std::int32_t hard = to_capacity(lambda);
  const std::int64_t blocks = (n + kPixelBlock - 1) / kPixelBlock;
  // terminal_capacity for blocks of pixels: the probable pixels' colours are gathered
  // and both mixtures evaluated over the block (the same operations per pixel). A
  // probable pixel's capacity depends on its colour alone, and photos repeat colours
  // often: a small per-thread cache of recent colours skips most evaluations.
#pragma omp parallel
  {
    std::vector<std::uint32_t> cached_colour(kColourCacheSize, kNoColour);
    std::vector<std::int32_t> cached_capacity(kColourCacheSize);
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t begin = b * kPixelBlock;
      const std::int64_t end = begin + kPixelBlock < n ? begin + kPixelBlock : n;
      PixelBlock block;
      for (std::int64_t p = begin; p < end; ++p) {
        const std::uint8_t label = mask[p];
        if (label == kBackground) {
          terminal[p] = -hard;
        } else if (label == kForeground) {
          terminal[p] = hard;
        } else {
          const std::uint32_t colour = packed_colour(image[p], image[n + p], image[2 * n + p]);
          const std::uint32_t slot = colour_slot(colour);
          if (cached_colour[slot] == colour) {
            terminal[p] = cached_capacity[slot];
          } else {
            block.add(p, image[p], image[n + p], image[2 * n + p]);
          }
        }
      }
      if (block.size == 0) continue;
      double log_fg[kPixelBlock];
      double log_bg[kPixelBlock];
      mixture_log_density_block(fg, block, log_fg);
      mixture_log_density_block(bg, block, log_bg);
      for (int i = 0; i < block.size; ++i) {
        double net = log_fg[i] - log_bg[i];
        if (net > lambda) net = lambda;
        if (net < -lambda) net = -lambda;
        const std::int32_t capacity = to_capacity(net);
        const std::int64_t p = block.pixel[i];
        terminal[p] = capacity;
        const std::uint32_t colour = packed_colour(image[p], image[n + p], image[2 * n + p]);
        const std::uint32_t slot = colour_slot(colour);
        cached_colour[slot] = colour;
        cached_capacity[slot] = capacity;
      }
    }
  }
}

}  // namespace grabcut
