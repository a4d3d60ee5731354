// A view of one stored edge block's edges in their on-disk encoding
// (storage/internal/keys.h): `size()` little-endian (src u32, rel u32,
// dst u32) triples, 12 bytes each and without alignment. On a
// little-endian host that is byte for byte the layout of `Edge`, so edges
// leave the block with one memcpy and no intermediate copy. A block of a
// weighted graph (Manifest::edge_weights) follows the triples with a column
// of `size()` little-endian f32 weights, edge i's at byte 4·i of it.
#ifndef EMBER_STORAGE_EDGE_BLOCK_H_
#define EMBER_STORAGE_EDGE_BLOCK_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "storage/types.h"

namespace ember {

class EdgeBlockView {
 public:
  static constexpr size_t kEdgeBytes = 12;

  EdgeBlockView() = default;
  // `edges`: size * kEdgeBytes readable bytes, outliving the view.
  // `weights`: null (an unweighted block) or size * 4 readable bytes of
  // little-endian f32, outliving the view.
  EdgeBlockView(const char* edges, size_t size, const char* weights = nullptr)
      : edges_(edges), weights_(weights), size_(size) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool weighted() const { return weights_ != nullptr; }

  // Edge i. REQUIRES: i < size().
  Edge operator[](size_t i) const {
    Edge e;
    CopyTo(i, 1, &e);
    return e;
  }

  // Writes edges [first, first + n) to out[0, n). REQUIRES: first + n <=
  // size(); `out` does not overlap the block.
  void CopyTo(size_t first, size_t n, Edge* out) const {
    if (n == 0) return;  // `out` may be null then (an empty vector's data())
    const char* p = edges_ + first * kEdgeBytes;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(static_cast<void*>(out), p, n * kEdgeBytes);
    } else {
      for (size_t i = 0; i < n; ++i, p += kEdgeBytes) {
        out[i] = Edge{Load32(p), Load32(p + 4), Load32(p + 8)};
      }
    }
  }

  // Writes the weights of edges [first, first + n) to out[0, n): 1 for
  // every edge of an unweighted block. REQUIRES: first + n <= size().
  void CopyWeightsTo(size_t first, size_t n, float* out) const {
    if (n == 0) return;
    if (weights_ == nullptr) {
      std::fill_n(out, n, 1.0f);
      return;
    }
    const char* p = weights_ + first * 4;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(static_cast<void*>(out), p, n * 4);
    } else {
      for (size_t i = 0; i < n; ++i, p += 4) out[i] = std::bit_cast<float>(Load32(p));
    }
  }

 private:
  static uint32_t Load32(const char* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return v;
  }

  // The memcpy above relies on Edge being the encoding's three u32 in order.
  static_assert(std::is_trivially_copyable_v<Edge> && std::is_standard_layout_v<Edge>);
  static_assert(sizeof(Edge) == kEdgeBytes && offsetof(Edge, src) == 0 &&
                offsetof(Edge, rel) == 4 && offsetof(Edge, dst) == 8);

  const char* edges_ = nullptr;
  const char* weights_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ember

#endif  // EMBER_STORAGE_EDGE_BLOCK_H_
