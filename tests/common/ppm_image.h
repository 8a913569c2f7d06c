// Reads binary PPM (P6, 8-bit) images, the format bench/grabcut50_ppm.py writes for
// the torch-free benchmarks (which have no image decoder of their own).
//
// Header-only host code, also compiled by nvcc.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace grabcut::testing {

struct RgbImage {
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> pixels;  // height * width * 3, row-major, channels as stored

  // The channels one after another (channel c of pixel p at c * height * width + p),
  // the layout of the core's and the CUDA stages' images.
  std::vector<std::uint8_t> planar() const {
    const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
    std::vector<std::uint8_t> out(3 * n);
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t c = 0; c < 3; ++c) out[c * n + p] = pixels[3 * p + c];
    }
    return out;
  }
};

namespace detail {

// The next header field of a PPM: a decimal number after whitespace and comments.
inline long read_ppm_field(std::istream& in, const std::string& path) {
  for (;;) {
    const int c = in.peek();
    if (c == '#') {
      std::string comment;
      std::getline(in, comment);
    } else if (c != EOF && std::isspace(c) != 0) {
      in.get();
    } else {
      break;
    }
  }
  long value = -1;
  if (!(in >> value) || value < 0) throw std::runtime_error(path + ": bad PPM header");
  return value;
}

}  // namespace detail

// The image in `path`; throws std::runtime_error if it is not an 8-bit P6 PPM of at
// most 2^28 pixels or is cut short.
inline RgbImage read_ppm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (magic[0] != 'P' || magic[1] != '6') throw std::runtime_error(path + ": not a binary PPM (P6)");
  const long width = detail::read_ppm_field(in, path);
  const long height = detail::read_ppm_field(in, path);
  const long maxval = detail::read_ppm_field(in, path);
  if (maxval != 255) throw std::runtime_error(path + ": expected 8-bit samples (maxval 255)");
  if (width == 0 || height == 0 || width > (1L << 16) || height > (1L << 16) || width * height > (1L << 28)) {
    throw std::runtime_error(path + ": unsupported size " + std::to_string(width) + " x " + std::to_string(height));
  }
  in.get();  // the single whitespace byte before the samples
  RgbImage img;
  img.height = static_cast<int>(height);
  img.width = static_cast<int>(width);
  img.pixels.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  in.read(reinterpret_cast<char*>(img.pixels.data()), static_cast<std::streamsize>(img.pixels.size()));
  if (in.gcount() != static_cast<std::streamsize>(img.pixels.size())) throw std::runtime_error(path + ": cut short");
  return img;
}

// One image of a benchmark list and its box, half-open: x0 <= x < x1, y0 <= y < y1.
struct ListedImage {
  std::string name;
  RgbImage image;
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// Reads a list written by bench/grabcut50_ppm.py: one line "file.ppm x0 y0 x1 y1" per
// image, the file relative to the list's folder. Throws std::runtime_error on a bad
// line or a box outside its image.
inline std::vector<ListedImage> read_image_list(const std::string& list_path) {
  std::ifstream in(list_path);
  if (!in) throw std::runtime_error(list_path + ": cannot open");
  const std::size_t slash = list_path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? std::string() : list_path.substr(0, slash + 1);
  std::vector<ListedImage> out;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    std::istringstream fields(line);
    std::string name;
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    std::string extra;
    if (!(fields >> name >> x0 >> y0 >> x1 >> y1) || (fields >> extra)) {
      throw std::runtime_error(list_path + ", line " + std::to_string(line_number) +
                               ": expected \"file.ppm x0 y0 x1 y1\"");
    }
    ListedImage item;
    item.name = name;
    item.image = read_ppm(folder + name);
    if (x0 < 0 || y0 < 0 || x1 <= x0 || y1 <= y0 || x1 > item.image.width || y1 > item.image.height) {
      throw std::runtime_error(list_path + ": box of " + name + " outside the image or empty");
    }
    item.x0 = x0;
    item.y0 = y0;
    item.x1 = x1;
    item.y1 = y1;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace grabcut::testing
