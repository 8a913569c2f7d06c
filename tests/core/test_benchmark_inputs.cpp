// The benchmarks' inputs (tests/common): PPM images and box lists as
// bench/grabcut50_ppm.py writes them, the graphs of a GrabCut run
// (grabcut_iterations), which must be those of grabcut_cpu's loop, and graph files
// as bench/mincut_bench.py --dump writes them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/grabcut_iterations.h"
#include "common/graph_file.h"
#include "common/ppm_image.h"
#include "core/common.h"
#include "core/driver.h"
#include "core/maxflow.h"

namespace grabcut {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/tgc_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
         name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string ppm_bytes(int w, int h, const std::string& header_extra = "") {
  std::string s = "P6\n" + header_extra + std::to_string(w) + " " + std::to_string(h) + "\n255\n";
  for (int i = 0; i < 3 * w * h; ++i) s.push_back(static_cast<char>(i % 251));
  return s;
}

TEST(BenchmarkInputs, PpmRoundTripAndPlanar) {
  const std::string path = temp_path("ok.ppm");
  write_file(path, ppm_bytes(5, 3, "# a comment\n"));
  const testing::RgbImage img = testing::read_ppm(path);
  ASSERT_EQ(img.width, 5);
  ASSERT_EQ(img.height, 3);
  ASSERT_EQ(img.pixels.size(), 45U);
  for (int i = 0; i < 45; ++i) EXPECT_EQ(img.pixels[static_cast<std::size_t>(i)], i % 251);
  const std::vector<std::uint8_t> planar = img.planar();
  for (std::size_t p = 0; p < 15; ++p) {
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(planar[c * 15 + p], img.pixels[3 * p + c]);
  }
  std::remove(path.c_str());
}

TEST(BenchmarkInputs, BadPpmsThrow) {
  const std::vector<std::string> bad = {
      "",                                       // empty
      "P5\n2 2\n255\n" + std::string(4, 'x'),  // grey
      "P6\n2 2\n65535\n" + std::string(24, 'x'),
      "P6\n-2 2\n255\n",
      "P6\n0 2\n255\n",
      "P6\n100000 100000\n255\n",  // 10^10 pixels: refused before any allocation
      "P6\nx 2\n255\n",
      ppm_bytes(4, 4).substr(0, 30),  // cut short
  };
  const std::string path = temp_path("bad.ppm");
  for (const std::string& bytes : bad) {
    write_file(path, bytes);
    EXPECT_THROW(testing::read_ppm(path), std::runtime_error) << bytes.substr(0, 20);
  }
  EXPECT_THROW(testing::read_ppm(temp_path("missing.ppm")), std::runtime_error);
  std::remove(path.c_str());
}

TEST(BenchmarkInputs, ImageListsAndTheirBoxes) {
  const std::string image = temp_path("list_image.ppm");
  write_file(image, ppm_bytes(8, 6));
  const std::string name = image.substr(image.find_last_of('/') + 1);
  const std::string list = temp_path("list.txt");
  write_file(list, name + " 1 2 7 6\n\n" + name + " 0 0 8 6");  // a blank line, no final newline
  const auto items = testing::read_image_list(list);
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(items[0].x0, 1);
  EXPECT_EQ(items[0].y1, 6);
  EXPECT_EQ(items[1].image.width, 8);
  for (const char* box : {" 1 2 9 6", " 3 2 3 6", " -1 0 4 4", " 0 0 4", " a b c d", " 0 0 4 4 5"}) {
    write_file(list, name + box + "\n");
    EXPECT_THROW(testing::read_image_list(list), std::runtime_error) << box;
  }
  std::remove(image.c_str());
  std::remove(list.c_str());
}

// A planar image with a bright disc on a noisy background.
std::vector<std::uint8_t> disc_image(int h, int w, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 12.0);
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  std::vector<std::uint8_t> img(3 * n);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double dy = y - h / 2.0;
      const double dx = x - w / 2.0;
      const bool inside = dx * dx + dy * dy < 0.08 * h * w;
      for (std::size_t c = 0; c < 3; ++c) {
        const double base = inside ? 180.0 + 20.0 * static_cast<double>(c) : 60.0 + 10.0 * static_cast<double>(c);
        const double v = base + noise(rng);
        img[c * n + static_cast<std::size_t>(y) * w + x] = static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
    }
  }
  return img;
}

TEST(BenchmarkInputs, GrabCutIterationsFollowTheDriver) {
  const int h = 60;
  const int w = 80;
  const std::vector<std::uint8_t> img = disc_image(h, w, 5);
  const auto it = testing::grabcut_iterations(img.data(), h, w, 10, 8, 70, 52);
  ASSERT_FALSE(it.terminals.empty());
  EXPECT_LE(it.terminals.size(), 5U);

  std::vector<std::uint8_t> mask = testing::box_labels(h, w, 10, 8, 70, 52);
  std::vector<double> model(static_cast<std::size_t>(2 * kDefaultComponents * kParamsPerComponent));
  const GrabCutStats stats = grabcut_cpu(img.data(), h, w, mask.data(), model.data(), GrabCutOptions{});
  EXPECT_EQ(static_cast<int>(it.terminals.size()), stats.iterations);
  EXPECT_EQ(it.mask, mask);
  std::int64_t fg = 0;
  for (const auto v : mask) fg += v & 1;
  EXPECT_GT(fg, 0);  // a run that found nothing would pass the comparison too
  // The last graph's cut is the final mask inside the box (outside it is hard background).
  const auto last = it.graph(it.terminals.size() - 1);
  std::vector<std::uint8_t> cut(last.size());
  GridMaxflowSolver solver;
  EXPECT_EQ(solver.solve(last.view(), cut.data()), stats.last_flow);
  for (std::size_t p = 0; p < cut.size(); ++p) {
    if (is_probable_label(mask[p])) {
      EXPECT_EQ(cut[p] != 0, (mask[p] & 1) != 0) << p;
    }
  }
}

// A graph file's bytes: magic, height and width, terminals, the four n-link planes.
std::string graph_bytes(int h, int w, const std::vector<std::int32_t>& values, const char* magic = "TGCG1\n") {
  std::string s(magic, 6);
  const std::int32_t hw[2] = {h, w};
  s.append(reinterpret_cast<const char*>(hw), sizeof hw);
  s.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(std::int32_t));
  return s;
}

TEST(BenchmarkInputs, GraphFileRoundTripAndBadFiles) {
  const int h = 3;
  const int w = 4;
  const int n = h * w;
  std::mt19937 rng(7);
  std::vector<std::int32_t> values(static_cast<std::size_t>(5 * n));
  for (int i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(rng() % 201) - 100;
  // N-links, zero where they leave the grid (kRight, kDownRight, kDown, kDownLeft).
  testing::HostGridGraph shape(h, w);
  for (int d = 0; d < 4; ++d) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const auto at = static_cast<std::size_t>((1 + d) * n + y * w + x);
        values[at] = shape.has_neighbour(y, x, d) ? static_cast<std::int32_t>(rng() % 50) : 0;
      }
    }
  }
  const std::string path = temp_path("ok.tgcg");
  write_file(path, graph_bytes(h, w, values));
  const testing::HostGridGraph g = testing::read_graph_file(path);
  ASSERT_EQ(g.height, h);
  ASSERT_EQ(g.width, w);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(g.terminal[static_cast<std::size_t>(i)], values[static_cast<std::size_t>(i)]);
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(g.nlink[d][static_cast<std::size_t>(i)], values[static_cast<std::size_t>((1 + d) * n + i)]);
    }
  }
  // write_graph_file writes the same bytes back.
  const std::string again = temp_path("again.tgcg");
  testing::write_graph_file(again, g);
  std::ifstream in(again, std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written, graph_bytes(h, w, values));
  // Bad magic, truncated data, a negative n-link, an n-link off the grid, a bad size.
  std::vector<std::int32_t> negative = values;
  negative[static_cast<std::size_t>(n)] = -1;
  std::vector<std::int32_t> off_grid = values;
  off_grid[static_cast<std::size_t>(n + w - 1)] = 5;  // kRight of the first row's last pixel
  const std::vector<std::string> bad = {
      graph_bytes(h, w, values, "TGCG2\n"),
      graph_bytes(h, w, values).substr(0, 30),
      graph_bytes(h, w, negative),
      graph_bytes(h, w, off_grid),
      graph_bytes(0, w, {}),
      graph_bytes(-3, w, values),
      graph_bytes(1 << 15, 1 << 14, {}),
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    const std::string bad_path = temp_path("bad" + std::to_string(i) + ".tgcg");
    write_file(bad_path, bad[i]);
    EXPECT_THROW(testing::read_graph_file(bad_path), std::runtime_error) << "case " << i;
  }
  EXPECT_THROW(testing::read_graph_file(temp_path("missing.tgcg")), std::runtime_error);
}

}  // namespace
}  // namespace grabcut
