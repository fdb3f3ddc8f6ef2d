// gpu/lib/mbconv_tile.hpp — the tile geometry of lesson 11's fused MBConv
// kernel (gpu/lib/mbconv_fused.cuh): tunables, the shared-memory layout of a
// CTA, the choice of tile height, and the depthwise's work-item map. Plain
// C++ (host code, and two functions the kernel calls), so that
// tests/lesson11_mbconv_tile_test.cpp checks every index on the host.
//
// A tile is `rows` whole output rows of one image, or, when rows == P (a
// small image), `images` consecutive whole images (NHWC: their pixels are one
// contiguous block, images·H·W input and images·P·Q output pixels, image i's
// after image i − 1's). Its CTA holds, per stage (×n: n buffers, chunk k in
// buffer k mod n; the kernel's pipeline says why):
//
//   xs   [m_in][ldx]           the x tile with its halo rows          (expand, stages that make D)
//   es   [m_in][lde]  ×2|3     E chunks (×3: no expand, E is a copy of x's channels)
//   ds   [m_out][ldd]          D chunk (project); sums and store
//                              keep D in registers (store writes it to global memory from there)
//   wes  [c_pad][ldwe] ×2      We chunk, global layout [c][j]         (expand, stages that make D)
//   wps  [32][ldwp]   ×2       Wp chunk, global layout [j][o]         (project stages)
//   dws  [32·K²]      ×2       depthwise weights of the chunk, as copied (stages that make D)
//   dwf  [K²][32] fp32 ×2      the same, converted for the depthwise's 8-byte pair loads; the store stage
//                              reserves room for the tensor-core depthwise's form instead (dw_fragment_bytes)
//   vs   [2+g][32] fp32 ×3     be, bd, and the chunk's gate of each image (g = images: project; else 1)
//   red  [images][16][32] fp32 ×2  the channel sums' reduction, per image  (sums, store)
//
// Row strides are 8 elements (16 bytes) more than a multiple of 16 elements
// or equal to an odd multiple of 8: an odd number of 16-byte units, so the 8
// rows an ldmatrix phase reads hit 8 different bank groups.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// An odd number of 16-byte units at least `elems` 16-bit elements long.
CONVLAB_HOST_DEVICE constexpr int odd_units_stride(int elems) {
  const int units = (elems + 7) / 8;
  return 8 * (units % 2 == 1 ? units : units + 1);
}

// The stored plan's D buffer, chunk-major: [N][⌈hidden / kChunk⌉][P·Q][kChunk]. A tile's chunk
// is one contiguous block (rows·Q pixels × 64 bytes): pass 1 writes it and pass 2 reads it as a
// stream, where a pixel-major [N, P, Q, hidden] buffer would be touched 64 bytes in every
// 2·hidden. Channels c0 + j < dbuf_live(hidden) are written (hidden rounded up to 8, so that
// every pair is one 32-bit store and the copies are whole 16-byte vectors; the pad columns hold
// φ(0) = 0); the rest of the last chunk's rows is never written and never read.
constexpr int dbuf_live(int hidden) { return (hidden + 7) / 8 * 8; }

// ---- tunables ------------------------------------------------------------------------
inline constexpr int kThreads = 256;       // 8 warps
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kChunk = 32;          // hidden channels per step: 2 k16 steps of the project, 4 n8 tiles of the expand
inline constexpr int kMaxAccTiles = 8;     // m16n8 Y tiles per warp: 32 fp32 registers (with the depthwise run: ≤ 128 in all, 2 CTAs/SM)
inline constexpr int kTargetPixels = 512;  // output pixels a tile may reach (halo recompute (rows−1+K)/rows falls as it grows;
                                           // shared memory and the Y accumulators bound it first)
inline constexpr int kMaxImages = 16;      // whole images per tile at most (images_for)
inline constexpr int kRun = 7;             // output pixels of one row a depthwise thread makes (EfficientNet's Q: 112, 56, 28, 14, 7)
// Output rows one depthwise item makes at most (a column run of kRun pixels on each): the
// input rows it loads serve up to K of them, so a window row is loaded and converted
// (rows − 1)·stride + K times per `rows` output rows instead of K times per row. The
// accumulators (2·kRun per row) and the window stay in registers beside the Y accumulators
// of the project stages (32 registers): 3 rows at K = 3, stride 1 and 2 at other sizes
// without Y; with Y, 2 rows at stride 1 and 1 at stride 2 (whose window is twice as wide).
CONVLAB_HOST_DEVICE constexpr int dw_group_max(int K, int stride, bool project) {
  return project ? (stride == 1 ? 2 : 1) : (K == 3 && stride == 1 ? 3 : 2);
}
inline constexpr int kPairs = kChunk / 2;  // channel pairs of a chunk: the depthwise threads' inner index
inline constexpr int kPixelGroups = kThreads / kPairs;  // partial-sum slots (thread / kPairs)
static_assert(kChunk == 32, "the expand epilogue writes 4 n8 tiles and the project reads 2 k16 steps");
static_assert(kThreads % kPairs == 0, "a thread's channel pair (tid % kPairs) stays fixed across its work items");
static_assert(kRun >= 1 && kRun <= 8, "a run's window and accumulators live in registers");
inline constexpr int kLdChunk = odd_units_stride(kChunk);  // row stride of E, D and We chunks: a constant, so the
                                                           // depthwise's window loads take immediate offsets
inline constexpr std::size_t kMaxShared = 227 * 1024;         // H200 opt-in shared memory per block
inline constexpr std::size_t kSharedTwoCtas = 113 * 1024;     // two CTAs per SM (228 KB less 1 KB reserved per CTA)
inline constexpr std::size_t kSharedThreeCtas = 75 * 1024;    // three CTAs per SM (the stream's three-CTA form)

enum class Stage { sums, store, project };

// The tensor-core depthwise (gpu/lib/mbconv_fused.cuh, store stage): a chunk's taps as mma
// B fragments, [K²][9][4] words (tap, lane slot: 8 live and one of zeros, n8 block), then
// kZeroRowBytes of zeros, the row the gathers outside the image read.
inline constexpr std::size_t kZeroRowBytes = 64;
inline constexpr int kDwSlots = 9;                         // lane slots of a tap: 8 live, 1 of zeros
inline constexpr int kDwBlocks = 4;                        // n8 blocks of a 32-channel chunk
inline constexpr int kDwTapWords = kDwSlots * kDwBlocks;   // 36 words of one tap
inline constexpr int kDwTapBytes = 4 * kDwTapWords;        // 144: one lane's four words are 16 bytes of it
CONVLAB_HOST_DEVICE constexpr std::size_t dw_fragment_bytes(int K) { return std::size_t(K) * K * kDwTapBytes; }
// B = diag(w) of 8 channels as an m16n8k8 B fragment: lane 4g + t holds B[2t][g] (low half) and
// B[2t + 1][g] (high half), non-zero only where g / 2 == t: lane (g, g / 2) reads slot g, whose word
// is channel g's weight in half g % 2; the other lanes read slot 8, zeros.
CONVLAB_HOST_DEVICE constexpr int dw_fragment_slot(int lane) { return lane / 4 / 2 == lane % 4 ? lane / 4 : 8; }
CONVLAB_HOST_DEVICE constexpr std::uint32_t dw_fragment_word(int slot, std::uint16_t weight_bits) {
  return slot >= 8 ? 0u : slot % 2 ? std::uint32_t(weight_bits) << 16 : std::uint32_t(weight_bits);
}

// Output rows per depthwise item for a tile of `images` images of `rows` rows and `runs`
// column runs per row. A thread's time per chunk is about (items it takes) × (rows per item
// + 1: the extra window row and the item's set-up); each image's rows split into ⌈rows / g⌉
// equal groups. The g ≤ group_max of least cost, the larger on a tie: 3 at 5 × 56 (256 items,
// one each), 2 at 14 × 14 (3 would leave 96 of the 256 threads without an item).
constexpr int dw_rows_for(int rows, int runs, int group_max, int images = 1) {
  int best = 1, best_cost = 1 << 30;
  for (int g = 1; g <= group_max; ++g) {
    const int groups = (rows + g - 1) / g, per_group = (rows + groups - 1) / groups;
    const int items = images * groups * runs * kPairs, cost = (items + kThreads - 1) / kThreads * (per_group + 1);
    if (cost <= best_cost) best = per_group, best_cost = cost;
  }
  return best;
}

// ---- the depthwise's work items -----------------------------------------------------------
// Item i of a chunk is (run i / kPairs, channel pair i % kPairs). Run r is, with
// R = runs_per_row column runs per row and G = groups row groups per image:
// image r / (G·R) of the tile, row group (r / R) mod G of that image (output
// rows row·dw_rows .. +dw_rows − 1, clipped to the image), column slot r mod R.
// Images never share a run: a run's window rows are its own image's (rows
// outside the image are the zero padding, never the neighbour's rows). Within
// a row, slot s takes the column run 0, last, 1, 2, ..., last − 1 (columns
// ≥ Q are skipped): a warp holds runs 2k and 2k + 1, so the two edge runs of
// a row (whose windows need bound checks) share a warp and the others run the
// unchecked path without divergence.
struct DwRun {
  int image, row, q0;  // row: the row group within the image
};
// One thread's runs are r, r + kThreads / kPairs, ...: the step of kRunStep runs
// split as images·(G·R) + rows·R + slots, so the walk advances (image, row, slot)
// with adds and two compares instead of divisions per item. Computed on the
// host (Tile::dw), so the kernel reads the constants from its parameters.
inline constexpr int kRunStep = kThreads / kPairs;
struct DwSteps {
  int runs_per_row, groups;  // R, G
  int images, rows, slots;   // kRunStep = images·G·R + rows·R + slots, rows < G, slots < R
};
CONVLAB_HOST_DEVICE constexpr DwSteps dw_steps(int runs_per_row, int groups) {
  return {runs_per_row, groups, kRunStep / (runs_per_row * groups), (kRunStep / runs_per_row) % groups,
          kRunStep % runs_per_row};
}
struct DwRunWalk {
  int image, row, slot;
  CONVLAB_HOST_DEVICE DwRunWalk(int first_run, const DwSteps& s)
      : image(first_run / (s.runs_per_row * s.groups)), row(first_run / s.runs_per_row % s.groups),
        slot(first_run % s.runs_per_row) {}
  CONVLAB_HOST_DEVICE DwRun run(const DwSteps& s) const {
    const int column_run = slot == 0 ? 0 : slot == 1 ? s.runs_per_row - 1 : slot - 1;
    return {image, row, column_run * kRun};
  }
  CONVLAB_HOST_DEVICE void next(const DwSteps& s) {
    slot += s.slots, row += s.rows, image += s.images;
    if (slot >= s.runs_per_row) slot -= s.runs_per_row, ++row;
    if (row >= s.groups) row -= s.groups, ++image;
  }
};
CONVLAB_HOST_DEVICE inline DwRun dw_run(int run, const DwSteps& s) { return DwRunWalk(run, s).run(s); }

// Division of 0 ≤ n < 2^31 by a divisor d ≥ 1 fixed at launch, as a multiply-high, an add and a
// shift (Granlund & Montgomery; CUTLASS's FastDivmod): with l = ⌈log2 d⌉ and
// magic = ⌊2^32·(2^l − d)/d⌋ + 1, n / d = (umulhi(n, magic) + n) >> l. The host computes magic
// once; the kernel's row → image maps then take three instructions instead of a division loop.
struct FastDiv {
  std::uint32_t d = 1, magic = 1, shift = 0;
};
constexpr FastDiv fast_div(std::uint32_t d) {
  FastDiv f;
  f.d = d;
  while ((std::uint64_t(1) << f.shift) < d) ++f.shift;
  f.magic = std::uint32_t(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << f.shift) - d)) / d + 1);
  return f;
}
CONVLAB_HOST_DEVICE inline int fast_quotient(const FastDiv& f, int n) {
#if defined(__CUDA_ARCH__)
  const std::uint32_t hi = __umulhi(std::uint32_t(n), f.magic);
#else
  const std::uint32_t hi = std::uint32_t((std::uint64_t(std::uint32_t(n)) * f.magic) >> 32);
#endif
  return int((hi + std::uint32_t(n)) >> f.shift);
}

// How a tile pads E (tile_for's pad_e): not at all, with zero columns (the store plan's kPadE), or
// with zero columns and zero rows (its kPadRows).
enum class EPad { none, columns, rows };

// The tile geometry, computed on the host and passed by value.
struct Tile {
  int N, H, W, C, hidden, P, Q, C_out, stride, pad;
  int rows, tiles;                // output rows per tile, tiles per image
  int images, groups;             // whole images per tile (1 unless rows == P), image groups ⌈N / images⌉ (grid y)
  int dw_rows;                    // output rows per depthwise item (≤ dw_group_max): rows split into equal groups
  DwSteps dw;                     // the depthwise walk's shape and step (a full tile's groups; a short last tile
                                  // of an image uses its first groups only, so its runs map the same)
  int d_live, d_chunks;           // dbuf (store): dbuf_live(hidden), ⌈hidden / kChunk⌉
  int in_rows;                    // input rows a tile holds of each image at most
  int m_in, m_out;                // images·in_rows·W and images·rows·Q, rounded up to 16
  // From one image of a tile to the next (images > 1; 0 otherwise, where the kernel's image index is 0):
  // input pixels in xs and E (H·W), output pixels in D (P·Q), elements in dbuf (dbuf_offset(t, 1, 0, 0)).
  // Kernel parameters, so the depthwise's per-item offsets take them from the constant bank.
  int image_in, image_out, image_dbuf;
  // E's layout in shared memory: rows of ew pixels, the image's W columns from column e_left, and
  // e_image pixels from one image of a tile to the next (0 with one image). Unpadded (tile_for):
  // ew = W, e_left = 0, e_image = image_in. Padded (tile_for's pad_e): zero columns on both sides of
  // every row, as many as the depthwise's widest window reaches past the image, so that no window
  // load needs a column test; w_div divides a tile pixel by W (where the expand writes pixel m).
  int ew, e_left, e_image;
  bool e_padded;
  FastDiv w_div;
  // The tensor-core depthwise's pixel maps: a tile's output pixel → image (÷ rows·Q) → row (÷ Q).
  FastDiv image_div, q_div;
  int c_pad, cout_pad;            // C to 16, C_out to 8
  int ldx, lde, ldd, ldwe, ldwp;  // shared row strides, elements
  bool expand, residual;
  bool project;  // the stage holds Y accumulators (project): acc_tiles() bounds the tile
  bool vec;    // 16-byte copies (launcher: C, C_out, hidden multiples of 8, tensors 16-byte aligned)
  bool pairs;  // 32-bit y stores (launcher: C_out even, x and y 4-byte aligned)
  ref::Activation act;
  int splits;                      // CTAs per tile (split_tile): hidden chunks (sums, store)
  // Shared layout, bytes: each region's offset, the size of one buffer and (e, d) how many buffers.
  std::size_t x_off, e_off, e_bytes, d_off, d_bytes, we_off, we_bytes, wp_off, wp_bytes, dw_off, dw_bytes, dwf_off,
      dwf_bytes, v_off, v_bytes, red_off, red_bytes, bytes;
  int e_buffers, d_buffers;
  // E padded with rows as well (pad_e == EPad::rows; e_padded too): er rows an image, input row h at
  // row h − (p0·stride − pad), so rows outside the image (above and below) are zero rows and every
  // item of dw_rows rows reads its window rows without a test (e_row_padded_place); in_div divides
  // a tile row by in_rows. (Last in the struct: the other kernels' parameter offsets stay as they are.)
  int er;
  bool e_rows_padded;
  FastDiv in_div;
  CONVLAB_HOST_DEVICE int acc_tiles() const { return (m_out / 16) * (cout_pad / 8); }
};


// The layout of a tile of `rows` output rows, holding `images` whole images
// (images > 1 only when rows == P: then the tile reads every input row of each
// image, in_rows == H, and image i's pixels follow image i − 1's in xs, E and D).
inline Tile tile_for(const MBConvProblem& p, int rows, Stage stage, int images = 1, EPad pad_e = EPad::none) {
  const bool project = stage == Stage::project;
  const bool sums = stage == Stage::sums || stage == Stage::store;
  Tile t{};
  t.N = p.N, t.H = p.H, t.W = p.W, t.C = p.C, t.hidden = p.hidden(), t.P = p.P(), t.Q = p.Q(), t.C_out = p.C_out;
  t.stride = p.stride, t.pad = p.kernel / 2, t.expand = p.has_expand(), t.residual = p.has_residual(), t.act = p.activation;
  t.project = project;
  t.rows = rows;
  t.tiles = (t.P + rows - 1) / rows;
  t.images = rows == t.P ? std::max(1, images) : 1;
  t.groups = (p.N + t.images - 1) / t.images;
  // A whole image's last window ends at row (P − 1)·stride − pad + K ≥ H − stride + (K + 1)/2 ≥ H:
  // it reads every input row (in_rows == H, h0 = 0), so consecutive images' input rows are contiguous.
  t.in_rows = std::min(p.H, (rows - 1) * p.stride + p.kernel);
  const auto up = [](int v, int m) { return (v + m - 1) / m * m; };
  t.m_in = up(t.images * t.in_rows * p.W, 16);
  t.m_out = up(t.images * rows * t.Q, 16);
  t.c_pad = up(p.C, 16);
  t.cout_pad = up(p.C_out, 8);
  t.splits = 1;
  t.ldx = odd_units_stride(t.c_pad), t.lde = kLdChunk, t.ldd = kLdChunk;
  t.ldwe = kLdChunk, t.ldwp = odd_units_stride(t.cout_pad);
  t.d_live = dbuf_live(p.hidden()), t.d_chunks = (p.hidden() + kChunk - 1) / kChunk;
  const bool several = t.images > 1;  // then P·Q ≤ kTargetPixels / 2: the dbuf step fits an int
  t.image_in = several ? t.in_rows * p.W : 0;
  t.image_out = several ? rows * t.Q : 0;
  t.image_dbuf = several ? t.d_chunks * t.P * t.Q * kChunk : 0;
  t.image_div = fast_div(std::uint32_t(rows * t.Q)), t.q_div = fast_div(std::uint32_t(t.Q));
  t.ew = p.W, t.e_left = 0, t.e_image = t.image_in, t.er = t.in_rows, t.e_padded = false, t.e_rows_padded = false;
  t.w_div = fast_div(std::uint32_t(p.W)), t.in_div = fast_div(std::uint32_t(t.in_rows));
  t.dw_rows = dw_rows_for(rows, (t.Q + kRun - 1) / kRun, dw_group_max(p.kernel, p.stride, project), t.images);
  t.dw = dw_steps((t.Q + kRun - 1) / kRun, (rows + t.dw_rows - 1) / t.dw_rows);
  const std::size_t e = 2;  // 16-bit elements
  std::size_t off = 0;
  const auto take = [&](std::size_t bytes) { const std::size_t at = off; off = (off + bytes + 15) / 16 * 16; return at; };
  const auto region = [&](std::size_t one, int copies, std::size_t& size) {
    size = (one + 15) / 16 * 16;
    return take(size * copies);
  };
  // E of chunks k and k+1 (and k+2, copied two chunks ahead, without an expand layer); a block
  // of fewer chunks (e = 1 at C ≤ 32: one) needs no more buffers than it has chunks, and the
  // shared memory saved buys taller tiles.
  t.e_buffers = std::min(t.expand ? 2 : 3, t.d_chunks);
  t.d_buffers = project ? 1 : 0;
  const std::size_t taps = std::size_t(p.kernel) * p.kernel;
  int e_rows = t.m_in;  // unpadded: the expand writes every row of its m tiles
  if (pad_e != EPad::none) {  // padded: only the tile's input pixels, each at its place in a padded row
    const int q_last = (t.Q - 1) / kRun * kRun;  // the last run's first output column
    const int window_end = (q_last + kRun - 1) * p.stride - t.pad + p.kernel - 1;  // its window's last column
    t.e_padded = true;
    t.e_left = t.pad;
    t.ew = t.e_left + p.W + std::max(0, window_end - (p.W - 1));
    if (pad_e == EPad::rows) {  // rows for every group's items, whole: the last group's too
      const int groups = (rows + t.dw_rows - 1) / t.dw_rows;
      t.er = (groups * t.dw_rows - 1) * p.stride + p.kernel;
      t.e_rows_padded = true;
    }
    t.e_image = several ? t.er * t.ew : 0;
    e_rows = t.images * t.er * t.ew;
  }
  t.x_off = take(t.expand ? std::size_t(t.m_in) * t.ldx * e : 0);
  t.e_off = region(std::size_t(e_rows) * t.lde * e, t.e_buffers, t.e_bytes);
  t.d_off = region(std::size_t(t.m_out) * t.ldd * e, t.d_buffers, t.d_bytes);
  t.we_off = region(t.expand ? std::size_t(t.c_pad) * t.ldwe * e : 0, 2, t.we_bytes);
  t.wp_off = region(project ? std::size_t(kChunk) * t.ldwp * e : 0, 2, t.wp_bytes);
  t.dw_off = region(kChunk * taps * e, 2, t.dw_bytes);
  const std::size_t dwf_one = kChunk * taps * sizeof(float);
  t.dwf_off = region(stage == Stage::store ? std::max(dwf_one, dw_fragment_bytes(p.kernel) + kZeroRowBytes) : dwf_one, 2,
                     t.dwf_bytes);
  t.v_off = region(std::size_t(2 + (stage == Stage::project ? t.images : 1)) * kChunk * sizeof(float), 3, t.v_bytes);
  t.red_off = region(sums ? std::size_t(t.images) * kPixelGroups * kChunk * sizeof(float) : 0, 2, t.red_bytes);
  t.bytes = off;
  return t;
}

// The tensor-core depthwise's index maps (gpu/lib/mbconv_fused.cuh), per lane and m tile: a
// tile's output pixel pl (images after one another, rows·Q pixels each) -> its image and its pixel
// (p·Q + q, p from the tile's first row) in that image, by multiply-high (image_div).
struct TilePixel {
  int image, pix;
};
CONVLAB_HOST_DEVICE inline TilePixel split_tile_pixel(const Tile& t, int pl) {
  const int image = fast_quotient(t.image_div, pl);
  return {image, pl - image * int(t.image_div.d)};
}
// E's row (in the tile's E buffer) of the input pixel at tap (0, 0) of output pixel (oh, ow) of
// image `image` (rows from the tile's first output row p0; h0: the tile's first input row). Tap
// (r, c) is that row + r·W + c, where it falls inside the image.
CONVLAB_HOST_DEVICE inline int gather_row(const Tile& t, int image, int oh, int ow, int p0, int h0) {
  return image * t.image_in + ((p0 + oh) * t.stride - t.pad - h0) * t.W + ow * t.stride - t.pad;
}

// Element offset in dbuf of image n's hidden chunk `chunk` at pixel `pixel` (p·Q + q) of that image.
CONVLAB_HOST_DEVICE inline std::ptrdiff_t dbuf_offset(const Tile& t, int n, int chunk, std::ptrdiff_t pixel) {
  return ((std::ptrdiff_t(n) * t.d_chunks + chunk) * (std::ptrdiff_t(t.P) * t.Q) + pixel) * kChunk;
}
inline std::size_t dbuf_elems(const MBConvProblem& p) {
  return std::size_t(p.N) * ((p.hidden() + kChunk - 1) / kChunk) * std::size_t(p.P()) * p.Q() * kChunk;
}

inline bool tile_fits(const Tile& t, std::size_t shared_limit = kMaxShared) {
  return (!t.project || t.acc_tiles() <= kWarps * kMaxAccTiles) && t.bytes <= shared_limit;
}

// The tallest tile (whole output rows, at most kTargetPixels pixels, at least
// one row) that leaves room for two CTAs per SM; failing that, the tallest
// that fits at all; rows == 0 when even one row does not. One exception: where
// the two-CTA tile reads more than twice the input rows its outputs need
// (in_rows > 2·rows·stride: a 5 × 5 window at stride 2 on one output row reads
// 5 rows for 2), the expand it recomputes costs more than the second CTA's
// latency hiding buys, and the tallest one-CTA tile is taken instead.
// pad_e: the tile of a kernel with padded E (tile_for's pad_e: EPad::columns, or EPad::rows for
// columns and rows), whose larger E buffers may take a row less near the limits.
inline Tile choose_tile(const MBConvProblem& p, Stage stage, EPad pad_e = EPad::none) {
  const int top = std::max(1, std::min(p.P(), kTargetPixels / std::max(1, p.Q())));
  const auto tallest = [&](std::size_t limit) {
    for (int rows = top; rows >= 1; --rows) {
      const Tile t = tile_for(p, rows, stage, 1, pad_e);
      if (tile_fits(t, limit)) return t;
    }
    Tile none{};
    none.rows = 0;
    return none;
  };
  const Tile two = tallest(kSharedTwoCtas);
  if (two.rows > 0 && two.in_rows <= 2 * two.rows * p.stride) return two;
  const Tile one = tallest(kMaxShared);
  return one.rows > two.rows ? one : two;
}

// Whole images per tile for a stage that makes D, where one tile is a whole
// image (rows == P), given one-image tile `one` and `resident`, the CTAs the
// device runs at once. The cost model: a chunk costs a CTA about
// max(L, work), L the latency of the chunk's serial chain (barrier, expand
// mma + SiLU, depthwise, sums) and the work proportional to the tile's
// pixels. A small image (7 × 7: 49 pixels, 4 m16 tiles, 112 depthwise items
// for 256 threads) sits far below L, so m images per tile do m images' work
// per chunk in little more than one image's time. Three bounds on m:
//   pixels  m·P·Q ≤ kTargetPixels, the size of the tall tiles of large images
//           (5 × 56 = 280 pixels), which run near their throughput;
//   grid    at least two waves of CTAs (2·resident) left. sums and store split
//           the hidden chunks over CTAs instead (split_tile: each chunk's D and
//           sums stand alone), so the grid can hold ⌈N/m⌉·chunks CTAs: m ≤
//           N·chunks / (2·resident). Grouping images and splitting chunks
//           trade the same CTAs, but the split keeps the work per chunk and
//           grouping raises it. project does not split (each split would make
//           D again): m ≤ N / (2·resident);
//   memory  two CTAs per SM (kSharedTwoCtas) and the Y accumulators (tile_fits).
// And m ≤ kMaxImages: the tensor-core depthwise's sums give each image one row of an m16 tile.
inline int images_for(const MBConvProblem& p, Stage stage, const Tile& one, int resident, EPad pad_e = EPad::none) {
  if (one.rows == 0 || one.rows != one.P || one.bytes > kSharedTwoCtas) return 1;
  const long long want = 2LL * std::max(1, resident);
  const long long chunks = (p.hidden() + kChunk - 1) / kChunk;
  const long long units = stage == Stage::project ? p.N : p.N * chunks;  // the most CTAs the grid can have
  const int by_grid = int(std::min<long long>(p.N, std::max(1LL, units / want)));
  const int by_pixels = std::min(kMaxImages, std::max(1, kTargetPixels / std::max(1, one.P * one.Q)));
  for (int m = std::min(by_grid, by_pixels); m > 1; --m)
    if (tile_fits(tile_for(p, one.rows, stage, m, pad_e), kSharedTwoCtas)) return m;
  return 1;
}

// Padded E (Tile::e_padded): tile pixel m (rows of W pixels, images after one another) sits at
// m + ⌊m / W⌋·(ew − W) + e_left, after its row's e_left zero columns; pad column pc (0 ≤ pc < ew − W)
// of a row is column pc (left of the image) or W + pc (right of it).
CONVLAB_HOST_DEVICE inline int e_padded_place(const Tile& t, int m) {
  return m + fast_quotient(t.w_div, m) * (t.ew - t.W) + t.e_left;
}
CONVLAB_HOST_DEVICE inline int e_pad_column(const Tile& t, int pc) { return pc < t.e_left ? pc : t.W + pc; }
// Row-padded E (Tile::e_rows_padded): tile pixel m, in tile row R = ⌊m / W⌋ of image ⌊R / in_rows⌋,
// sits in E row R + top + image·(er − in_rows), column e_left + m − R·W; top = h0 − (p0·stride − pad),
// the zero rows above the tile's first input row h0 (nonzero only where the window reaches above the
// image: the image's first tile).
CONVLAB_HOST_DEVICE inline int e_row_padded_place(const Tile& t, int m, int top) {
  const int row = fast_quotient(t.w_div, m), image = fast_quotient(t.in_div, row);
  return (row + top + image * (t.er - t.in_rows)) * t.ew + t.e_left + (m - row * t.W);
}
// Row-padded E's zeros, per buffer (zero_e_outside): the 16-byte pieces of the places the expand does
// not write, `real_rows` of each image's rows from row `top` being the tile's input rows. First the
// pad rows of each image, whole (a row is ew pixels of kLdChunk elements, contiguous), then the pad
// columns of the real rows (each pixel's 4 pieces of channels). e_zero_piece: piece i's byte offset.
CONVLAB_HOST_DEVICE inline int e_zero_pieces(const Tile& t, int real_rows) {
  constexpr int kPixelPieces = kLdChunk * 2 / 16, kChannelPieces = kChunk * 2 / 16;
  return t.images * ((t.er - real_rows) * t.ew * kPixelPieces + real_rows * (t.ew - t.W) * kChannelPieces);
}
CONVLAB_HOST_DEVICE inline std::size_t e_zero_piece(const Tile& t, int top, int real_rows, int i) {
  constexpr int kPixelPieces = kLdChunk * 2 / 16, kChannelPieces = kChunk * 2 / 16;
  const int row_pieces = t.ew * kPixelPieces, pad_pieces = (t.er - real_rows) * row_pieces;
  if (i < t.images * pad_pieces) {  // a pad row: above the real rows (k < top rows' pieces) or below them
    const int image = i / pad_pieces, k = i - image * pad_pieces;
    return (std::size_t(image) * t.er * row_pieces + k + (k < top * row_pieces ? 0 : real_rows * row_pieces)) * 16;
  }
  i -= t.images * pad_pieces;
  const int pads = t.ew - t.W, per_row = pads * kChannelPieces;
  const int row = i / per_row, rest = i - row * per_row;  // row: image-major over the real rows
  const int image = row / real_rows, pc = rest / kChannelPieces, piece = rest - pc * kChannelPieces;
  const int place = (image * t.er + top + (row - image * real_rows)) * t.ew + e_pad_column(t, pc);
  return std::size_t(place) * kPixelPieces * 16 + std::size_t(piece) * 16;
}

// The launched tile: choose_tile's rows, then images_for's images.
inline Tile choose_tile(const MBConvProblem& p, Stage stage, int resident, EPad pad_e = EPad::none) {
  const Tile one = choose_tile(p, stage, pad_e);
  const int images = images_for(p, stage, one, resident, pad_e);
  return images > 1 ? tile_for(p, one.rows, stage, images, pad_e) : one;
}

// Whether the store stage pads E (the store plan's kPadE; measured in lesson 11's NOTES, wave-3h).
// Padding saves the edge runs' checked window loads and costs a multiply-high per E row in the
// expand and (ew − W)·in_rows pixels of shared memory. It pays where every run of a row is an edge
// run (Q ≤ 2·kRun) or the window is wide (K = 5, stride 2: 11 and 15 columns against 9), and not
// where the larger E takes a tile's image (7² at K = 5: 2 images a tile unpadded, 1 padded).
inline bool pad_e_pays(const MBConvProblem& p, int resident) {
  const int runs = (p.Q() + kRun - 1) / kRun;
  if (!(runs <= 2 || p.kernel == 5 || p.stride == 2)) return false;
  return choose_tile(p, Stage::store, resident, EPad::columns).images == choose_tile(p, Stage::store, resident).images;
}

// Whether the store stage pads E's rows as well where it pads its columns (the store plan's
// kPadRows): where the taller E keeps the column-padded tile's rows and images (so its items, and
// the sums' tiles, stay the same).
inline bool pad_rows_fit(const MBConvProblem& p, int resident) {
  const Tile columns = choose_tile(p, Stage::store, resident, EPad::columns);
  const Tile rows = choose_tile(p, Stage::store, resident, EPad::rows);
  return rows.rows == columns.rows && rows.images == columns.images;
}

// Split a tile over several CTAs when the grid (tiles · groups) would not fill the
// GPU twice over (small images: one tile per image and a long serial hidden
// loop). The stages that make D split the hidden chunks (each chunk's D and
// sums are independent of the others); the project stage does not split
// (that would recompute the expand and depthwise per split).
// `resident`: the CTAs of this stage the device runs at once (one wave).
// How many: for a tile of one image, the S of least waves(S) · (⌈chunks / S⌉ + 1), waves(S) =
// ⌈ctas·S / resident⌉: a CTA's time is its chunks plus about one chunk of set-up (the x tile, the
// pipeline's first expand and last depthwise), and a part-filled last wave costs a whole one.
// Measured (lesson 11's NOTES, wave-3f, CONVLAB_MBCONV_SPLITS swept, H100): at C = 80 and 112
// @ 14² S = 2 (one wave of 256 CTAs) beat the old two-wave rule's S = 5 by 8 and 11 %, and at
// 28² both rules give S = 2. Tiles of several images (images_for, 7²) keep the two-wave rule their
// grouping was chosen against: S = ⌈2·resident / ctas⌉.
inline void split_tile(Tile& t, Stage stage, int resident) {
  t.splits = 1;
  const long long ctas = 1LL * t.tiles * t.groups;
  const long long want = 2LL * std::max(1, resident);  // two waves
  if (ctas >= want || !(stage == Stage::sums || stage == Stage::store)) return;
  const int chunks = (t.hidden + kChunk - 1) / kChunk;
  if (t.images > 1) {
    t.splits = int(std::min<long long>((want + ctas - 1) / ctas, chunks));
    return;
  }
  const long long wave = std::max(1, resident);
  long long best = -1;
  for (int s = 1; s <= chunks; ++s) {
    const long long waves = (ctas * s + wave - 1) / wave;
    const long long cost = waves * ((chunks + s - 1) / s + 1);
    if (best < 0 || cost < best) best = cost, t.splits = s;
  }
}

// Where CTA (bx, by) of a stage's grid (t.tiles·t.splits, groups) works: its tile of the image
// group, its part (it makes chunks part, part + splits, ...) and its image group. The grid's own
// order takes the parts fastest; part_major (the store plan's kPartMajor) takes the linear CTA
// index c = by·gridDim.x + bx part-major, c = (part·groups + group)·tiles + tile, so that the two
// CTAs a wave puts on one SM (about c and c + SMs) are different parts: with an odd chunk count,
// one long part and one short one, not two long ones beside an SM of two short ones.
struct SplitPlace {
  int tile, part, group;
};
CONVLAB_HOST_DEVICE inline SplitPlace split_place(const Tile& t, int bx, int by, int groups, bool part_major) {
  if (!part_major) return {bx / t.splits, bx % t.splits, by};
  const int per = t.tiles * groups, c = by * t.tiles * t.splits + bx;
  const int part = c / per, rest = c - part * per;
  return {rest % t.tiles, part, rest / t.tiles};
}

// CONVLAB_MBCONV_SPLITS=S (an experiment knob, exercise 5 of lesson 11): the stages that make D
// run S CTAs per tile (at most one per hidden chunk) instead of split_tile's choice; launch_stage
// passes the variable's value here. Which chunks a CTA makes changes (chunk k of part s is
// s + k·S), not what it computes: each chunk's D and sums stand alone. Unset or empty: 0 (keep
// split_tile's). Anything but an integer 1..4096: an error naming the variable.
inline int forced_splits(const char* value) {
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  const long s = std::strtol(value, &end, 10);
  if (*end != '\0' || s < 1 || s > 4096 || !(*value >= '0' && *value <= '9'))
    throw std::invalid_argument(std::string("CONVLAB_MBCONV_SPLITS must be an integer from 1 to 4096, not '") + value + "'");
  return int(s);
}

// Whether the 16-byte copy path applies: every row the kernel copies starts on
// 16 bytes (C, C_out, hidden multiples of 8, so a chunk's width is too) and
// the tensors themselves are 16-byte aligned (null pointers: unused, fine).
inline bool vector_copies_ok(const MBConvProblem& p, std::initializer_list<const void*> tensors) {
  if (p.C % 8 != 0 || p.C_out % 8 != 0 || p.hidden() % 8 != 0) return false;
  for (const void* q : tensors)
    if (reinterpret_cast<std::uintptr_t>(q) % 16 != 0) return false;
  return true;
}
inline bool aligned_to(const void* q, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(q) % bytes == 0; }

// ---- pass 2 of the store plan (11c): a GEMM with a gated A operand -------------------------
// Y[N·P·Q, C_out] = (D ⊙ G)·Wp, D read from dbuf, G[row, j] = gate[image of row, j]: the rows of a
// block are pixels of consecutive images (a small image fills only part of a block), so the
// block stages, per step of ks hidden channels, the gate rows of every image it touches (`span`).
// gpu/lib/mbconv_project.cuh is the kernel; its CTA tile is bm × bn × ks, one of kProjectTiles.
// The kernel is persistent: a grid of at most `resident` CTAs per SM, CTA c making blocks
// c, c + grid, c + 2·grid, ... through one pipeline whose stages run on across block boundaries.
// cp.async pipeline depth: stages of 32 channels 4 deep (3 in flight, 96 channels), of 64 channels 3
// deep (2 in flight, 128 channels; a fourth would push 64 × 128 tiles past two CTAs per SM).
CONVLAB_HOST_DEVICE constexpr int project_stages(int ks) { return ks == 32 ? 4 : 3; }
struct ProjectShape {
  int bm, bn, ks;  // rows, columns, hidden channels per pipeline stage (32: one dbuf chunk; 64: two)
};
// (128 × 128 would need more than the 128 registers a thread has at two CTAs per SM: it spills.
// 64-channel stages only where the stage stays small: bm = 64.)
inline constexpr ProjectShape kProjectTiles[] = {{256, 32, 32}, {128, 32, 32}, {128, 64, 32}, {64, 64, 32},
                                                 {64, 128, 32}, {64, 64, 64},  {64, 128, 64}};

struct ProjectTile {
  int bm = 0, bn = 0, ks = 0;         // block: bm rows (pixels, across images) × bn output columns; ks channels a stage
  int m = 0;                          // rows: N·P·Q (< 2^31: project_rows_fit)
  int pq = 0, images = 0, span = 0;   // pixels per image, N, images a bm-row block touches at most
  FastDiv pq_div, nb_div;             // ÷ P·Q (row → image), ÷ n_blocks (block → row block, column block)
  int m_blocks = 0, n_blocks = 0;     // blocks: m_blocks · n_blocks, block b = (b / n_blocks, b % n_blocks)
  int blocks = 0, resident = 0, grid = 0;  // CTAs per SM (shared memory), CTAs: min(blocks, resident · SMs)
  int sms = 0;
  int hidden = 0, d_live = 0, chunks = 0, steps = 0, c = 0, c_out = 0;  // steps: stages per block, ⌈hidden / ks⌉
  int stages = 0;                     // pipeline depth: project_stages(ks)
  int lda = 0, ldb = 0, ldx = 0;      // shared row strides (elements) of the A, B and X regions
  int ldw = 0;                        // Wp's row stride in global memory: C_out rounded up to 8 (launcher)
  int x_buffers = 0;                  // X regions: a block's residual rows are in flight for stages − 1 stages
  bool pairs = false, residual = false;
  bool x_staged = false;              // residual rows copied by cp.async with the block's last stage (launcher:
                                      // C a multiple of 8 and x 16-byte aligned; else the epilogue loads them)
  // Regions, bytes: per stage A [bm][lda], B [ks][ldb], G [span][ks]; `stages` stages, then
  // x_buffers regions X [bm][ldx] (the x rows and columns of a block; x_buffers = 0 without a residual).
  std::size_t a_bytes = 0, b_bytes = 0, g_bytes = 0, stage_bytes = 0, x_bytes = 0, bytes = 0;
};

// Pass 2 indexes rows with 32-bit integers, a block's rows past the last included: N·P·Q ≤ 2^31 − 512
// (launch_project throws otherwise).
inline bool project_rows_fit(const MBConvProblem& p) { return double(p.N) * p.P() * p.Q() <= 2147483648.0 - 512; }

// The images a block of `bm` consecutive rows can touch: ⌊(bm − 1)/pq⌋ + 2 at most (a block
// that starts at an image's last pixel), never more than N.
constexpr int project_span(int bm, int pq, int images) { return std::min(images, (bm - 1) / pq + 2); }

// The X regions a CTA needs: the x rows of block j are copied with its last stage, stages − 1
// stages before the epilogue reads them, and block j + x's are copied x·steps stages after block j's;
// that copy may reuse block j's region only once block j's epilogue is done: x·steps ≥ stages.
constexpr int project_x_buffers(int steps, int stages) { return (stages + steps - 1) / steps; }

// x_staged: the launcher's x is 16-byte aligned (the tile stages the residual only where C is a
// multiple of 8 too).
inline ProjectTile project_tile_for(const MBConvProblem& p, ProjectShape s, int sms, bool x_staged = true) {
  ProjectTile t;
  t.bm = s.bm, t.bn = s.bn, t.ks = s.ks;
  t.pq = p.P() * p.Q(), t.images = p.N, t.m = int(std::min<double>(double(p.N) * t.pq, 2147483647.0));
  t.pq_div = fast_div(std::uint32_t(std::max(1, t.pq)));
  t.span = project_span(s.bm, t.pq, p.N);
  t.m_blocks = int((std::int64_t(t.m) + s.bm - 1) / s.bm), t.n_blocks = (p.C_out + s.bn - 1) / s.bn;
  t.nb_div = fast_div(std::uint32_t(t.n_blocks));
  t.blocks = int(std::min<std::int64_t>(std::int64_t(t.m_blocks) * t.n_blocks, 2147483647));
  t.hidden = p.hidden(), t.d_live = dbuf_live(p.hidden()), t.chunks = (p.hidden() + kChunk - 1) / kChunk;
  t.steps = (p.hidden() + s.ks - 1) / s.ks;
  t.c = p.C, t.c_out = p.C_out, t.residual = p.has_residual();
  t.lda = odd_units_stride(s.ks), t.ldb = odd_units_stride(s.bn), t.ldx = odd_units_stride(s.bn);
  t.x_staged = t.residual && x_staged && p.C % 8 == 0;
  t.stages = project_stages(s.ks);
  t.x_buffers = t.x_staged ? project_x_buffers(t.steps, t.stages) : 0;
  const auto up16 = [](std::size_t b) { return (b + 15) / 16 * 16; };
  t.a_bytes = up16(std::size_t(s.bm) * t.lda * 2);
  t.b_bytes = up16(std::size_t(s.ks) * t.ldb * 2);
  t.g_bytes = up16(std::size_t(t.span) * s.ks * 2);
  t.stage_bytes = t.a_bytes + t.b_bytes + t.g_bytes;
  t.x_bytes = up16(std::size_t(s.bm) * t.ldx * 2);
  t.bytes = t.stages * t.stage_bytes + t.x_buffers * t.x_bytes;
  t.resident = t.bytes <= kSharedTwoCtas ? 2 : 1;  // __launch_bounds__(kThreads, 2): registers allow two
  t.sms = std::max(1, sms);
  t.grid = int(std::min<std::int64_t>(t.blocks, std::int64_t(t.resident) * t.sms));
  return t;
}

// Row m of Y (pixel m % P·Q of image m / P·Q): where its 32 channels of chunk 0 start in dbuf
// (chunk k's are k·P·Q·32 elements further: dbuf_offset's layout), and its image's slot in the
// gates a block starting at row m0 stages (0 .. span − 1). 32-bit rows, no division.
CONVLAB_HOST_DEVICE inline std::ptrdiff_t project_row_offset(const ProjectTile& t, int m) {
  const int n = fast_quotient(t.pq_div, m), pixel = m - n * t.pq;
  return (std::ptrdiff_t(n) * t.chunks * t.pq + pixel) * kChunk;
}
CONVLAB_HOST_DEVICE inline int project_gate_slot(const ProjectTile& t, int m0, int m) {
  return fast_quotient(t.pq_div, m) - fast_quotient(t.pq_div, m0);
}

// ---- pass 2's cost model, counted from the kernel's SASS (per warp, per stage) -------------
// A warp of a bm × bn tile makes (16·kMT) × 32 of it, kMT = bm·(bn/32)/(16·kWarps). Per k16 step
// and m tile: 4 mma, and ≈ 16 others (an A ldmatrix, 4 gate loads, 4 f16x2 multiplies and their
// addresses); per k16 step ≈ 2 more (the B ldmatrix pairs, immediate offsets). Per stage: ≈ 10
// per 16-byte copy of the thread (compare, select, pointer step, cp.async) and ≈ 48 for the wait,
// barrier, commit and the loop's bookkeeping. Per block: ≈ 20 per stored pair of the epilogue
// (kMT·4·2 of them: bias, residual, pack, address, bounds) and ≈ 160 for the block's set-ups.
// Fitted to nvdisasm's common path per stage at 256 × 32 × 32 (182 instructions, 16 mma),
// 64 × 64 × 64 (170, 16 mma) and 64 × 128 × 64 (278, 32 mma): within 5 % of each.
struct ProjectCount {
  double mma, other;  // per warp and stage
  double block;       // per warp and block (epilogue and set-ups)
};
constexpr ProjectCount project_count(const ProjectTile& t) {
  const int wn = t.bn / 32, mt = t.bm * wn / (16 * kWarps), k16 = t.ks / 16;
  const double copies = (double(t.bm) * t.ks / 8 + double(t.ks) * t.bn / 8 + double(t.span) * t.ks / 8) / kThreads;
  const double mma = 4.0 * mt * k16;
  const double other = k16 * (mt * 16 + 2) + 10 * copies + 48;
  return {mma, other, mt * 4 * 2 * 20.0 + 160};
}
// Cycles of a warp per instruction when its chain of copies, barriers, fragment loads and mma
// waits on latency: 16 warps per SM at 51 % of the issue slots (pass 2 at 7², measured) is
// 16 / (4 · 0.51) ≈ 8.
inline constexpr double kProjectWarpCpi = 8.0;
// The time of pass 2 in cycles, the larger of two counts:
//   issue  the busiest SM's instructions over its 4 schedulers. CTA c makes blocks c, c + grid,
//          ...; the block scheduler puts CTAs s, s + sms, ... on SM s, so SM s makes blocks
//          s, s + sms, ...: ⌈blocks / sms⌉ at most;
//   chain  the busiest CTA's blocks (⌈blocks / grid⌉) one after another, each warp's
//          instructions at kProjectWarpCpi cycles: a CTA whose SM neighbour has finished runs
//          its last block alone (the tail of a grid that is not a whole number of waves).
inline double project_cycles(const ProjectTile& t) {
  const ProjectCount c = project_count(t);
  const double per_block = t.steps * (c.mma + c.other) + c.block;  // per warp
  const double sm_blocks = double((std::int64_t(t.blocks) + t.sms - 1) / t.sms);
  const double cta_blocks = double((std::int64_t(t.blocks) + t.grid - 1) / t.grid);
  return std::max(sm_blocks * per_block * kWarps / 4.0, cta_blocks * per_block * kProjectWarpCpi);
}
// DRAM bytes: D (each column block reads its rows' D; blocks of one row block run together, so
// the re-reads are L2 hits: counted once), Wp per CTA from L2 (not counted), x and y once.
inline double project_dram_bytes(const MBConvProblem& p) {
  const double m = double(p.N) * p.P() * p.Q();
  return m * dbuf_live(p.hidden()) * 2 + m * p.C_out * 2 * (p.has_residual() ? 2 : 1);
}

// The tile for `sms` SMs: among the tiles that leave room for two CTAs per SM (failing that,
// among those that fit at all), the fewest cycles (project_cycles), then the fewest column
// blocks (each re-reads its rows' D), then the larger block, then the wider stage. DRAM time is
// the same for every tile, so it does not enter the choice. bm = 0 when no tile fits (a span of
// thousands of 1-pixel images).
inline ProjectTile choose_project_tile(const MBConvProblem& p, int sms, bool x_staged = true) {
  for (std::size_t limit : {kSharedTwoCtas, kMaxShared}) {
    ProjectTile best;
    double best_cost = 0.0;
    for (ProjectShape s : kProjectTiles) {
      const ProjectTile t = project_tile_for(p, s, sms, x_staged);
      if (t.bytes > limit || std::int64_t(t.m_blocks) * t.n_blocks > 2147483647) continue;
      const double cost = project_cycles(t);
      const auto key = [](const ProjectTile& a) { return std::make_tuple(-a.n_blocks, a.bm * a.bn, a.ks); };
      if (best.bm == 0 || cost < best_cost * 0.999 || (cost <= best_cost * 1.001 && key(t) > key(best)))
        best = t, best_cost = cost;
    }
    if (best.bm != 0) return best;
  }
  return ProjectTile{};
}

// ---- pass 2 as a stream of warp tasks (gpu/lib/mbconv_project_stream.cuh) --------------------
// Each warp makes 16 rows of Y at a time, reading their D from dbuf straight into its mma A
// fragments: lane 4·g + t loads one 16-byte piece of row g and one of row g + 8 per chunk,
// channels 8t .. 8t + 7, whose four registers are the A registers of the chunk's two k16 steps.
// The mma sums over k in any order as long as A and B agree, so B's rows are staged in the
// order these registers give: step s, fragment k (mma_a_coord's column) reads channel
// stream_channel(s, k) of the chunk. Register r of lane t holds channels 8t + 2r, 8t + 2r + 1;
// step s takes r = 2s as its low k pair (k = 2t, 2t + 1) and r = 2s + 1 as its high one (k + 8).
CONVLAB_HOST_DEVICE constexpr int stream_channel(int s, int k) {
  return 8 * ((k % 8) / 2) + 4 * s + 2 * (k / 8) + k % 2;
}
// The register (0..3) of a lane's 16-byte piece that fragment register `reg` (mma_a_coord's:
// bit 0 the row half, bit 1 the k half) of step s takes.
CONVLAB_HOST_DEVICE constexpr int stream_piece_register(int s, int reg) { return 2 * s + (reg >> 1); }

inline constexpr int kStreamGroup = 4;   // chunks whose pieces a warp loads before it multiplies them
inline constexpr int kStreamMaxNT = 6;   // n8 tiles of Y a warp holds at most (24 accumulators)
// Wider Wp is cut into `parts` column parts of nt n8 tiles each (nt ≤ kStreamMaxNT). Two forms:
//   whole Wp   every CTA stages Wp and bp whole, parts·nt·8 columns (zeros past
//              C_out); a task is (16 rows, part), the parts of one row tile consecutive tasks, so a
//              CTA's warps read those rows' D once from DRAM and again from L1 or L2.
//   cta_part   (stream_tile_for's allow_cta_part, run_store_plan's kStreamCtaPart: 11c, not 11e)
//              where the whole Wp does not fit
//              kSharedTwoCtas: CTA b stages only the nt·8 columns of part b % parts (zeros past
//              C_out) and its warps make that part of every row tile they take; the parts of one
//              row tile are CTAs with adjacent blockIdx, resident together, so D comes from DRAM
//              once and from L2 for the other parts. Where one part of nt tiles does not fit
//              either, nt shrinks (more parts) until it fits or nt = 1.
// StreamTile is the stream kernel's parameter: its fields keep the offsets the rungs' kernels were
// built with (cta_part sits in the padding after pairs; ⌈m / 16⌉ is stream_row_tiles, not a field).
struct StreamTile {
  int m = 0, pq = 0;            // rows N·P·Q (< 2^31: project_rows_fit), pixels per image
  FastDiv pq_div;               // ÷ P·Q: row → image
  int hidden = 0, chunks = 0, d_live = 0, c = 0, c_out = 0;
  int parts = 0, nt = 0;        // column parts, n8 tiles a part: parts·nt ≥ ldw / 8, nt ≤ kStreamMaxNT
  FastDiv parts_div;            // ÷ parts: task → (row tile, part); cta_part: blockIdx → (row group, part)
  int ldw = 0;                  // Wp's row stride in global memory (C_out rounded up to 8)
  int cols = 0, ldb = 0;        // staged columns (parts·nt·8, cta_part nt·8), their row stride (odd 16-byte units)
  int tasks = 0;                // ⌈m / 16⌉ · parts warp tasks (16 rows, one part)
  bool residual = false, pairs = false;
  bool cta_part = false;        // each CTA stages and makes one part (else all of Wp, every part)
  std::size_t wb_bytes = 0, bytes = 0;  // shared: Wp staged (chunks·32 rows of ldb), then bp (cols)
};
// Row tiles of 16 rows, ⌈m / 16⌉ (m < 2^31).
CONVLAB_HOST_DEVICE inline int stream_row_tiles(const StreamTile& t) { return int((unsigned(t.m) + 15u) / 16u); }
// The tile of `parts` parts of `nt` n8 tiles, whole Wp staged or (cta_part) one part's columns.
inline void stream_tile_cut(StreamTile& t, int n8, int max_nt, bool cta_part) {
  t.parts = (n8 + max_nt - 1) / max_nt, t.nt = (n8 + t.parts - 1) / t.parts;
  t.parts_div = fast_div(std::uint32_t(t.parts));
  t.cta_part = cta_part;
  t.cols = 8 * t.nt * (cta_part ? 1 : t.parts), t.ldb = odd_units_stride(t.cols);
  t.tasks = int(std::min<std::int64_t>(std::int64_t(stream_row_tiles(t)) * t.parts, 2147483647));
  t.wb_bytes = std::size_t(t.chunks) * kChunk * t.ldb * 2;
  t.bytes = t.wb_bytes + (std::size_t(t.cols) * 2 + 15) / 16 * 16;
}
// The whole-Wp tile; where it does not fit and allow_cta_part (11c), the cta_part tile; not
// allowed (11e), a Wp past kSharedTwoCtas leaves the stream: stream_tile_fits says no.
inline StreamTile stream_tile_for(const MBConvProblem& p, int ldw, bool allow_cta_part = false) {
  StreamTile t;
  t.pq = p.P() * p.Q(), t.m = int(std::min<double>(double(p.N) * t.pq, 2147483647.0));
  t.pq_div = fast_div(std::uint32_t(std::max(1, t.pq)));
  t.hidden = p.hidden(), t.chunks = (p.hidden() + kChunk - 1) / kChunk, t.d_live = dbuf_live(p.hidden());
  t.c = p.C, t.c_out = p.C_out, t.residual = p.has_residual();
  t.ldw = ldw;
  const int n8 = std::max(1, ldw / 8);
  stream_tile_cut(t, n8, kStreamMaxNT, false);
  if (t.bytes <= kSharedTwoCtas || !allow_cta_part) return t;
  // One part a CTA, the widest part that fits (its bytes fall as nt does); nt = 1 that does not
  // fit is returned as it is, and stream_tile_fits says no.
  for (int nt = kStreamMaxNT; nt >= 1; --nt) {
    stream_tile_cut(t, n8, nt, true);
    if (t.bytes <= kSharedTwoCtas) break;
  }
  return t;
}
// The three-CTA form (launch_project_stream's kThree): the cta_part walk at three CTAs an SM (24
// warps: __launch_bounds__(kThreads, 3), 80 registers), one part of the widest nt whose staged
// columns fit kSharedThreeCtas. Where a two-CTA tile leaves a wave's warps with one task or two,
// the extra warps make the round whole (C = 80 @ 14²: 3 136 tasks on 2 112 warps at two CTAs, on
// 3 168 at three). nt = 1 that does not fit is returned as it is: stream_tile_fits(t,
// kSharedThreeCtas) says no.
inline StreamTile stream_tile_three(const MBConvProblem& p, int ldw) {
  StreamTile t = stream_tile_for(p, ldw, false);
  const int n8 = std::max(1, ldw / 8);
  for (int nt = kStreamMaxNT; nt >= 1; --nt) {
    stream_tile_cut(t, n8, nt, true);
    if (t.bytes <= kSharedThreeCtas) break;
  }
  return t;
}
// Which tasks warp `warp` of CTA `block` (of `grid`) makes: first, first + step, ... < end. A task
// is (row tile fast_quotient(div, task), the part whose first staged column is
// 8·nt·(task − tile·per)); the part's first column of Y is that plus col0.
//   whole Wp   tasks b·kWarps + w, stepping by grid·kWarps over row tiles·parts; div ÷ parts, per parts,
//              col0 0 (the staged columns are Y's). The kernel's whole-Wp form runs this walk
//              written out in its loop (mbconv_project_stream.cuh), the rungs' code as measured.
//   cta_part   CTA b makes part b % parts of row tiles (b / parts)·kWarps + w, stepping by
//              (grid / parts)·kWarps (grid a multiple of parts: stream_grid); div ÷ 1, per 1, col0 the
//              part's first column, 8·nt·(b % parts) (the staged column of Y's column o is o − col0).
// Both forms run the same per-task arithmetic (fast_quotient, a multiply-add); only the operands differ.
struct StreamWalk {
  int first = 0, step = 0, end = 0;
  FastDiv div;
  int per = 1, col0 = 0;
};
CONVLAB_HOST_DEVICE inline StreamWalk stream_walk(const StreamTile& t, int block, int grid, int warp) {
  StreamWalk w;
  if (t.cta_part) {
    const int group = fast_quotient(t.parts_div, block);
    w.first = group * kWarps + warp, w.step = fast_quotient(t.parts_div, grid) * kWarps, w.end = stream_row_tiles(t);
    w.div.d = 1, w.div.magic = 1, w.div.shift = 0;  // fast_div(1): (umulhi(n, 1) + n) >> 0 = n
    w.per = 1, w.col0 = 8 * t.nt * (block - group * t.parts);
  } else {
    w.first = block * kWarps + warp, w.step = grid * kWarps, w.end = t.tasks;
    w.div = t.parts_div, w.per = t.parts, w.col0 = 0;
  }
  return w;
}
// The stream's grid for `resident` CTAs of one wave: whole Wp, one CTA per kWarps tasks up to
// `resident`; cta_part, a multiple of parts (the parts of a row group side by side), at most
// `resident` rounded down to one and at least parts.
inline int stream_grid(const StreamTile& t, int resident) {
  if (!t.cta_part)
    return int(std::max<std::int64_t>(1, std::min<std::int64_t>((std::int64_t(t.tasks) + kWarps - 1) / kWarps, resident)));
  const std::int64_t need = (std::int64_t(stream_row_tiles(t)) + kWarps - 1) / kWarps * t.parts;
  return int(std::max<std::int64_t>(t.parts, std::min<std::int64_t>(need, resident / t.parts * t.parts)));
}
// The stream kernel's addresses, in elements. Row m (pixel m % P·Q of image m / P·Q, m < t.m): its
// 16-byte piece of lane column tq (channels 8·tq .. + 7) in chunk 0 of dbuf (chunk c's is c·P·Q·32
// further: dbuf_offset's layout), and of its image's gates (chunk c's is 32·c further). Whether
// chunk c's piece tq holds channels pass 1 wrote (whole pieces: d_live is a multiple of 8). Which
// row of Wp the staged row r (chunk r / 32, step and k from r % 32) holds; ≥ hidden: zeros.
CONVLAB_HOST_DEVICE inline std::ptrdiff_t stream_d_offset(const StreamTile& t, int m, int tq) {
  const int n = fast_quotient(t.pq_div, m);
  return (std::ptrdiff_t(n) * t.chunks * t.pq + (m - n * t.pq)) * kChunk + 8 * tq;
}
CONVLAB_HOST_DEVICE inline std::ptrdiff_t stream_gate_offset(const StreamTile& t, int m, int tq) {
  return std::ptrdiff_t(fast_quotient(t.pq_div, m)) * t.d_live + 8 * tq;
}
CONVLAB_HOST_DEVICE inline bool stream_piece_live(const StreamTile& t, int c, int tq) {
  return c < t.chunks && kChunk * c + 8 * tq < t.d_live;
}
CONVLAB_HOST_DEVICE constexpr int stream_staged_row(int r) {
  return r - r % kChunk + stream_channel(r % kChunk / 16, r % 16);
}
// Where the stream runs (else pass 2 is mbconv_project_kernel): whole 16-byte Wp rows, and the
// staged Wp leaves room for two CTAs per SM. Whole Wp: ≈ 110 KB at most (hidden 480 at C_out 80,
// 84 KB; not 672 at 112, 161 KB: the rungs take the persistent GEMM there, C = 112 @ 14² and 7²).
// cta_part, where allowed: one part a CTA (hidden 672 at C_out 112: 3 parts of 40 columns, 53 KB;
// hidden 1152 at C_out 192: 5 parts of 5 n8 tiles, nt 6 being 126 KB); only hidden > 7200 (225
// chunks of one n8 tile) leaves that form.
inline bool stream_tile_fits(const StreamTile& t, std::size_t shared_limit = kSharedTwoCtas) {
  return t.nt >= 1 && t.nt <= kStreamMaxNT && t.ldw % 8 == 0 && t.ldw > 0 && t.bytes <= shared_limit &&
         t.tasks < 2147483647;
}
// Whether the three-CTA tile replaces the two-CTA one (measured on an H100, lesson 11's NOTES.md,
// wave-3i): where it fits and keeps the part as wide (the same nt: at 7² it would cut 5 n8 tiles
// to 3, and each part re-reads D), and nt ≤ 5 (the nt = 6 kernel spills 36 bytes at 80 registers).
inline bool stream_three_pays(const StreamTile& two, const StreamTile& three) {
  return stream_tile_fits(three, kSharedThreeCtas) && three.nt == two.nt && three.nt <= 5;
}

// ---- the SE gate kernel's block size and shared memory (gpu/lib/mbconv_layers.cuh) ----------
// One block per image. Its time is L2 latency along each thread's chain of dependent weight
// loads: FC1's ⌈hidden / T1⌉ with T1 = threads / ⌈Cr/8⌉ row groups, FC2's ⌈Cr / T2⌉ with
// T2 = threads / ⌈hidden/8⌉ splits (at least 1 each). 512 threads halve long chains (hidden 1152,
// Cr 48: 28 and 48 loads at 256, 14 and 16 at 512) but cost more to launch and leave most
// threads idle when the chains are already short (hidden 144: 1 and 1 at 256).
inline constexpr int kGateThreadsSmall = 256, kGateThreadsLarge = 512;
inline constexpr int kGateShortChain = 8;  // loads: chains at most this long at 256 threads stay at 256
// The longest chain of loads one thread walks in FC1 or FC2 at `threads` threads.
constexpr int se_gate_chain(int hidden, int cr, int threads) {
  const int units = std::max(1, (cr + 7) / 8), pieces = std::max(1, (hidden + 7) / 8);
  const int groups = std::max(1, threads / units), splits = std::max(1, threads / pieces);
  return std::max((hidden + groups - 1) / groups, (cr + splits - 1) / splits);
}
constexpr int se_gate_threads(int hidden, int cr) {
  return se_gate_chain(hidden, cr, kGateThreadsSmall) <= kGateShortChain ? kGateThreadsSmall : kGateThreadsLarge;
}
// Partial sums the reductions keep in shared memory at `threads` threads: T·8⌈Cr/8⌉ (FC1) and
// R·8⌈hidden/8⌉ (FC2, R > 1).
inline int se_gate_red_floats(int hidden, int cr, int threads) {
  const int u = std::max(1, (cr + 7) / 8), v = std::max(1, (hidden + 7) / 8);  // Cr = 0 without SE
  const int t = std::max(1, threads / u), r = std::max(1, threads / v);
  return std::max(t * 8 * u, r > 1 ? r * 8 * v : 0);
}

inline std::size_t se_gate_shared_bytes(const MBConvProblem& p) {
  const int threads = se_gate_threads(p.hidden(), p.se_channels());
  return (std::size_t(p.hidden()) + p.se_channels() + se_gate_red_floats(p.hidden(), p.se_channels(), threads)) *
         sizeof(float);
}
// The gate kernel's shared memory within what one block may ask for (227 KB on the H200).
inline bool se_gate_fits(const MBConvProblem& p) { return se_gate_shared_bytes(p) <= 227 * 1024; }

// The gate in pass 1's tail (lesson 11's kGateTail: mbconv_store_gate_kernel, gpu/lib/mbconv_fused.cuh):
// the last CTA of a tile group makes its images' gates at kThreads threads, in the shared memory
// of its tile. It pays where pass 1 is one wave (t's tiles·splits·groups CTAs no more than
// `resident`, the CTAs the device runs at once) of one-image tiles: there the gate kernel's
// boundary is on the path and every CTA's arrival is paid once; with several waves the arrivals
// cost more than the boundary (lesson 11's NOTES.md, wave-4e), and a tile of several images would
// make their gates one after another.
inline std::size_t gate_tail_bytes(const MBConvProblem& p) {
  return (std::size_t(p.hidden()) + p.se_channels() + se_gate_red_floats(p.hidden(), p.se_channels(), kThreads)) *
         sizeof(float);
}
inline bool gate_tail_pays(const MBConvProblem& p, const Tile& t, int resident) {
  return t.images == 1 && 1LL * t.tiles * t.splits * t.groups <= resident && gate_tail_bytes(p) <= t.bytes;
}


// ---- 11k: the store plan as one kernel over a thread-block cluster (mbconv_block_cluster.cuh) ----
// Where every CTA of a tile group (one image's tiles·splits, or one tile of several images ×
// splits) fits one cluster, pass 1's CTAs go on, after a cluster barrier, to make the group's gates
// and then its part of pass 2: the kernel boundaries become cluster barriers. Pass 2 of the group
// is the stream's tasks (mbconv_project_stream.cuh) over the group's rows only; Wp's columns are cut
// into col_groups ranges of group_n8 n8 tiles, CTA r of the cluster staging range r % col_groups
// and taking the tasks of row group r / col_groups, so that a Wp too large for one CTA is still
// staged whole by the cluster. Shared memory after pass 1: the staged range of Wp (st.wb_bytes),
// its bp, the gate's scratch (se_gate_red_floats + hidden + Cr floats), then a copy of the group's
// gates (images × d_live, 16-bit) that pass 2's tasks read.
inline constexpr int kClusterMax = 8;  // portable cluster size
struct ClusterFinish {
  int ctas = 0;                         // CTAs a cluster: tiles·splits of one tile group
  int col_groups = 0, group_n8 = 0;     // Wp's column ranges, n8 tiles a range
  StreamTile st;                        // a range's tile: parts sub-parts of nt ≤ kStreamMaxNT n8 tiles
  std::size_t se_off = 0, gate_off = 0, bytes = 0;  // the gate's scratch, the gates' copy; all the finish uses
  bool fits = false;
};
// The finish for pass 1's tile t (its splits chosen) and Wp's row stride ldw, in `limit` bytes of
// shared memory: the fewest column ranges (a divisor of the cluster's CTAs, no range empty) whose
// staging fits. fits is false where the group is no cluster (more than kClusterMax CTAs) or no
// cut fits.
inline ClusterFinish cluster_finish_for(const MBConvProblem& p, const Tile& t, int ldw, std::size_t limit) {
  ClusterFinish f;
  f.ctas = t.tiles * t.splits;
  if (f.ctas < 1 || f.ctas > kClusterMax || ldw % 8 != 0 || ldw <= 0) return f;
  const int n8 = ldw / 8, cr = p.se_channels();
  const std::size_t se_floats = std::size_t(se_gate_red_floats(p.hidden(), cr, kThreads)) + p.hidden() + cr;
  for (int g = 1; g <= f.ctas; ++g) {
    if (f.ctas % g != 0) continue;
    const int per = (n8 + g - 1) / g;
    if (per * (g - 1) >= n8) continue;  // a range past the last column
    StreamTile st = stream_tile_for(p, ldw);
    stream_tile_cut(st, per, kStreamMaxNT, false);
    const std::size_t se_off = (st.bytes + 15) / 16 * 16;
    const std::size_t gate_off = (se_off + se_floats * sizeof(float) + 15) / 16 * 16;
    const std::size_t bytes = gate_off + std::size_t(t.images) * st.d_live * 2;
    if (bytes > limit) continue;
    f.col_groups = g, f.group_n8 = per, f.st = st, f.se_off = se_off, f.gate_off = gate_off, f.bytes = bytes;
    f.fits = true;
    return f;
  }
  return f;
}
// Task `task` of cluster CTA `rank` over row tiles from tile0: its row tile, the staged column of
// its sub-part (s0), Y's first column (col0), Y's end of the CTA's range (col_end) and the n8
// tiles it makes (n_live ≤ st.nt). CTA rank stages range rank % col_groups, from Y's column
// 8·group_n8·range; the warps of row group rank / col_groups take tasks w, w + row_groups·kWarps, ...
struct ClusterTask {
  int tile, s0, col0, col_end, n_live;
};
CONVLAB_HOST_DEVICE inline int cluster_range_col0(const ClusterFinish& f, int rank) {
  return 8 * f.group_n8 * (rank % f.col_groups);
}
CONVLAB_HOST_DEVICE inline ClusterTask cluster_task(const ClusterFinish& f, int rank, int tile0, int task) {
  const int col0 = cluster_range_col0(f, rank), sub = task % f.st.parts, s0 = 8 * f.st.nt * sub;
  const int col_end = f.st.c_out < col0 + 8 * f.group_n8 ? f.st.c_out : col0 + 8 * f.group_n8;
  const int left = f.group_n8 - sub * f.st.nt;
  return {tile0 + task / f.st.parts, s0, col0 + s0, col_end, left < f.st.nt ? left : f.st.nt};
}
// The splits 11k gives a tile group: split_tile's, cut so that the group's CTAs make one cluster.
inline void cluster_splits(Tile& t) {
  if (t.tiles >= 1 && t.tiles <= kClusterMax) t.splits = std::max(1, std::min(t.splits, kClusterMax / t.tiles));
}

}  // namespace convlab::gpu::mbconv
