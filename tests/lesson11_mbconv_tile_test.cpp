// tests/lesson11_mbconv_tile_test.cpp — the index arithmetic of lesson 11's fused GPU
// kernel (gpu/lib/mbconv_tile.hpp), checked on the host.
//
// The fused rungs 11b, 11c and 11d run only on a GPU; what makes their tile
// kernel right or wrong beside the arithmetic is integer bookkeeping:
//
//   1. The shared layout: regions 16-byte aligned, disjoint, inside t.bytes;
//      every ldmatrix row stride an odd number of 16-byte units; the
//      accumulators within kWarps·kMaxAccTiles; the halo rows a tile reads
//      inside its E buffer; the goal shapes at two CTAs per SM.
//   2. The depthwise's work items (dw_run): every output pixel of a tile made
//      once per channel pair, and the sliding window reading exactly the
//      plain loop's taps. E padded with zero columns (kPadE), or with zero
//      columns and rows (kPadRows): each pixel at one place, every window
//      column and row a stored output reads the image's or a zero, and the
//      GPU test table reaching each rows-per-item kernel.
//   3. ldmatrix .x2.trans on a [k][n] tile delivers the mma B fragment.
//   4. The 16-byte copy path's preconditions: every chunk's rows and the
//      depthwise slice start on 16 bytes and are whole vectors.
//   5. split_tile: the CTAs that share a tile make every hidden chunk (sums,
//      store) exactly once.
//   6. Tiles of several whole images (images_for): the layout, the item map
//      over (image, row group, run, pair) with no row of a neighbour image,
//      per-image sums slots and dbuf blocks, the images chosen at the goal
//      shapes, and a short last group.
//   7. the persistent pass 2 (mbconv_project.cuh): fast_quotient against / over many
//      divisors and numerators; every tile's layout, block origins, gate slots
//      and dbuf rows against plain division and pass 1's dbuf_offset; the
//      persistent kernel's control flow replayed per CTA (every block's steps
//      computed once, from the buffer its copy wrote, no buffer or X region
//      overwritten before its last reader); the cost model against a replay
//      of the blocks per SM, and the choice at the goal shapes.
//      The stream form of pass 2 (mbconv_project_stream.cuh): its lane's 16-byte pieces and
//      Wp's staged rows multiply to D·Wp through the mma maps; its tile at the goal shapes, whole
//      Wp or (11c) one part a CTA; the warps' walks (every row tile and
//      part once, a part's CTAs side by side); the GPU test table reaching each boundary of both
//      forms and of the persistent GEMM, under 11c's routing and 11e's.
//   8. The SE gate kernel: its block size from the chains of loads (replayed),
//      and the shared memory of both FCs' partial sums.
//   9. 11e's tensor-core depthwise: its diagonal B fragments against the mma's
//      layout; its multiply-high splits of a tile's pixels against / and %;
//      every tap's gathered E row against the x tile's pixel order; its room
//      (fragments, zero row) and the images per tile its sums allow.
//  10. 11f's one-image layout (mbconv_image_layout.hpp): regions disjoint and aligned inside the
//      limit, odd row strides, the project's blocks covering every output once, and which goal
//      and EfficientNet-B0 shapes fit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/lib/mbconv_image_layout.hpp"
#include "gpu/lib/mbconv_image_wgmma_layout.hpp"
#include "gpu/lib/wgmma.cuh"  // Sw128Tile
#include "gpu/lib/mbconv_tile.hpp"
#include "ops/mbconv.hpp"
#include "tests/catch_compat.hpp"

namespace {

using namespace convlab;
using namespace convlab::gpu;
using namespace convlab::gpu::mbconv;

std::vector<MBConvProblem> fused_shapes() {
  std::vector<MBConvProblem> out;
  for (ShapeTable table : {ShapeTable::test, ShapeTable::bench})
    for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(table, Device::gpu))
      if (p.dtype == DType::f16 || p.dtype == DType::bf16) out.push_back(p);
  return out;
}

constexpr Stage kStages[] = {Stage::sums, Stage::store, Stage::project};
constexpr int kH200Resident = 132 * 2;  // an H200's SMs × two CTAs of the stages that make D

TEST_CASE("mbconv tile: the shared layout is aligned, disjoint and bank-friendly", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : fused_shapes())
    for (Stage s : kStages)
    for (int resident : {0, kH200Resident}) {
      const Tile t = resident ? choose_tile(p, s, resident) : choose_tile(p, s);
      INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s) << " images " << t.images);
      REQUIRE(t.rows > 0);
      REQUIRE(t.images >= 1);
      if (t.images > 1) CHECK((t.rows == t.P && t.tiles == 1));
      CHECK(t.groups * t.images >= p.N);
      CHECK((t.groups - 1) * t.images < p.N);
      CHECK(t.tiles == choose_tile(p, s).tiles);  // the sums' layout [N, tiles, hidden] does not depend on images
      CHECK(t.bytes <= kMaxShared);
      if (s == Stage::project) CHECK(t.acc_tiles() <= kWarps * kMaxAccTiles);
      CHECK(t.tiles * t.rows >= t.P);
      CHECK((t.tiles - 1) * t.rows < t.P);
      // Regions: [offset, offset + size), each buffered region counted as often as it is buffered.
      const bool sums = s == Stage::sums || s == Stage::store;
      const std::size_t taps = std::size_t(p.kernel) * p.kernel;
      // The pipeline: E of chunks k and k+1 (and k+2, copied, without expand), never more than the chunks.
      CHECK(t.e_buffers == std::min(t.expand ? 2 : 3, t.d_chunks));
      CHECK(t.d_buffers == (s == Stage::project ? 1 : 0));
      const std::vector<std::pair<std::size_t, std::size_t>> regions = {
          {t.x_off, t.expand ? std::size_t(t.m_in) * t.ldx * 2 : 0},
          {t.e_off, t.e_buffers * std::size_t(t.m_in) * t.lde * 2},
          {t.d_off, t.d_buffers * std::size_t(t.m_out) * t.ldd * 2},
          {t.we_off, 2 * t.we_bytes},
          {t.wp_off, 2 * t.wp_bytes},
          {t.dw_off, 2 * t.dw_bytes},
          {t.dwf_off, 2 * (s == Stage::store ? std::max(kChunk * taps * 4, dw_fragment_bytes(p.kernel) + kZeroRowBytes)
                                                : kChunk * taps * 4)},
          {t.v_off, 3 * std::size_t(2 + (s == Stage::project ? t.images : 1)) * kChunk * 4},
          {t.red_off, sums ? 2 * std::size_t(t.images) * kPixelGroups * kChunk * 4 : 0}};
      for (std::size_t i = 0; i < regions.size(); ++i) {
        CHECK(regions[i].first % 16 == 0);
        CHECK(regions[i].first + regions[i].second <= t.bytes);
        for (std::size_t j = i + 1; j < regions.size(); ++j)
          if (regions[i].second && regions[j].second)
            CHECK((regions[i].first + regions[i].second <= regions[j].first ||
                   regions[j].first + regions[j].second <= regions[i].first));
      }
      for (std::size_t b : {t.e_bytes, t.d_bytes, t.we_bytes, t.wp_bytes, t.dw_bytes, t.dwf_bytes, t.v_bytes, t.red_bytes})
        CHECK(b % 16 == 0);
      for (int ld : {t.ldx, t.lde, t.ldd, t.ldwe, t.ldwp}) CHECK((ld % 8 == 0 && (ld / 8) % 2 == 1));
      CHECK(t.ldx >= t.c_pad);
      CHECK(t.ldwp >= t.cout_pad);
      CHECK(t.lde >= kChunk);
      CHECK(t.lde == kLdChunk);  // the kernel addresses E and D with the constant
      CHECK(t.ldd == kLdChunk);
      // The depthwise's row groups: at most dw_group_max rows, none empty, covering the tile.
      const int group_max = dw_group_max(p.kernel, p.stride, s == Stage::project);
      const int groups = (t.rows + t.dw_rows - 1) / t.dw_rows;
      CHECK((t.dw_rows >= 1 && t.dw_rows <= group_max));
      CHECK(t.dw.groups == groups);
      CHECK(t.dw.runs_per_row == (t.Q + kRun - 1) / kRun);
      CHECK(groups == (t.rows + t.dw_rows - 1) / t.dw_rows);
      CHECK((groups - 1) * t.dw_rows < t.rows);
      // dbuf: the live columns a 16-byte multiple at least hidden long (aligned pair stores, whole
      // vector copies); every (image, chunk, pixel) row a distinct kChunk-element row inside the buffer.
      CHECK(t.d_live % 8 == 0);
      CHECK((t.d_live >= t.hidden && t.d_live < t.hidden + 8));
      CHECK(t.d_chunks * kChunk >= t.d_live);
      {
        const std::ptrdiff_t last = dbuf_offset(t, t.N - 1, t.d_chunks - 1, std::ptrdiff_t(t.P) * t.Q - 1);
        CHECK(last + kChunk == std::ptrdiff_t(dbuf_elems(p)));
        CHECK(dbuf_offset(t, 0, 0, 1) == kChunk);                           // pixels of a chunk: consecutive rows
        CHECK(dbuf_offset(t, 0, 1, 0) == std::ptrdiff_t(t.P) * t.Q * kChunk);  // then the next chunk
        CHECK(dbuf_offset(t, 1, 0, 0) == std::ptrdiff_t(t.d_chunks) * t.P * t.Q * kChunk);
        CHECK(dbuf_offset(t, 0, 0, 1) * 2 % 16 == 0);  // rows 16-byte aligned
      }
      // The halo: every input row a tile's depthwise reads is inside the E buffer; a tile of several
      // images reads every row of each (h0 = 0, h1 = H: the images' rows are one contiguous block).
      for (int tile = 0; tile < t.tiles; ++tile) {
        const int p0 = tile * t.rows, p1 = std::min(t.P, p0 + t.rows);
        const int h0 = std::max(0, p0 * t.stride - t.pad), h1 = std::min(t.H, (p1 - 1) * t.stride - t.pad + p.kernel);
        CHECK(t.images * (h1 - h0) * t.W <= t.m_in);
        CHECK(h1 - h0 <= t.in_rows);
        CHECK(t.images * (p1 - p0) * t.Q <= t.m_out);
        if (t.images > 1) {
          CHECK((h0 == 0 && h1 == t.H));
          CHECK(t.image_in == t.H * t.W);
          CHECK(t.image_out == t.P * t.Q);
          CHECK(t.image_dbuf == dbuf_offset(t, 1, 0, 0));
        }
        for (int op = p0; op < p1; ++op)
          for (int r = 0; r < p.kernel; ++r) {
            const int h = op * t.stride + r - t.pad;
            if (h >= 0 && h < t.H) CHECK((h >= h0 && h < h1));
          }
      }
    }
}

TEST_CASE("mbconv tile: the depthwise's rows per item balance the threads", "[mbconv][lesson11][cpu]") {
  CHECK(dw_rows_for(5, 8, 3) == 3);   // C=24 @ 56², store: 2 groups × 8 runs × 16 pairs = 256 items, one each
  CHECK(dw_rows_for(4, 8, 2) == 2);   // the project stage's 4-row tiles: 2 + 2
  CHECK(dw_rows_for(14, 2, 3) == 2);  // 14 × 14: 7 groups × 2 runs × 16 = 224 items; 3 rows would give 160
  CHECK(dw_rows_for(7, 1, 3) == 1);   // 7 × 7: 112 items of one row already leave threads idle
  CHECK(dw_rows_for(1, 16, 3) == 1);
  for (int rows = 1; rows <= 40; ++rows)
    for (int runs = 1; runs <= 16; ++runs)
      for (int gmax = 1; gmax <= 3; ++gmax) {
        const int g = dw_rows_for(rows, runs, gmax), groups = (rows + g - 1) / g;
        CHECK((g >= 1 && g <= gmax));
        CHECK((groups - 1) * g < rows);  // no empty group
      }
}

TEST_CASE("mbconv tile: the goal shapes run two CTAs per SM", "[mbconv][lesson11][cpu]") {
  // Every bench shape but one: at k = 5, stride 2 on 56² a two-CTA tile is one output row that
  // reads five input rows, and choose_tile takes a taller one-CTA tile instead.
  int one_cta = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::bench, Device::gpu))
    for (Stage s : kStages) {
      INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s));
      const Tile t = choose_tile(p, s);
      if (t.bytes > kSharedTwoCtas) {
        ++one_cta;
        CHECK((p.kernel == 5 && p.stride == 2 && p.H == 56));
        // The two-CTA alternative: one row, reading more than twice the rows it needs.
        const Tile two = tile_for(p, 1, s);
        CHECK(two.bytes <= kSharedTwoCtas);
        CHECK(tile_for(p, 2, s).bytes > kSharedTwoCtas);
        CHECK(two.in_rows > 2 * p.stride);
        CHECK(t.rows >= 5);
        CHECK(t.in_rows <= 2 * t.rows * p.stride);
        CHECK(t.bytes <= kMaxShared);
      } else {
        CHECK(choose_tile(p, s, kH200Resident).bytes <= kSharedTwoCtas);
      }
    }
  CHECK(one_cta == 3);  // sums, store and project of that one shape
  // C=24 @ 56²: two CTAs' shared memory bounds the tile. The project stage holds the x tile,
  // two E buffers and D: four output rows (224 pixels), 14 tiles per image, 6 input rows;
  // the store stage keeps D in registers: five rows.
  MBConvProblem p;
  p.N = 128, p.H = 56, p.W = 56, p.C = 24, p.C_out = 24, p.dtype = DType::f16;
  const Tile t = choose_tile(p, Stage::project);
  CHECK(t.rows == 4);
  CHECK(t.tiles == 14);
  CHECK(t.m_in == 336);
  CHECK(t.acc_tiles() == 42);
  CHECK(tile_for(p, 5, Stage::project).bytes > kSharedTwoCtas);
  CHECK(choose_tile(p, Stage::store).rows == 5);
  CHECK(tile_for(p, 6, Stage::store).bytes > kSharedTwoCtas);
}

TEST_CASE("mbconv tile: split_place puts every (tile, part, group) on one CTA, and part-major pairs an SM's CTAs unevenly", "[mbconv][lesson11][cpu]") {
  std::vector<MBConvProblem> shapes = fused_shapes();
  MBConvProblem odd;  // 150 one-pixel images, hidden 192 (6 chunks): uneven splits, a short last group
  odd.N = 150, odd.H = odd.W = 1, odd.C = 32, odd.C_out = 32, odd.dtype = DType::f16;
  shapes.push_back(odd);
  int paired = 0;
  for (const MBConvProblem& p : shapes)
    for (int resident : {132, 264, 396}) {
      Tile t = choose_tile(p, Stage::store, resident);
      split_tile(t, Stage::store, resident);
      const int gx = t.tiles * t.splits, gy = t.groups, ctas = gx * gy;
      INFO(OpTraits<MBConvProblem>::spec(p) << " resident " << resident << " splits " << t.splits);
      for (bool part_major : {false, true}) {
        std::vector<int> seen(std::size_t(ctas), 0);
        for (int by = 0; by < gy; ++by)
          for (int bx = 0; bx < gx; ++bx) {
            const SplitPlace at = split_place(t, bx, by, gy, part_major);
            REQUIRE((at.tile >= 0 && at.tile < t.tiles && at.part >= 0 && at.part < t.splits && at.group >= 0 && at.group < gy));
            ++seen[std::size_t((at.group * t.tiles + at.tile) * t.splits + at.part)];
          }
        for (int c : seen) CHECK(c == 1);
      }
      // One wave of two CTAs an SM (resident 264 = 2·132), two parts: CTAs c and c + 132 share an
      // SM; part-major makes them different parts, the grid's order the same one.
      if (resident == 264 && t.splits == 2 && ctas <= resident) {
        for (int c = 0; c + 132 < ctas; ++c) {
          const auto part_of = [&](int k, bool pm) { return split_place(t, k % gx, k / gx, gy, pm).part; };
          CHECK(part_of(c, true) != part_of(c + 132, true));
          CHECK(part_of(c, false) == part_of(c + 132, false));
        }
        ++paired;
      }
    }
  CHECK(paired > 0);  // C = 80 @ 14² is such a grid
}

// Pass 1's tile as 11c chooses it (run_store_plan: padded E where it pays) for `resident` CTAs.
Tile store_tile_11c(const MBConvProblem& p, int resident) {
  const bool pad = pad_e_pays(p, resident), rows = pad && pad_rows_fit(p, resident);
  Tile t = choose_tile(p, Stage::store, resident, rows ? EPad::rows : pad ? EPad::columns : EPad::none);
  split_tile(t, Stage::store, resident);
  return t;
}

TEST_CASE("mbconv tile: the gate's tail pays where pass 1 is one wave of one-image tiles", "[mbconv][lesson11][cpu]") {
  // At two CTAs an SM of 132 SMs. The shapes where the tail measured faster than the gate kernel
  // (lesson 11's NOTES, wave-4e: every 14² input with SE; one wave of 256 CTAs) and where it
  // measured slower (28², 56², 112²: several waves; 7²: two images a tile).
  int faster = 0, slower = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::bench, Device::gpu)) {
    if (!p.has_se() || p.dtype != DType::f16 || p.N != 128) continue;
    const Tile t = store_tile_11c(p, kH200Resident);
    INFO(OpTraits<MBConvProblem>::spec(p) << ": " << t.tiles << " tiles, " << t.splits << " splits, " << t.images << " images");
    const bool measured_faster = p.H == 14;  // the 14² inputs, stride 1 and 2
    CHECK(gate_tail_pays(p, t, kH200Resident) == measured_faster);
    ++(measured_faster ? faster : slower);
    if (measured_faster) {
      CHECK_FALSE(gate_tail_pays(p, t, kH200Resident / 2));  // the same grid as two waves
      Tile small = t;
      small.bytes = gate_tail_bytes(p) - 1;  // no room for the gate's scratch
      CHECK_FALSE(gate_tail_pays(p, small, kH200Resident));
    }
  }
  CHECK(faster == 5);
  CHECK(slower == 10);
}

TEST_CASE("mbconv tile: the GPU test table reaches every form of the gate's tail", "[mbconv][lesson11][cpu]") {
  // A rung that takes the tail (kGateTail) is tested only where a table shape makes pass 1 take it
  // on the lent GPU (132 SMs): the last of several CTAs of an image making its gate, after its
  // image's tiles (tiles > 1) and after its tile's other splits (splits > 1); the lone CTA of an
  // image; both 16-bit types; Cr not a multiple of 8 (W1's rows element by element) and one that is.
  bool tiles = false, splits = false, lone = false, f16 = false, bf16 = false, odd_cr = false, vec_cr = false;
  int reached = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu)) {
    if (!p.has_se() || (p.dtype != DType::f16 && p.dtype != DType::bf16)) continue;
    const Tile t = store_tile_11c(p, kH200Resident);
    if (t.rows == 0 || !gate_tail_pays(p, t, kH200Resident)) continue;
    ++reached;
    tiles |= t.tiles > 1;
    splits |= t.splits > 1;
    lone |= t.tiles * t.splits == 1;
    f16 |= p.dtype == DType::f16;
    bf16 |= p.dtype == DType::bf16;
    (p.se_channels() % 8 == 0 ? vec_cr : odd_cr) = true;
  }
  INFO(reached << " table shapes take the tail");
  CHECK(tiles);
  CHECK(splits);
  CHECK(lone);
  CHECK(f16);
  CHECK(bf16);
  CHECK(odd_cr);
  CHECK(vec_cr);
}

TEST_CASE("mbconv tile: the CTAs of a split tile make every chunk once", "[mbconv][lesson11][cpu]") {
  std::vector<MBConvProblem> shapes = fused_shapes();
  MBConvProblem odd;  // 150 one-pixel images, hidden 192 (6 chunks), C_out 32: uneven splits
  odd.N = 150, odd.H = odd.W = 1, odd.C = 32, odd.C_out = 32, odd.dtype = DType::f16;
  shapes.push_back(odd);
  for (const MBConvProblem& p : shapes)
    for (Stage s : kStages)
      for (int resident : {1, 132, 264, 396, 5000}) {
        Tile t = choose_tile(p, s);
        split_tile(t, s, resident);
        INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s) << " resident " << resident);
        REQUIRE(t.splits >= 1);
        if (1LL * t.tiles * t.groups >= 2LL * resident) CHECK(t.splits == 1);  // split only a grid short of two waves
        if (s == Stage::project) CHECK(t.splits == 1);
        // the kernel's walk: part z makes chunks z, z + splits, ...
        std::vector<int> chunk_seen((p.hidden() + kChunk - 1) / kChunk, 0);
        const bool sums = s == Stage::sums || s == Stage::store;
        for (int part = 0; part < t.splits; ++part) {
          const int c_first = sums ? part * kChunk : 0, c_step = sums ? t.splits * kChunk : kChunk;
          CHECK(c_first < p.hidden());  // no CTA without work
          for (int c0 = c_first; c0 < p.hidden(); c0 += c_step) ++chunk_seen[c0 / kChunk];
        }
        for (int c : chunk_seen) CHECK(c == (sums ? 1 : t.splits));
      }
}

// split_tile's count at the bench shapes on 264 resident CTAs (two an SM on 132 SMs), as the
// wave-3f sweep measured best: one wave of two CTAs an image at 14² (not the two-wave rule's 5),
// two at 28², none at 56²; 7²'s tiles of several images keep the two-wave rule.
TEST_CASE("mbconv tile: split_tile's count at the goal shapes", "[mbconv][lesson11][cpu]") {
  const auto splits = [](int hw, int c, int stride = 1) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = hw, p.C = p.C_out = c, p.stride = stride, p.dtype = DType::f16;
    Tile t = choose_tile(p, Stage::store, 264);
    split_tile(t, Stage::store, 264);
    INFO(OpTraits<MBConvProblem>::spec(p) << ": " << t.tiles << " tiles, " << t.groups << " groups, " << t.images
                                          << " images a tile");
    return std::pair(t.splits, t.images);
  };
  CHECK(splits(14, 80) == std::pair(2, 1));   // 15 chunks: 256 CTAs of 8, not 640 of 3
  CHECK(splits(14, 112) == std::pair(2, 1));  // 21 chunks: 256 CTAs of 11
  CHECK(splits(28, 40) == std::pair(2, 1));   // 384 tiles: 768 CTAs of 4 chunks
  CHECK(splits(56, 24).first == 1);
  const auto [s7, images7] = splits(7, 192);
  CHECK(images7 > 1);
  MBConvProblem p;
  p.N = 128, p.H = p.W = 7, p.C = p.C_out = 192, p.dtype = DType::f16;
  const Tile t7 = choose_tile(p, Stage::store, 264);
  CHECK(s7 == std::min<long long>((2 * 264 + 1LL * t7.tiles * t7.groups - 1) / (1LL * t7.tiles * t7.groups),
                                  (p.hidden() + kChunk - 1) / kChunk));
}

TEST_CASE("mbconv tile: CONVLAB_MBCONV_SPLITS takes 1..4096 and refuses anything else", "[mbconv][lesson11][cpu]") {
  CHECK(forced_splits(nullptr) == 0);
  CHECK(forced_splits("") == 0);
  CHECK(forced_splits("1") == 1);
  CHECK(forced_splits("3") == 3);
  CHECK(forced_splits("4096") == 4096);
  for (const char* bad : {"0", "-2", "4097", "2x", "x2", " 3", "+3", "1e3", "99999999999999999999"}) {
    INFO(bad);
    bool named = false;  // refused, with the variable's name in the one error line
    try {
      forced_splits(bad);
    } catch (const std::invalid_argument& e) {
      named = std::string(e.what()).find("CONVLAB_MBCONV_SPLITS") != std::string::npos;
    }
    CHECK(named);
  }
  // Any forced S, clamped to the chunks as launch_stage does, still makes every chunk once.
  MBConvProblem p;
  p.N = 3, p.H = p.W = 14, p.C = 80, p.C_out = 80, p.dtype = DType::f16;
  const int chunks = (p.hidden() + kChunk - 1) / kChunk;
  for (int forced : {1, 2, 3, 4, 6, 8, 15, 16, 4096}) {
    const int splits = std::min(forced, chunks);
    std::vector<int> seen(chunks, 0);
    for (int part = 0; part < splits; ++part)
      for (int c0 = part * kChunk; c0 < p.hidden(); c0 += splits * kChunk) ++seen[c0 / kChunk];
    for (int c : seen) CHECK(c == 1);
  }
}

TEST_CASE("mbconv tile: the depthwise runs cover every output pixel once per pair, with the plain loop's taps",
          "[mbconv][lesson11][cpu]") {
  // The kernel's walk over a tile of `images` images (rows == P when images > 1) or of the first
  // `rows` rows of an image, with the steps of a full tile of `full_rows` rows (the last tile of
  // an image may be shorter); its loop ends at image·G + row >= end_group.
  for (int stride : {1, 2})
    for (int K : {3, 5})
      for (int W : {1, 2, 3, 6, 7, 8, 13, 14, 28, 56, 57}) {
        const int Q = (W - 1) / stride + 1, pad = K / 2;
        const int runs_per_row = (Q + kRun - 1) / kRun;
        for (int images : {1, 2, 3, 7})
        for (int full_rows : {1, 2, 4, 5, 6, 9})
        for (int rows = images > 1 ? full_rows : 1; rows <= full_rows; ++rows)
        for (int dw_rows : {1, 2, 3}) {
          // H: the input rows of an image of full_rows output rows (several images: the whole image)
          const int H = (full_rows - 1) * stride + 1;
          std::multiset<std::tuple<int, int, int>> seen;  // (image, row, q), per pair
          const int groups = (rows + dw_rows - 1) / dw_rows, full_groups = (full_rows + dw_rows - 1) / dw_rows;
          const DwSteps steps = dw_steps(runs_per_row, full_groups);
          CHECK(steps.images * full_groups * runs_per_row + steps.rows * runs_per_row + steps.slots == kRunStep);
          const int end_group = images > 1 ? images * full_groups : groups;
          std::vector<int> items_of(kThreads, 0);
          for (int rtid = 0; rtid < kThreads; ++rtid) {
            int last_image = -1;
            int run_index = rtid / kPairs;
            for (DwRunWalk walk(rtid / kPairs, steps); walk.image * full_groups + walk.row < end_group;
                 walk.next(steps), run_index += kRunStep) {
              const DwRun run = walk.run(steps);
              const DwRun direct = dw_run(run_index, steps);  // the walk without divisions = the map itself
              CHECK(run.image == direct.image);
              CHECK(run.row == direct.row);
              CHECK(run.q0 == direct.q0);
              CHECK((run.image >= 0 && run.image < images));
              CHECK((run.row >= 0 && run.row < groups));
              CHECK(run.image >= last_image);  // a thread's images never go back: its sums of an image are consecutive
              last_image = run.image;
              ++items_of[rtid];
              if (rtid % kPairs != 0) continue;
              const int w0 = run.q0 * stride - pad;
              const int og = run.row * dw_rows;
              for (int i = 0; i < kRun; ++i) {
                const int q = run.q0 + i;
                if (q >= Q) break;
                for (int g = 0; g < std::min(dw_rows, rows - og); ++g) {
                  seen.insert({run.image, og + g, q});
                  // the window's rows: the kernel reads row h of its own image only, 0 <= h < H
                  for (int r = 0; r < K; ++r) {
                    const int h = (og + g) * stride + r - pad;
                    if (h < 0 || h >= H) continue;  // zero padding, never the neighbour's rows
                    const int e_row = run.image * H + h;  // the kernel's row of E: image·image_in / W + h
                    CHECK(e_row / H == run.image);
                  }
                }
                for (int s = 0; s < K; ++s) {  // window slot i·stride + s is input column q·stride + s − pad
                  const int u = i * stride + s;
                  CHECK(u < (kRun - 1) * stride + K);
                  CHECK(w0 + u == q * stride + s - pad);
                }
              }
            }
          }
          CHECK(int(seen.size()) == images * rows * Q);
          for (int n = 0; n < images; ++n)
            for (int r = 0; r < rows; ++r)
              for (int q = 0; q < Q; ++q) CHECK(seen.count({n, r, q}) == 1);
          // The threads of one pair take as many items as the plain item count says.
          int total = 0;
          for (int c : items_of) total += c;
          CHECK(total == images * groups * runs_per_row * kPairs);
          // The two runs of a warp (runs 2k, 2k + 1): both edge runs or both interior when a row has an even count.
          if (runs_per_row % 2 == 0)
            for (int run = 0; run < images * full_groups * runs_per_row; run += 2) {
              const auto edge = [&](int r) {
                const int q0 = dw_run(r, steps).q0;
                return q0 == 0 || q0 == (runs_per_row - 1) * kRun;
              };
              CHECK(edge(run) == edge(run + 1));
            }
        }
      }
}

TEST_CASE("mbconv tile: padded E holds each pixel once in its row and every window's column inside the row",
          "[mbconv][lesson11][cpu]") {
  // choose_tile's pad_e (launch_stage's kPadE): the expand writes tile pixel m at e_padded_place, the
  // depthwise item reads row h at (image·e_image + (h − h0)·ew + e_left) and its window from column
  // w0 = q0·stride − pad without a column test, the prologue zeroes e_pad_column(pc) of each row.
  // At every GPU test and bench shape the padded tile exists where the unpadded one does, with
  // as many rows and images or fewer (its E is larger: at the bench shapes it loses a row at
  // K = 5 on 28² and C = 112 @ 14², and its second image at K = 5 on 7²). Every tile of the
  // store and sums stages: places in the buffer, one
  // pixel each, in the pixel's row and column; the pad columns and the image's columns partition
  // the row; a window column that feeds an output q < Q lies inside its row, on the image's
  // pixel or on a pad (zero); the buffer holds what the kernel writes and reads.
  int checked = 0, fewer_rows = 0;
  for (const MBConvProblem& p : fused_shapes())
    for (Stage s : {Stage::store, Stage::sums}) {
      INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s));
      const Tile base = choose_tile(p, s, kH200Resident);
      if (base.rows == 0) continue;
      const Tile t = choose_tile(p, s, kH200Resident, EPad::columns);
      REQUIRE(t.rows > 0);
      REQUIRE(t.e_padded);
      CHECK(t.bytes <= kMaxShared);
      CHECK(t.rows <= base.rows);
      CHECK(t.images <= base.images);
      if (t.rows != base.rows || t.images != base.images) ++fewer_rows;
      else CHECK(t.tiles == base.tiles);
      CHECK(t.e_left == p.kernel / 2);
      CHECK(t.ew >= t.W + t.e_left);
      const std::size_t e_pixels = std::size_t(t.images) * t.in_rows * t.ew;
      CHECK(t.e_bytes >= e_pixels * kLdChunk * 2);
      CHECK((t.images == 1 ? t.e_image == 0 : t.e_image == t.in_rows * t.ew));
      std::vector<int> column_use(t.ew, 0);
      for (int c = 0; c < t.W; ++c) ++column_use[t.e_left + c];
      for (int pc = 0; pc < t.ew - t.W; ++pc) {
        const int col = e_pad_column(t, pc);
        REQUIRE((col >= 0 && col < t.ew));
        ++column_use[col];
      }
      for (int c = 0; c < t.ew; ++c) CHECK(column_use[c] == 1);
      const int kWindow = (kRun - 1) * p.stride + p.kernel;
      for (int tile = 0; tile < t.tiles; ++tile) {
        const int p0 = tile * t.rows, p1 = std::min(t.P, p0 + t.rows);
        const int h0 = std::max(0, p0 * p.stride - t.pad), h1 = std::min(t.H, (p1 - 1) * p.stride - t.pad + p.kernel);
        const int in_pixels = t.images * (h1 - h0) * t.W;
        std::set<int> places;
        for (int m = 0; m < in_pixels; ++m) {
          const int at = e_padded_place(t, m);
          CHECK((at >= 0 && std::size_t(at) < e_pixels));
          CHECK(at / t.ew == m / t.W);
          CHECK(at % t.ew == t.e_left + m % t.W);
          places.insert(at);
        }
        CHECK(int(places.size()) == in_pixels);
        // Every item's rows and window columns, as the kernel addresses them.
        for (int image = 0; image < t.images; ++image)
          for (int oh = p0; oh < p1; ++oh)
            for (int q0 = 0; q0 < t.Q; q0 += kRun) {
              const int w0 = q0 * p.stride - t.pad;
              for (int r = 0; r < p.kernel; ++r) {
                const int h = oh * p.stride - t.pad + r;
                if (h < 0 || h >= t.H) continue;  // the kernel's row test
                const int row_at = image * t.e_image + (h - h0) * t.ew + t.e_left;
                if (t.images > 1 || image == 0)
                  CHECK(row_at == e_padded_place(t, (image * (h1 - h0) + (h - h0)) * t.W));
                for (int u = 0; u < kWindow; ++u) {
                  const int col = w0 + u;  // image column; its place is row_at + col
                  CHECK(std::size_t(row_at + col) < e_pixels);
                  bool feeds = false;  // does the slot feed an output q < Q of the run (tap u − (q − q0)·stride)?
                  for (int qq = q0; qq < std::min(t.Q, q0 + kRun); ++qq) {
                    const int sft = u - (qq - q0) * p.stride;
                    feeds = feeds || (sft >= 0 && sft < p.kernel);
                  }
                  if (!feeds) continue;
                  CHECK(t.e_left + col >= 0);
                  CHECK(t.e_left + col < t.ew);  // inside its own row: the image's pixel or a zero pad
                }
              }
            }
        ++checked;
      }
    }
  CHECK(checked > 100);
  CHECK(fewer_rows > 0);  // the table reaches the boundary where padding costs a row
}

TEST_CASE("mbconv tile: row-padded E holds each pixel once, and every stored output's window rows are the image's or zero",
          "[mbconv][lesson11][cpu]") {
  // choose_tile's EPad::rows (the store plan's kPadRows; launch_stage instantiates the kernel for the
  // tile's dw_rows). The expand writes tile pixel m at e_row_padded_place(m, top), top = h0 − (p0·stride
  // − pad); zero_e_outside zeroes every other place; an item of row group g reads its kInRows =
  // (dw_rows − 1)·stride + K window rows at E rows g·dw_rows·stride + i with no test, and stores only
  // its rows below the tile's valid rows. Checked for every tile of every store-stage shape of the
  // GPU tables where the store plan pads E: the places are disjoint and inside the buffer; every window
  // row an item reads is inside its image's er rows; for a stored output, a row inside the image is
  // the expand's (the right input row), and one outside it is a zero row. The GPU test table must
  // reach each boundary of the form: zero rows above a first tile, an image's last group shorter
  // than dw_rows, several images a tile, items of more than one row, and E copied (e = 1).
  int checked = 0, fit = 0, top_rows = 0, short_groups = 0, several = 0, tall_items = 0, copied = 0;
  std::set<std::tuple<int, int, int>> kernels;  // (K, stride, dw_rows): the instantiations the GPU tests launch
  const std::vector<MBConvProblem> test_table = OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu);
  for (const MBConvProblem& p : fused_shapes()) {
    INFO(OpTraits<MBConvProblem>::spec(p));
    const bool in_test_table = std::any_of(test_table.begin(), test_table.end(), [&](const MBConvProblem& q) {
      return OpTraits<MBConvProblem>::spec(q) == OpTraits<MBConvProblem>::spec(p);
    });
    if (!p.has_se() || choose_tile(p, Stage::store).rows == 0 || !pad_e_pays(p, kH200Resident)) continue;
    const Tile columns = choose_tile(p, Stage::store, kH200Resident, EPad::columns);
    const Tile t = choose_tile(p, Stage::store, kH200Resident, EPad::rows);
    REQUIRE(t.rows > 0);
    REQUIRE(t.e_padded);
    REQUIRE(t.e_rows_padded);
    CHECK(columns.e_rows_padded == false);
    CHECK(t.bytes <= kMaxShared);
    CHECK(t.ew == columns.ew);
    if (!pad_rows_fit(p, kH200Resident)) continue;
    ++fit;
    CHECK(t.rows == columns.rows);
    CHECK(t.images == columns.images);
    CHECK(t.dw_rows == columns.dw_rows);
    CHECK(t.er >= t.in_rows);
    const std::size_t e_pixels = std::size_t(t.images) * t.er * t.ew;
    CHECK(t.e_bytes >= e_pixels * kLdChunk * 2);
    CHECK((t.images == 1 ? t.e_image == 0 : t.e_image == t.er * t.ew));
    const int in_rows_item = (t.dw_rows - 1) * p.stride + p.kernel;
    tall_items += in_test_table && t.dw_rows > 1;
    several += in_test_table && t.images > 1;
    copied += in_test_table && !p.has_expand();
    if (in_test_table) kernels.insert({p.kernel, p.stride, t.dw_rows});
    for (int tile = 0; tile < t.tiles; ++tile) {
      const int p0 = tile * t.rows, p1 = std::min(t.P, p0 + t.rows), valid_rows = p1 - p0;
      const int h0 = std::max(0, p0 * p.stride - t.pad), h1 = std::min(t.H, (p1 - 1) * p.stride - t.pad + p.kernel);
      const int top = h0 - (p0 * p.stride - t.pad);
      REQUIRE(top >= 0);
      CHECK(top + (h1 - h0) <= t.er);
      top_rows += in_test_table && top > 0 && t.tiles > 1;
      // What the expand writes (the kernel's e_row_padded_place) and what zero_e_outside zeroes.
      std::vector<int> written(e_pixels, -1);  // the tile pixel written at each place, −1: zeroed
      const int in_pixels = t.images * (h1 - h0) * t.W;
      for (int m = 0; m < in_pixels; ++m) {
        const int at = e_row_padded_place(t, m, top);
        REQUIRE((at >= 0 && std::size_t(at) < e_pixels));
        CHECK(written[at] == -1);
        written[at] = m;
        const int row = m / t.W, image = row / (h1 - h0);
        CHECK(at / t.ew == image * t.er + top + row % (h1 - h0));
        CHECK(at % t.ew == t.e_left + m % t.W);
      }
      for (std::size_t at = 0; at < e_pixels; ++at) {  // the expand writes the image's rows and columns
        const int row = int(at / t.ew) % t.er, col = int(at % t.ew);
        const bool expand = row >= top && row < top + (h1 - h0) && col >= t.e_left && col < t.e_left + t.W;
        CHECK(expand == (written[at] >= 0));
      }
      // zero_e_outside's pieces (e_zero_piece): inside the buffer, none on a channel piece the expand
      // writes, and every channel piece of every other place once.
      constexpr int kPixelPieces = kLdChunk * 2 / 16, kChannelPieces = kChunk * 2 / 16;
      std::vector<int> zeroed(e_pixels * kPixelPieces, 0);
      for (int i = 0; i < e_zero_pieces(t, h1 - h0); ++i) {
        const std::size_t at = e_zero_piece(t, top, h1 - h0, i);
        REQUIRE(at % 16 == 0);
        REQUIRE(at / 16 < zeroed.size());
        ++zeroed[at / 16];
      }
      for (std::size_t place = 0; place < e_pixels; ++place)
        for (int piece = 0; piece < kChannelPieces; ++piece)
          CHECK(zeroed[place * kPixelPieces + piece] == (written[place] >= 0 ? 0 : 1));
      // Every item's window rows, as the kernel addresses them.
      const int groups = (valid_rows + t.dw_rows - 1) / t.dw_rows;
      short_groups += in_test_table && valid_rows % t.dw_rows != 0;
      for (int image = 0; image < t.images; ++image)
        for (int g = 0; g < groups; ++g) {
          const int og = g * t.dw_rows;
          for (int i = 0; i < in_rows_item; ++i) {
            const int e_row = og * p.stride + i;  // within the image's er rows
            REQUIRE(e_row < t.er);
            const int h = (p0 + og) * p.stride - t.pad + i;
            for (int gg = 0; gg < t.dw_rows; ++gg) {
              const int r = i - gg * p.stride;
              if (r < 0 || r >= p.kernel || og + gg >= valid_rows) continue;  // no tap, or not stored
              const int at = (image * t.er + e_row) * t.ew + t.e_left;  // the row's column 0
              if (h >= 0 && h < t.H) {
                REQUIRE((h >= h0 && h < h1));  // a row the tile holds
                CHECK(written[at] == (image * (h1 - h0) + h - h0) * t.W);
              } else {
                CHECK(written[at] == -1);  // a zero row
              }
            }
          }
        }
      ++checked;
    }
  }
  CHECK(fit >= 5);
  CHECK(checked > 20);
  CHECK(top_rows > 0);
  CHECK(several > 0);
  CHECK(tall_items > 0);
  CHECK(short_groups > 0);  // the rows an item makes past its tile's last row: computed, not stored
  CHECK(copied > 0);
  for (const auto& [k, stride, rows] : kernels) UNSCOPED_INFO("K " << k << " stride " << stride << " rows " << rows);
  CHECK(kernels.size() == 9);  // each kernel launch_stage may choose: K = 3 at stride 1 makes 1 to 3 rows, the others 1 or 2
}

TEST_CASE("mbconv tile: where row-padded E keeps the column-padded tile", "[mbconv][lesson11][cpu]") {
  // C = 80 @ 14² (a goal shape): one image a tile, 14 rows, items of 2 rows; E grows from 14 to 16
  // rows of 16 pixels (+5 KB for its two buffers), and the tile stays under two CTAs' room. At
  // C = 112 @ 14² the same 5 KB pass that room (the column-padded tile is 112 800 bytes), so the
  // store plan keeps its columns-only E there.
  MBConvProblem p;
  p.N = 128, p.H = 14, p.W = 14, p.C = 80, p.C_out = 80, p.dtype = DType::f16;
  CHECK(pad_e_pays(p, kH200Resident));
  CHECK(pad_rows_fit(p, kH200Resident));
  const Tile t = choose_tile(p, Stage::store, kH200Resident, EPad::rows);
  CHECK(t.rows == 14);
  CHECK(t.dw_rows == 2);
  CHECK(t.er == 16);
  CHECK(t.ew == 16);
  CHECK(t.bytes <= kSharedTwoCtas);
  p.C = p.C_out = 112;
  CHECK(pad_e_pays(p, kH200Resident));
  CHECK_FALSE(pad_rows_fit(p, kH200Resident));
  CHECK(choose_tile(p, Stage::store, kH200Resident, EPad::columns).bytes <= kSharedTwoCtas);
  CHECK(tile_for(p, 14, Stage::store, 1, EPad::rows).bytes > kSharedTwoCtas);
}

TEST_CASE("mbconv tile: where the store stage pads E", "[mbconv][lesson11][cpu]") {
  // The bench shapes where padding lost in wave-3h's H100 run (56² and 28² at K = 3, stride 1;
  // 7² at K = 5) keep unpadded E; every other bench shape pads (112² e = 1: 16 runs a row, 2 edge
  // runs, no gain measured either way).
  int padded = 0, plain = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::bench, Device::gpu)) {
    INFO(OpTraits<MBConvProblem>::spec(p));
    const bool pays = pad_e_pays(p, kH200Resident);
    const bool narrow_many_runs = p.kernel == 3 && p.stride == 1 && p.Q() > 2 * kRun;
    const bool loses_image = p.kernel == 5 && p.H == 7;
    CHECK(pays == !(narrow_many_runs || loses_image));
    ++(pays ? padded : plain);
  }
  CHECK(padded >= 10);
  CHECK(plain >= 4);
  // The GPU test table reaches both of 11c's pass-1 kernels, and the padded one on its rarer
  // paths: e = 1 (E copied into the padded rows), several images a tile, K = 5 at stride 2.
  int table_padded = 0, table_plain = 0, padded_copy = 0, padded_images = 0, padded_k5s2 = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu)) {
    if (!(p.dtype == DType::f16 || p.dtype == DType::bf16) || !p.has_se() || choose_tile(p, Stage::store).rows == 0)
      continue;
    if (!pad_e_pays(p, kH200Resident)) {
      ++table_plain;
      continue;
    }
    ++table_padded;
    padded_copy += !p.has_expand();
    padded_images += choose_tile(p, Stage::store, kH200Resident, EPad::columns).images > 1;
    padded_k5s2 += p.kernel == 5 && p.stride == 2;
  }
  CHECK(table_padded > 0);
  CHECK(table_plain > 0);
  CHECK(padded_copy > 0);
  CHECK(padded_images > 0);
  CHECK(padded_k5s2 > 0);
}

TEST_CASE("mbconv tile: several images per tile keep per-image sums slots, dbuf blocks and gates",
          "[mbconv][lesson11][cpu]") {
  // red[image][slot][j]: the depthwise thread rtid owns slot rtid / kPairs and pair rtid % kPairs, so
  // (image, slot, pair) has one writer; reduce_sums writes partial[n + image, 0, c]: distinct per image.
  std::set<std::pair<int, int>> owners;
  for (int rtid = 0; rtid < kThreads; ++rtid) CHECK(owners.insert({rtid / kPairs, rtid % kPairs}).second);
  CHECK(kThreads / kPairs == kPixelGroups);
  MBConvProblem p;  // 3 × 3 images, hidden 96: sums/store take 6 images a tile at an H200
  p.N = 1101, p.H = p.W = 3, p.C = 16, p.C_out = 16, p.dtype = DType::f16;
  for (Stage s : {Stage::sums, Stage::store}) {
    const Tile t = choose_tile(p, s, kH200Resident);
    REQUIRE(t.images == 6);
    CHECK(t.groups == 184);
    CHECK(p.N - (t.groups - 1) * t.images == 3);  // the last group: 3 images
    CHECK(t.red_bytes == std::size_t(t.images) * kPixelGroups * kChunk * 4);
    // partial [N, tiles = 1, hidden]: image n + i of group b at ((b·images + i)·1 + 0)·hidden
    std::set<int> rows;
    for (int b = 0; b < t.groups; ++b)
      for (int i = 0; i < std::min(t.images, p.N - b * t.images); ++i) CHECK(rows.insert(b * t.images + i).second);
    CHECK(int(rows.size()) == p.N);
    // dbuf: image n + i's chunk block starts i·image_dbuf after image n's
    CHECK(dbuf_offset(t, 7, 2, 0) == dbuf_offset(t, 6, 2, 0) + t.image_dbuf);
  }
  const Tile y = choose_tile(p, Stage::project, kH200Resident);
  CHECK(y.images == 2);  // N / (2 · 264): the project does not split chunks
  CHECK(y.v_bytes == std::size_t(2 + y.images) * kChunk * 4);  // be, bd, then one gate row per image
  CHECK(y.acc_tiles() <= kWarps * kMaxAccTiles);
  // Below two waves the grid keeps one image per tile.
  p.N = 64;
  for (Stage s : kStages) CHECK(choose_tile(p, s, kH200Resident).images == 1);
}

TEST_CASE("mbconv tile: images per tile at the goal shapes", "[mbconv][lesson11][cpu]") {
  struct Goal {
    int H, C, k, stride, C_out, images;  // N = 128, e = 6, SE 0.25; images: sums and store at an H200
  };
  // 7 × 7, C = 192: two images (106 KB of shared memory; three would take 129 KB, over two CTAs'
  // 113 KB). 14 × 14 and larger: one image or less already fills two CTAs' shared memory.
  for (const Goal g : {Goal{7, 192, 3, 1, 192, 2}, Goal{7, 192, 5, 1, 192, 2}, Goal{7, 192, 3, 1, 320, 2},
                       Goal{14, 80, 3, 1, 80, 1}, Goal{14, 112, 3, 1, 112, 1}, Goal{14, 80, 5, 1, 112, 1},
                       Goal{14, 112, 5, 1, 112, 1}, Goal{14, 112, 5, 2, 192, 1}, Goal{28, 40, 3, 1, 40, 1},
                       Goal{28, 40, 5, 1, 40, 1}, Goal{28, 40, 3, 2, 80, 1}, Goal{56, 24, 3, 1, 24, 1}}) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = g.H, p.C = g.C, p.kernel = g.k, p.stride = g.stride, p.C_out = g.C_out, p.dtype = DType::f16;
    INFO(OpTraits<MBConvProblem>::spec(p));
    for (Stage s : {Stage::sums, Stage::store}) {
      Tile t = choose_tile(p, s, kH200Resident);
      CHECK(t.images == g.images);
      CHECK(t.bytes <= kSharedTwoCtas);
      // a small image is one tile (but at C = 112, k = 5: 9 rows of 14 fill two CTAs' shared memory)
      if (g.H <= 14 && g.stride == 1 && !(g.C == 112 && g.k == 5)) CHECK(t.rows == t.P);
      if (t.images > 1) CHECK(tile_for(p, t.rows, s, t.images + 1).bytes > kSharedTwoCtas);
      split_tile(t, s, kH200Resident);
      // tiles of several images: still two waves; of one image, split_tile's fewest waves for the
      // work, which at these shapes never leaves a tenth of the first wave idle
      if (t.images > 1) CHECK(1LL * t.tiles * t.groups * t.splits >= 2LL * kH200Resident);
      else CHECK(10LL * t.tiles * t.groups * t.splits >= 9LL * kH200Resident);
    }
    CHECK(choose_tile(p, Stage::project, kH200Resident).images == 1);  // N / 528 < 2
  }
}

TEST_CASE("mbconv tile: the GPU test table holds tiles of several images with a short last group",
          "[mbconv][lesson11][cpu]") {
  // The registry tests check every rung on these shapes against the reference; make sure some of
  // them take the multi-image path at an H200's residency, in each stage that has one.
  int sums = 0, project_several = 0, short_last = 0, no_se = 0, no_expand = 0, stride2 = 0, k5 = 0, plain = 0;
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu)) {
    if (p.dtype != DType::f16 && p.dtype != DType::bf16) continue;
    const Tile t = choose_tile(p, Stage::store, kH200Resident);
    const Tile y = choose_tile(p, Stage::project, kH200Resident);
    if (t.images > 1) {
      ++sums;
      if (p.N % t.images != 0) ++short_last;
      if (!p.has_expand()) ++no_expand;
      if (p.stride == 2) ++stride2;
      if (p.kernel == 5) ++k5;
      if (!vector_copies_ok(p, {})) ++plain;
    }
    if (y.images > 1) {
      ++project_several;
      if (!p.has_se()) ++no_se;
      if (p.N % y.images != 0) ++short_last;
    }
    CHECK(p.flops() < 1.1e8);  // the sanitizer stage's budget keeps every shape (1e9; racecheck 1e8)
  }
  CHECK(sums >= 5);
  CHECK(project_several >= 2);
  CHECK(no_se >= 1);
  CHECK(short_last >= 5);
  CHECK(no_expand >= 1);
  CHECK(stride2 >= 2);
  CHECK(k5 >= 2);
  CHECK(plain >= 1);
}

TEST_CASE("mbconv tile: ldmatrix .x2.trans on a [k][n] tile gives the mma B fragment", "[mbconv][lesson11][cpu]") {
  // .x2: lanes 0-15 address rows k = lane of the 16 x 8 tile (matrix m = k / 8, row k % 8).
  // .trans: register m of lane 4·g + t holds elements (2t + h, g) of matrix m, i.e. k = 8m + 2t + h, n = g.
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 2; ++reg)
      for (int half = 0; half < 2; ++half) {
        const int g = lane / 4, t = lane % 4;
        const int supplier = 8 * reg + 2 * t + half;  // the lane whose row address was used
        const MatrixCoord got{supplier, g};           // {k, n}: row supplier of the tile, column g
        CHECK(supplier < 16);
        CHECK(got == mma_b_coord(lane, reg, half));
      }
}

TEST_CASE("mbconv tile: 11e's diagonal B fragments are diag(w) in the m16n8k8 layout", "[mbconv][lesson11][cpu]") {
  // Lane 4g + t, register b0, half h holds B[k][n] with {k, n} = mma_b_coord(lane, 0, h); B = diag(w)
  // of channels 8·nb .. 8·nb + 7, so the element is w[8·nb + n] where k == n, else 0.
  for (int nb = 0; nb < 4; ++nb)
    for (int lane = 0; lane < 32; ++lane) {
      const int slot = dw_fragment_slot(lane);
      const std::uint16_t weight = slot < 8 ? std::uint16_t(0x1000 + 8 * nb + slot) : 0;  // a distinct value per channel
      const std::uint32_t word = dw_fragment_word(slot, weight);
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord kn = mma_b_coord(lane, 0, half);
        const std::uint16_t want = kn.row == kn.col ? std::uint16_t(0x1000 + 8 * nb + kn.col) : 0;
        CHECK(std::uint16_t(word >> (16 * half)) == want);
      }
    }
}

TEST_CASE("mbconv tile: 11e's gathers read the x tile's pixel of every tap, splitting pixels by multiply-high",
          "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : fused_shapes())
    for (int resident : {0, kH200Resident}) {
      const Tile t = resident ? choose_tile(p, Stage::store, resident) : choose_tile(p, Stage::store);
      INFO(OpTraits<MBConvProblem>::spec(p) << " images " << t.images);
      CHECK(t.images <= kMaxImages);  // one row of the sums' m16 tile per image
      CHECK(t.dwf_bytes >= dw_fragment_bytes(p.kernel) + kZeroRowBytes);
      // The first and last tile of an image, a full group of images and the batch's last (short) group.
      for (int tile : {0, t.tiles - 1})
        for (int images : {std::min(t.images, p.N), p.N - (t.groups - 1) * t.images}) {
          const int p0 = tile * t.rows, p1 = std::min(t.P, p0 + t.rows);
          const int h0 = std::max(0, p0 * t.stride - t.pad), h1 = std::min(t.H, (p1 - 1) * t.stride - t.pad + p.kernel);
          const int image_out = (p1 - p0) * t.Q, image_in = (h1 - h0) * t.W;
          const int out_pixels = images * image_out, in_pixels = images * image_in;
          if (images > 1) REQUIRE(image_out == t.image_out);
          for (int pl = 0; pl < out_pixels; ++pl) {
            const TilePixel at = split_tile_pixel(t, pl);
            REQUIRE(at.image == pl / image_out);
            REQUIRE(at.pix == pl % image_out);
            const int oh = fast_quotient(t.q_div, at.pix), ow = at.pix - oh * t.Q;
            REQUIRE(oh == at.pix / t.Q);
            const int base = gather_row(t, at.image, oh, ow, p0, h0);
            for (int r = 0; r < p.kernel; ++r)
              for (int c = 0; c < p.kernel; ++c) {
                const int ih = (p0 + oh) * t.stride - t.pad + r, iw = ow * t.stride - t.pad + c;
                if (ih < 0 || ih >= t.H || iw < 0 || iw >= t.W) continue;  // the zero row
                const int row = base + r * t.W + c;
                // The x tile (and E) holds images · (h1 − h0) · W pixels, image by image, row by row.
                REQUIRE((row >= 0 && row < in_pixels));
                CHECK(row / image_in == at.image);
                CHECK(row % image_in / t.W + h0 == ih);
                CHECK(row % t.W == iw);
              }
          }
        }
    }
}

TEST_CASE("mbconv tile: the 16-byte copy path copies whole, aligned vectors", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : fused_shapes()) {
    if (!vector_copies_ok(p, {})) continue;
    const int taps = p.kernel * p.kernel;
    for (int c0 = 0; c0 < p.hidden(); c0 += kChunk) {
      const int cw = std::min(kChunk, p.hidden() - c0);
      CHECK(cw % 8 == 0);                 // a chunk's columns: whole vectors
      CHECK((c0 * taps * 2) % 16 == 0);   // the depthwise slice starts on 16 bytes
      CHECK((cw * taps) % 8 == 0);        // and is whole vectors
      CHECK((kChunk * taps) % 8 == 0);
    }
    for (Stage s : kStages) {
      const Tile t = choose_tile(p, s);
      CHECK(t.c_pad % 8 == 0);
      CHECK(t.cout_pad == p.C_out);
    }
  }
  MBConvProblem odd;
  odd.C = 20, odd.expand = 4, odd.C_out = 12;
  CHECK_FALSE(vector_copies_ok(odd, {}));
  MBConvProblem even;
  even.C = 24, even.C_out = 24;
  CHECK(vector_copies_ok(even, {}));
  alignas(16) static unsigned char buffer[32];
  CHECK_FALSE(vector_copies_ok(even, {buffer + 2}));
  CHECK(vector_copies_ok(even, {buffer, nullptr}));
}

}  // namespace

namespace {

// Every pass-2 tile the tests look at: the chosen ones, and every entry of kProjectTiles.
std::vector<MBConvProblem> project_shapes() {
  std::vector<MBConvProblem> shapes = fused_shapes();
  MBConvProblem one_pixel;  // 150 one-pixel images: a block spans 129 of them
  one_pixel.N = 150, one_pixel.H = one_pixel.W = 1, one_pixel.C = 32, one_pixel.C_out = 32, one_pixel.dtype = DType::f16;
  shapes.push_back(one_pixel);
  MBConvProblem odd;  // hidden 21 (one chunk of 21), C_out 67, 1101 tiny images: odd sizes everywhere
  odd.N = 1101, odd.H = 3, odd.W = 5, odd.C = 7, odd.expand = 3, odd.C_out = 67, odd.dtype = DType::f16;
  shapes.push_back(odd);
  MBConvProblem wide = odd;  // C_out 136 with a residual (C = C_out, not a multiple of 8 in hidden)
  wide.N = 7, wide.H = wide.W = 9, wide.C = 136, wide.expand = 1, wide.C_out = 136;
  shapes.push_back(wide);
  return shapes;
}

// The kernel's control flow, replayed on the host for one CTA: the copy cursor (block ib, step ik,
// buffer i_buf, X region i_x) runs stages − 1 stages ahead of the compute cursor (cb, ck, c_buf,
// c_x), as mbconv_project_kernel's prologue and loop do. Checks that every stage is computed from
// the buffer its copy wrote, that no copy overwrites a buffer (stage or X region) before the
// compute has finished with its previous contents (a copy at iteration i may reuse what was
// last read at an iteration < i: the barrier at the top of iteration i separates them), and
// returns the (block, step) pairs computed.
std::vector<std::pair<int, int>> replay_cta(const ProjectTile& t, int cta) {
  constexpr int kUnread = -1000;  // before any iteration, the prologue's (-1) included
  struct Slot {
    int block = -1, step = -1, last_read = kUnread;
  };
  std::vector<Slot> stage(t.stages), xr(std::max(1, t.x_buffers));
  int ib = cta, ik = 0, i_buf = 0, i_x = 0, cb = cta, ck = 0, c_buf = 0, c_x = 0;
  const auto issue = [&](int iteration) {
    if (ib >= t.blocks) return;
    CHECK(stage[i_buf].last_read < iteration);
    CHECK((stage[i_buf].block < 0 || stage[i_buf].last_read >= 0));  // the previous contents were used
    stage[i_buf] = {ib, ik, kUnread};
    if (t.x_staged && ik == t.steps - 1) {
      CHECK(xr[i_x].last_read < iteration);
      CHECK((xr[i_x].block < 0 || xr[i_x].last_read >= 0));
      xr[i_x] = {ib, ik, kUnread};
      i_x = i_x + 1 == t.x_buffers ? 0 : i_x + 1;
    }
    i_buf = i_buf + 1 == t.stages ? 0 : i_buf + 1;
    if (++ik == t.steps) ik = 0, ib += t.grid;
  };
  for (int s = 0; s < t.stages - 1; ++s) issue(-1);
  std::vector<std::pair<int, int>> done;
  for (int iteration = 0; cb < t.blocks; ++iteration) {
    issue(iteration);
    CHECK(stage[c_buf].block == cb);
    CHECK(stage[c_buf].step == ck);
    stage[c_buf].last_read = iteration;
    done.emplace_back(cb, ck);
    c_buf = c_buf + 1 == t.stages ? 0 : c_buf + 1;
    if (++ck < t.steps) continue;
    if (t.x_staged) {
      CHECK(xr[c_x].block == cb);  // the epilogue reads its own block's x rows
      xr[c_x].last_read = iteration;
      c_x = c_x + 1 == t.x_buffers ? 0 : c_x + 1;
    }
    ck = 0, cb += t.grid;
  }
  return done;
}

}  // namespace

TEST_CASE("mbconv tile: fast_quotient divides like /", "[mbconv][lesson11][cpu]") {
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int b = 12; b <= 31; ++b) {
    const std::uint32_t p2 = std::uint32_t(1) << b;
    for (std::uint32_t d : {p2 - 1, p2, p2 + 1}) if (d >= 1 && d <= 0x80000000u) divisors.push_back(d);
  }
  for (std::uint32_t d : {3136u, 784u, 196u, 49u, 25u, 15u, 12544u, 2147483647u}) divisors.push_back(d);
  std::uint64_t state = 12345;
  const auto next = [&]() { state = state * 6364136223846793005ULL + 1442695040888963407ULL; return std::uint32_t(state >> 33); };
  int checked = 0;
  for (std::uint32_t d : divisors) {
    const FastDiv f = fast_div(d);
    std::vector<std::uint32_t> numerators = {0, 1, d - 1, d, d + 1, 2 * std::uint64_t(d) < 0x80000000u ? 2 * d - 1 : 5,
                                             0x7fffffffu, 0x7ffffffeu, 0x7fffffffu - d, 401408u, 6272u};
    for (int i = 0; i < 64; ++i) numerators.push_back(next() & 0x7fffffffu);
    for (int i = 0; i < 16; ++i) numerators.push_back(next() % std::min<std::uint64_t>(0x7fffffffu, 64ULL * d));
    for (std::uint32_t n : numerators) {
      if (n > 0x7fffffffu) continue;
      INFO("n " << n << " d " << d);
      REQUIRE(fast_quotient(f, int(n)) == int(n / d));
      ++checked;
    }
  }
  CHECK(checked > 300000);
}

TEST_CASE("mbconv tile: the persistent pass 2 reads D where pass 1 wrote it, with the gates of the rows' images",
          "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : project_shapes()) {
    std::vector<ProjectTile> tiles;
    for (int sms : {1, 78, 132}) tiles.push_back(choose_project_tile(p, sms));
    for (ProjectShape s : kProjectTiles) tiles.push_back(project_tile_for(p, s, 132));
    const Tile pass1 = choose_tile(p, Stage::store);
    for (const ProjectTile& t : tiles) {
      INFO(OpTraits<MBConvProblem>::spec(p) << " tile " << t.bm << "x" << t.bn << "x" << t.ks);
      REQUIRE(t.bm > 0);
      CHECK(t.stages == project_stages(t.ks));
      CHECK(t.bytes == t.stages * t.stage_bytes + t.x_buffers * t.x_bytes);
      CHECK(t.resident == (t.bytes <= kSharedTwoCtas ? 2 : 1));
      CHECK(t.a_bytes % 16 == 0);
      CHECK(t.b_bytes % 16 == 0);
      CHECK(t.g_bytes % 16 == 0);
      CHECK(t.x_bytes % 16 == 0);
      CHECK(t.lda >= t.ks);
      CHECK(t.lda % 8 == 0);  // ldmatrix rows: an odd number of 16-byte units
      CHECK((t.lda / 8) % 2 == 1);
      CHECK((t.ldb / 8) % 2 == 1);
      CHECK((t.ldx / 8) % 2 == 1);
      CHECK(t.ldb >= t.bn);
      CHECK(t.ldx >= t.bn);
      CHECK(t.a_bytes >= std::size_t(t.bm) * t.lda * 2);
      CHECK(t.b_bytes >= std::size_t(t.ks) * t.ldb * 2);
      CHECK(t.g_bytes >= std::size_t(t.span) * t.ks * 2);
      CHECK(t.x_bytes >= std::size_t(t.bm) * t.ldx * 2);
      CHECK(t.x_staged == (p.has_residual() && p.C % 8 == 0));
      CHECK(t.x_buffers == (t.x_staged ? project_x_buffers(t.steps, t.stages) : 0));
      CHECK(std::int64_t(t.m) == std::int64_t(p.N) * p.P() * p.Q());
      CHECK(std::int64_t(t.m_blocks) * t.bm >= t.m);
      CHECK(std::int64_t(t.m_blocks - 1) * t.bm < t.m);
      CHECK(std::int64_t(t.n_blocks) * t.bn >= p.C_out);
      CHECK(t.blocks == t.m_blocks * t.n_blocks);
      CHECK(t.grid == std::min(t.blocks, t.resident * t.sms));
      CHECK(t.steps * t.ks >= t.hidden);
      CHECK((t.steps - 1) * t.ks < t.hidden);
      CHECK(t.d_live % 8 == 0);  // gate16 rows and dbuf chunk columns: whole 16-byte pieces
      // Every block's origin, its rows' images and slots, against plain division.
      for (int b = 0; b < t.blocks; b += std::max(1, t.blocks / 997)) {
        const int mb = fast_quotient(t.nb_div, b);
        CHECK(mb == b / t.n_blocks);
        const int m0 = mb * t.bm, last = std::min(m0 + t.bm, t.m) - 1;
        CHECK(project_gate_slot(t, m0, m0) == 0);
        for (int m = m0; m <= last; m += std::max(1, (last - m0) / 37)) {
          CHECK(project_gate_slot(t, m0, m) == m / t.pq - m0 / t.pq);
          CHECK(project_gate_slot(t, m0, m) < t.span);
        }
        CHECK(project_gate_slot(t, m0, last) < t.span);
      }
      // The rows pass 2 copies are the ones pass 1 stored: dbuf_offset's layout, chunk by chunk
      // (a stage of 64 channels reads chunks 2k and 2k + 1 of the same row).
      const int probes[] = {0, 1, t.pq - 1, t.pq, t.m / 2, t.m - 1};
      for (int m : probes) {
        if (m < 0 || m >= t.m) continue;
        const int n = m / t.pq, pixel = m - n * t.pq;
        for (int chunk = 0; chunk < t.chunks; ++chunk)
          CHECK(project_row_offset(t, m) + std::ptrdiff_t(chunk) * t.pq * kChunk == dbuf_offset(pass1, n, chunk, pixel));
      }
    }
  }
}

TEST_CASE("mbconv tile: 11c's persistent pass 2 computes every block's steps once, each from the stage its copy wrote",
          "[mbconv][lesson11][cpu]") {
  int replayed = 0;
  for (const MBConvProblem& p : project_shapes())
    for (int sms : {1, 3, 132}) {
      std::vector<ProjectTile> tiles = {choose_project_tile(p, sms)};
      for (ProjectShape s : kProjectTiles) tiles.push_back(project_tile_for(p, s, sms));
      for (const ProjectTile& t : tiles) {
        if (std::int64_t(t.blocks) * t.steps > 200000) continue;  // the goal shapes: long enough at small N
        INFO(OpTraits<MBConvProblem>::spec(p) << " sms " << sms << " tile " << t.bm << "x" << t.bn << "x" << t.ks
                                              << " steps " << t.steps << " x_buffers " << t.x_buffers);
        std::vector<int> count(std::size_t(t.blocks) * t.steps, 0);
        for (int cta = 0; cta < t.grid; ++cta)
          for (const auto& [block, step] : replay_cta(t, cta)) ++count[std::size_t(block) * t.steps + step];
        CHECK(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
        ++replayed;
      }
    }
  CHECK(replayed > 100);
  // The X regions' count is what the replay needs: one fewer fails it where steps < stages.
  MBConvProblem tiny;  // hidden 24: one step; residual with C a multiple of 8
  tiny.N = 50, tiny.H = tiny.W = 4, tiny.C = 8, tiny.expand = 3, tiny.C_out = 8, tiny.dtype = DType::f16;
  ProjectTile t = project_tile_for(tiny, {64, 64, 32}, 1);
  REQUIRE(t.steps == 1);
  CHECK(t.x_buffers == 4);
  CHECK(project_x_buffers(5, 4) == 1);
  CHECK(project_x_buffers(2, 4) == 2);
  CHECK(project_x_buffers(3, 4) == 2);
  CHECK(project_x_buffers(2, 3) == 2);
}

TEST_CASE("mbconv tile: pass 2's cost model and its choice", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : project_shapes())
    for (int sms : {1, 78, 132}) {
      // Blocks of the busiest SM and of the busiest CTA, replayed: CTA c on SM c mod sms, making
      // blocks c, c + grid, ...
      for (ProjectShape s : kProjectTiles) {
        const ProjectTile t = project_tile_for(p, s, sms);
        std::vector<long long> per_sm(sms, 0), per_cta(t.grid, 0);
        for (int b = 0; b < t.blocks; ++b) ++per_cta[b % t.grid];
        for (int cta = 0; cta < t.grid; ++cta) per_sm[cta % sms] += per_cta[cta];
        const long long sm_blocks = *std::max_element(per_sm.begin(), per_sm.end());
        const long long cta_blocks = *std::max_element(per_cta.begin(), per_cta.end());
        const ProjectCount c = project_count(t);
        INFO(OpTraits<MBConvProblem>::spec(p) << " sms " << sms << " tile " << s.bm << "x" << s.bn << "x" << s.ks);
        const double per_block = t.steps * (c.mma + c.other) + c.block;
        const double cycles = std::max(sm_blocks * per_block * kWarps / 4.0, cta_blocks * per_block * kProjectWarpCpi);
        CHECK(std::abs(project_cycles(t) - cycles) <= 1e-9 * cycles);
        // mma per warp and stage: the block's m16n8k16 tiles over the 8 warps.
        CHECK(c.mma == double(s.bm / 16) * (s.bn / 8) * (s.ks / 16) / kWarps);
      }
      // The choice: no tile that leaves two CTAs per SM is cheaper by more than the tie margin.
      const ProjectTile best = choose_project_tile(p, sms);
      INFO(OpTraits<MBConvProblem>::spec(p) << " sms " << sms << " chose " << best.bm << "x" << best.bn << "x" << best.ks);
      REQUIRE(best.bm > 0);
      for (ProjectShape s : kProjectTiles) {
        const ProjectTile t = project_tile_for(p, s, sms);
        if (best.resident == 2 && t.resident == 1) continue;
        CHECK(project_cycles(best) <= project_cycles(t) * 1.001 + 1e-9);
      }
      if (best.resident == 1)
        for (ProjectShape s : kProjectTiles) CHECK(project_tile_for(p, s, sms).resident == 1);
    }
}

// The persistent pass 2 (mbconv_project.cuh): 11e takes it where the stream's whole Wp does not
// fit a CTA (C = 112 @ 14², 7² below; 11c's cta_part stream takes those, and leaves it only past
// hidden 7200); at 56² they stream, and the tile stays here as the large-M
// case of choose_project_tile.
TEST_CASE("mbconv tile: the persistent pass 2's tile at the goal shapes", "[mbconv][lesson11][cpu]") {
  MBConvProblem p;
  p.N = 128, p.dtype = DType::f16;
  // 56 × 56 × 24 (M = 401 408, DRAM-bound): 256 × 32, 1568 blocks on 264 CTAs (5.9 each, 30 stages
  // in one pipeline), x staged in one region (5 steps ≥ 4 stages); 113 152 bytes: two CTAs per SM.
  p.H = p.W = 56, p.C = p.C_out = 24;
  ProjectTile t = choose_project_tile(p, 132);
  CHECK(t.bm == 256);
  CHECK(t.bn == 32);
  CHECK(t.ks == 32);
  CHECK(t.n_blocks == 1);
  CHECK(t.grid == 264);
  CHECK(t.x_buffers == 1);
  CHECK(t.resident == 2);
  // 14 × 14 × 112 (hidden 672): 64 × 64 with 64-channel stages, 784 blocks on 264 CTAs (3 each at
  // most, 11 stages a block); 64 × 128 × 64 (392 blocks: a CTA of two blocks beside one of one)
  // is 4 % dearer on its chain.
  p.H = p.W = 14, p.C = p.C_out = 112;
  t = choose_project_tile(p, 132);
  CHECK(t.bm == 64);
  CHECK(t.bn == 64);
  CHECK(t.ks == 64);
  CHECK(t.resident == 2);
  CHECK(t.blocks == 784);
  // 7 × 7 × 192 (hidden 1152): 64 × 128 with 64-channel stages: 196 blocks, one per CTA, 18 stages,
  // 32 mma per warp and stage; 98 432 bytes: two CTAs per SM.
  p.H = p.W = 7, p.C = p.C_out = 192;
  t = choose_project_tile(p, 132);
  CHECK(t.bm == 64);
  CHECK(t.bn == 128);
  CHECK(t.ks == 64);
  CHECK(t.span == 3);  // 64 rows of 49-pixel images
  CHECK(t.resident == 2);
  CHECK(t.grid == 196);
}

TEST_CASE("mbconv stream (pass 2 as warp tasks): a lane's 16-byte pieces and Wp's staged rows multiply to D·Wp",
          "[mbconv][lesson11][cpu]") {
  // stream_channel is a bijection of (step, k) onto the chunk's 32 channels.
  std::set<int> channels;
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 16; ++k) channels.insert(stream_channel(s, k));
  CHECK(channels.size() == 32u);
  CHECK(*channels.begin() == 0);
  CHECK(*channels.rbegin() == 31);
  // One chunk: D [16 rows][32 channels] times Wp [32][8], through the kernel's maps. Lane 4g + t
  // holds the 16-byte pieces of rows g and g + 8, channels 8t .. 8t + 7 (register r: 8t + 2r, + 1).
  // Fragment register `reg`, half h of step s is piece register stream_piece_register(s, reg) of
  // row g + 8·(reg & 1), element h; mma_a_coord says which (row, k) of A it is. B's k rows are the
  // staged rows 16s + k = Wp row stream_channel(s, k), and ldmatrix .trans hands lane 4g + t the
  // elements (k, n) = mma_b_coord (the test above). The mma's sum over both steps must be D·Wp.
  std::uint64_t state = 12345;
  const auto next = [&]() { state = state * 6364136223846793005ull + 1442695040888963407ull; return int(state >> 59) - 16; };
  std::vector<long> d(16 * 32), w(32 * 8);
  for (long& v : d) v = next();
  for (long& v : w) v = next();
  std::vector<long> got(16 * 8, 0), want(16 * 8, 0);
  for (int row = 0; row < 16; ++row)
    for (int n = 0; n < 8; ++n)
      for (int c = 0; c < 32; ++c) want[row * 8 + n] += d[row * 32 + c] * w[c * 8 + n];
  for (int s = 0; s < 2; ++s) {
    std::vector<long> a(16 * 16, 0), b(16 * 8, 0);
    std::vector<int> a_seen(16 * 16, 0), b_seen(16 * 8, 0);
    for (int lane = 0; lane < 32; ++lane)
      for (int half = 0; half < 2; ++half) {
        for (int reg = 0; reg < 4; ++reg) {
          const MatrixCoord at = mma_a_coord(lane, reg, half);
          const int row = lane / 4 + 8 * (reg & 1);
          const int channel = 8 * (lane % 4) + 2 * stream_piece_register(s, reg) + half;
          CHECK(at.row == row);
          a[at.row * 16 + at.col] = d[row * 32 + channel];
          ++a_seen[at.row * 16 + at.col];
        }
        for (int reg = 0; reg < 2; ++reg) {
          const MatrixCoord kn = mma_b_coord(lane, reg, half);
          b[kn.row * 8 + kn.col] = w[stream_channel(s, kn.row) * 8 + kn.col];
          ++b_seen[kn.row * 8 + kn.col];
        }
      }
    CHECK(std::count(a_seen.begin(), a_seen.end(), 1) == 16 * 16);
    CHECK(std::count(b_seen.begin(), b_seen.end(), 1) == 16 * 8);
    for (int row = 0; row < 16; ++row)
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k) got[row * 8 + n] += a[row * 16 + k] * b[k * 8 + n];
  }
  CHECK(got == want);
}

TEST_CASE("mbconv stream (pass 2 as warp tasks): the tile at the goal shapes and its limits", "[mbconv][lesson11][cpu]") {
  MBConvProblem p;
  p.N = 128, p.dtype = DType::f16;
  // C = 24 @ 56²: Wp 144 × 24 in 3 n8 tiles, one part, 5 chunks of staged rows (48-byte rows, 3 units).
  p.H = p.W = 56, p.C = p.C_out = 24;
  StreamTile t = stream_tile_for(p, 24);
  CHECK(t.parts == 1);
  CHECK(t.nt == 3);
  CHECK(t.ldb == 24);
  CHECK(t.chunks == 5);
  CHECK(t.wb_bytes == 5u * 32 * 24 * 2);
  CHECK(t.bytes == t.wb_bytes + 48);
  CHECK(t.tasks == 128 * 56 * 56 / 16);
  CHECK(stream_tile_fits(t));
  // C = 40 @ 28²: 5 n8 tiles, 8 chunks. C = 80 @ 14²: two parts of 5, Wp 480 × 88 staged (84 KB).
  // C = 112 @ 14²: three parts of 5, but Wp 672 × 120 is 161 KB: 11e's persistent GEMM; where
  // cta_part is allowed (11c), one part a CTA, 672 × 40 (53 KB).
  p.H = p.W = 28, p.C = p.C_out = 40;
  t = stream_tile_for(p, 40);
  CHECK(t.parts == 1);
  CHECK(t.nt == 5);
  CHECK(t.chunks == 8);
  CHECK(stream_tile_fits(t));
  p.H = p.W = 14, p.C = p.C_out = 80;
  t = stream_tile_for(p, 80);
  CHECK(t.parts == 2);
  CHECK(t.nt == 5);
  CHECK(t.ldb == 88);
  CHECK(t.tasks == 128 * 14 * 14 / 16 * 2);
  CHECK(stream_tile_fits(t));
  CHECK_FALSE(t.cta_part);
  CHECK_FALSE(stream_tile_for(p, 80, true).cta_part);  // whole Wp fits: allowed or not, the same tile
  CHECK(stream_tile_for(p, 80, true).bytes == t.bytes);
  p.C = p.C_out = 112;
  t = stream_tile_for(p, 112);
  CHECK_FALSE(t.cta_part);
  CHECK(t.parts == 3);
  CHECK(t.cols == 120);
  CHECK_FALSE(stream_tile_fits(t));
  t = stream_tile_for(p, 112, true);
  CHECK(t.cta_part);
  CHECK(t.parts == 3);
  CHECK(t.nt == 5);
  CHECK(t.cols == 40);
  CHECK(t.ldb == 40);  // 5 units: odd already
  CHECK(t.wb_bytes == 21u * 32 * 40 * 2);
  CHECK(t.bytes == t.wb_bytes + 80);
  CHECK(t.bytes <= kSharedTwoCtas);
  CHECK(stream_row_tiles(t) == 128 * 14 * 14 / 16);
  CHECK(t.tasks == 128 * 14 * 14 / 16 * 3);
  CHECK(stream_tile_fits(t));
  // Its grid on an H200 (264 resident CTAs): 88 row groups of the three parts.
  CHECK(stream_grid(t, 264) == 264);
  CHECK(stream_grid(t, 263) == 261);
  CHECK(stream_grid(t, 2) == 3);
  // C = 192 @ 7² (hidden 1152, 36 chunks): whole Wp does not fit (11e's persistent GEMM).
  // Allowed: four parts of 6 n8 tiles, but one part is 48 columns on a 56-element stride, 126 KB;
  // five parts of 5 (40 columns, 90 KB) fit.
  p.H = p.W = 7, p.C = p.C_out = 192;
  CHECK_FALSE(stream_tile_fits(stream_tile_for(p, 192)));
  t = stream_tile_for(p, 192, true);
  CHECK(t.cta_part);
  CHECK(t.parts == 5);
  CHECK(t.nt == 5);
  CHECK(t.cols == 40);
  CHECK(t.bytes == 36u * 32 * 40 * 2 + 80);
  CHECK(stream_tile_fits(t));
  StreamTile six = t;
  stream_tile_cut(six, 24, 6, true);
  CHECK(six.nt == 6);
  CHECK(six.bytes > kSharedTwoCtas);
  // Hidden 7232 (226 chunks), cta_part allowed: one n8 tile a part is 8 columns × 7232 rows + 16
  // bytes of bp, 512 bytes past kSharedTwoCtas: the persistent GEMM. 7200 (225 chunks) fits; not
  // allowed, neither (Wp 7200 × 16 whole is 230 KB).
  p.H = p.W = 3, p.C = 32, p.expand = 226, p.C_out = 16;
  t = stream_tile_for(p, 16, true);
  CHECK(t.cta_part);
  CHECK(t.nt == 1);
  CHECK(t.bytes == 226u * 32 * 8 * 2 + 16);
  CHECK_FALSE(stream_tile_fits(t));
  p.C = 40, p.expand = 180;
  CHECK(stream_tile_fits(stream_tile_for(p, 16, true)));
  CHECK_FALSE(stream_tile_fits(stream_tile_for(p, 16)));
  // Every shape of the tables: parts of at most kStreamMaxNT n8 tiles covering C_out, none empty;
  // whole 16-byte rows with odd units; tasks covering every (row tile, part); the task split. The
  // whole-Wp form wherever it fits; else, where allowed, one part a CTA, of the most n8 tiles that
  // fit. Not allowed (11e): always the whole-Wp tile, which fits or leaves the stream.
  for (const MBConvProblem& q : project_shapes()) {
    const int ldw = (q.C_out + 7) / 8 * 8;
    const StreamTile s = stream_tile_for(q, ldw, true), rung = stream_tile_for(q, ldw);
    INFO(OpTraits<MBConvProblem>::spec(q));
    CHECK_FALSE(rung.cta_part);
    CHECK(rung.cols == 8 * rung.parts * rung.nt);
    CHECK(stream_tile_fits(rung) == (rung.bytes <= kSharedTwoCtas));
    CHECK(s.cta_part == !stream_tile_fits(rung));
    if (!s.cta_part) CHECK(s.bytes == rung.bytes);
    CHECK(s.nt >= 1);
    CHECK(s.nt <= kStreamMaxNT);
    CHECK(8 * s.parts * s.nt >= ldw);
    CHECK(8 * (s.parts - 1) * s.nt < ldw);
    StreamTile whole = s;
    stream_tile_cut(whole, ldw / 8, kStreamMaxNT, false);
    if (!s.cta_part) {
      CHECK(s.cols == 8 * s.parts * s.nt);
      CHECK(s.bytes == whole.bytes);
    } else {
      CHECK(whole.bytes > kSharedTwoCtas);  // only where the whole Wp does not fit
      CHECK(s.parts >= 2);
      CHECK(s.cols == 8 * s.nt);
      for (int nt = s.nt + 1; nt <= kStreamMaxNT; ++nt) {  // no wider part fits
        StreamTile wider = s;
        stream_tile_cut(wider, ldw / 8, nt, true);
        if (wider.nt > s.nt) CHECK(wider.bytes > kSharedTwoCtas);
      }
      if (!stream_tile_fits(s)) CHECK(s.nt == 1);  // the persistent GEMM only past one n8 tile a part
    }
    CHECK(s.ldb >= s.cols);
    CHECK((s.ldb / 8) % 2 == 1);
    CHECK(std::int64_t(stream_row_tiles(s)) == (std::int64_t(s.m) + 15) / 16);
    CHECK(std::int64_t(s.tasks) == (std::int64_t(s.m) + 15) / 16 * s.parts);
    CHECK(s.d_live % 8 == 0);
    CHECK(s.wb_bytes == std::size_t(s.chunks) * 32 * s.ldb * 2);
    CHECK(s.wb_bytes % 16 == 0);  // bp's staged copy starts on 16 bytes
    CHECK(s.bytes >= s.wb_bytes + std::size_t(s.cols) * 2);
    CHECK(stream_tile_fits(s) == (s.bytes <= kSharedTwoCtas));
    for (int task : {0, 1, s.parts, s.tasks / 2, s.tasks - 1})
      if (task >= 0 && task < s.tasks) CHECK(fast_quotient(s.parts_div, task) == task / s.parts);
  }
}

TEST_CASE("mbconv stream, three-CTA form: at C = 80 @ 14² a wave's warps make the tasks in one round",
          "[mbconv][lesson11][cpu]") {
  MBConvProblem p;
  p.N = 128, p.dtype = DType::f16, p.H = p.W = 14, p.C = p.C_out = 80;
  // Two CTAs an SM, whole Wp: 3 136 tasks on 264 · 8 = 2 112 warps, a third of them make two.
  const StreamTile two = stream_tile_for(p, 80, true);
  CHECK(two.tasks == 3136);
  CHECK(std::int64_t(stream_grid(two, kH200Resident)) * kWarps == 2112);  // fewer warps than tasks
  // Three: two parts of 5 n8 tiles, 480 staged rows of 40 columns (38 KB a CTA); 396 resident CTAs
  // give a grid of 392, 196 a part, 1 568 warps a part for 1 568 row tiles: one task a warp.
  const StreamTile t = stream_tile_three(p, 80);
  CHECK(t.cta_part);
  CHECK(t.parts == 2);
  CHECK(t.nt == 5);
  CHECK(t.ldb == 40);
  CHECK(t.bytes == 480u * 40 * 2 + 40 * 2);  // Wp's part, then bp's 40 columns
  CHECK(stream_tile_fits(t, kSharedThreeCtas));
  const int grid = stream_grid(t, 3 * 132);
  CHECK(grid == 392);
  CHECK(grid / t.parts * kWarps >= stream_row_tiles(t));
  // Hidden 1152 at C_out 192 (7²): nt shrinks until a part fits 75 KB: 8 parts of 3 n8 tiles.
  p.H = p.W = 7, p.C = p.C_out = 192;
  const StreamTile wide = stream_tile_three(p, 192);
  CHECK(wide.nt == 3);
  CHECK(wide.parts == 8);
  CHECK(stream_tile_fits(wide, kSharedThreeCtas));
}

TEST_CASE("mbconv stream (pass 2 as warp tasks): the warps' walks make every (row tile, part) once, inside the staged columns",
          "[mbconv][lesson11][cpu]") {
  // The kernel's loop replayed from stream_walk over the grid stream_grid gives, at residencies of
  // one SM, an odd count, and an H200's: each (row tile, part) made by exactly one warp; its columns
  // among the CTA's staged ones; one part a CTA: a grid of whole row groups, the parts of a row tile
  // in CTAs side by side (the same row tiles in each), each CTA's part its blockIdx % parts. The
  // whole-Wp kernel writes this walk out in its loop (b·kWarps + w, stepping by grid·kWarps, below).
  // The three-CTA form (stream_tile_three) walks as cta_part does, over its own tile and grid.
  bool whole = false, own = false, three = false;
  for (const MBConvProblem& p : project_shapes())
  for (int form = 0; form < 2; ++form) {
    const int ldw = (p.C_out + 7) / 8 * 8;
    const StreamTile t = form == 0 ? stream_tile_for(p, ldw, true) : stream_tile_three(p, ldw);
    if (!stream_tile_fits(t, form == 0 ? kSharedTwoCtas : kSharedThreeCtas)) continue;
    if (form == 1) {
      CHECK(t.cta_part);
      CHECK(t.bytes <= kSharedThreeCtas);
      three = true;
    } else {
      (t.cta_part ? own : whole) = true;
    }
    INFO(OpTraits<MBConvProblem>::spec(p) << " form " << form);
    for (int resident : {1, 2, 7, kH200Resident, 3 * 132}) {
      const int grid = stream_grid(t, resident);
      INFO("resident " << resident << " grid " << grid);
      CHECK(grid >= 1);
      if (t.cta_part) {
        CHECK(grid % t.parts == 0);
        CHECK(grid <= std::max(t.parts, resident));
        CHECK(grid <= (stream_row_tiles(t) + kWarps - 1) / kWarps * t.parts);  // no CTA without a row tile
      } else {
        CHECK(grid <= std::max(1, resident));
        CHECK(std::int64_t(grid - 1) * kWarps < t.tasks);
      }
      std::vector<int> made(std::size_t(t.tasks), 0);
      std::vector<int> first_tile(std::size_t(grid), -1);
      for (int b = 0; b < grid; ++b)
        for (int warp = 0; warp < kWarps; ++warp) {
          const StreamWalk w = stream_walk(t, b, grid, warp);
          if (t.cta_part) {
            CHECK(w.col0 == 8 * t.nt * (b % t.parts));
            CHECK(w.first == b / t.parts * kWarps + warp);
            if (warp == 0) first_tile[std::size_t(b)] = w.first;
          } else {
            CHECK(w.col0 == 0);
            CHECK(w.first == b * kWarps + warp);  // the whole-Wp kernel's loop
            CHECK(w.step == grid * kWarps);
            CHECK(w.end == t.tasks);
          }
          for (int task = w.first; task < w.end; task += w.step) {
            const int tile = fast_quotient(w.div, task), s0 = 8 * t.nt * (task - tile * w.per), col0 = w.col0 + s0;
            const int part = col0 / (8 * t.nt);
            REQUIRE(tile >= 0);
            REQUIRE(tile < stream_row_tiles(t));
            REQUIRE(part < t.parts);
            CHECK(col0 == 8 * t.nt * part);
            CHECK(s0 >= 0);
            CHECK(s0 + 8 * t.nt <= t.cols);  // the task's bias and Wp columns are staged ones
            ++made[std::size_t(tile) * t.parts + part];
          }
        }
      CHECK(std::count(made.begin(), made.end(), 1) == t.tasks);
      if (t.cta_part)
        for (int b = 0; b < grid; ++b) CHECK(first_tile[std::size_t(b)] == first_tile[std::size_t(b - b % t.parts)]);
    }
  }
  CHECK(whole);
  CHECK(own);
  CHECK(three);
}

// 11e runs pass 2 as the stream where the whole Wp fits a CTA and as the persistent GEMM
// elsewhere (stream_tile_for's cta_part not allowed: run_store_plan's kStreamCtaPart off); 11c
// allows it, so it streams with one part a CTA where the whole does not fit and takes the
// persistent GEMM only past that. The GPU test table (ops/mbconv.cpp) must reach every boundary
// of each kernel under both routings: stream_reach says which it reaches, for the shapes the store
// plan takes (SE, a 16-bit type, a pass-1 tile at every stage).
namespace {
struct StreamReach {
  bool persistent = false, streamed = false, parts = false, zero_cols = false, pairs = false, singles = false;
  bool residual = false, no_residual = false, short_rows = false, row_spans_images = false, dead_piece = false;
  bool f16 = false, bf16 = false;
  bool group[2] = {false, false}, group_tail[2] = {false, false};  // kGroup = kStreamGroup (nt ≤ 3) or half
  bool second_task = false;  // more tasks than a wave of three CTAs an SM has warps: a warp's loop turns again
  // one part a CTA: at all, a short last row tile, odd C_out, a part neither first nor last, zero
  // columns in the last part, the residual, nt cut below the whole form's
  bool own = false, own_short_rows = false, own_singles = false, own_middle = false, own_zero_cols = false;
  bool own_residual = false, own_narrowed = false;
  // the persistent GEMM (its tile as launch_project chooses it on an H200's 132 SMs): f16 and bf16,
  // odd C_out, the residual staged with a block's last stage, no residual, a short last row block,
  // a last column block past C_out, several column blocks, a block's rows in two images, a last
  // stage past hidden. Not here: a CTA's pipeline running on into its next block, which no table
  // shape reaches on 132 SMs (the host replay at 1 and 3 SMs covers it: "computes every block's steps
  // once"); the bench shapes C = 112 @ 14² do (784 blocks on 264 CTAs).
  bool gemm_f16 = false, gemm_bf16 = false, gemm_singles = false, gemm_x_staged = false, gemm_no_residual = false;
  bool gemm_short_rows = false, gemm_col_tail = false, gemm_col_blocks = false, gemm_spans_images = false;
  bool gemm_k_tail = false;
};
bool store_plan_shape(const MBConvProblem& p) {
  return p.has_se() && (p.dtype == DType::f16 || p.dtype == DType::bf16) && se_gate_fits(p) &&
         choose_tile(p, Stage::store).rows != 0 && choose_tile(p, Stage::sums).rows != 0 &&
         choose_tile(p, Stage::project).rows != 0;
}
// The tile run_store_plan routes on: ldw is project_weights' row stride.
StreamTile routed_tile(const MBConvProblem& p, bool allow_cta_part) {
  return stream_tile_for(p, (p.C_out + 7) / 8 * 8, allow_cta_part);
}
// Whether tile t has more warp tasks than the warps of its grid at three CTAs on each of 132 SMs
// (the most any form has), so that some warp makes a second task whatever the form.
bool stream_tasks_past_a_wave(const StreamTile& t) {
  const std::int64_t tasks = std::int64_t(stream_row_tiles(t)) * (t.cta_part ? 1 : t.parts);
  const std::int64_t warps = std::int64_t(stream_grid(t, 3 * 132)) / (t.cta_part ? t.parts : 1) * kWarps;
  return tasks > warps;
}
StreamReach stream_reach(const std::vector<MBConvProblem>& shapes, bool allow_cta_part) {
  StreamReach r;
  for (const MBConvProblem& p : shapes) {
    if (!store_plan_shape(p)) continue;
    const int ldw = (p.C_out + 7) / 8 * 8;
    const StreamTile t = routed_tile(p, allow_cta_part);
    if (!stream_tile_fits(t)) {
      const ProjectTile g = choose_project_tile(p, 132, p.has_residual() && p.C % 8 == 0);
      r.persistent = true;
      r.gemm_f16 |= p.dtype == DType::f16;
      r.gemm_bf16 |= p.dtype == DType::bf16;
      r.gemm_singles |= p.C_out % 2 == 1;
      r.gemm_x_staged |= g.x_staged;
      r.gemm_no_residual |= !g.residual;
      r.gemm_short_rows |= g.m % g.bm != 0;
      r.gemm_col_tail |= g.n_blocks * g.bn > p.C_out;
      r.gemm_col_blocks |= g.n_blocks > 1;
      r.gemm_spans_images |= p.N > 1 && g.pq % g.bm != 0;
      r.gemm_k_tail |= g.steps * g.ks > g.hidden;
      continue;
    }
    r.streamed = true;
    r.parts |= t.parts > 1;
    r.zero_cols |= 8 * t.parts * t.nt > ldw;
    r.pairs |= p.C_out % 2 == 0;
    r.singles |= p.C_out % 2 == 1;
    r.residual |= t.residual;
    r.no_residual |= !t.residual;
    r.short_rows |= t.m % 16 != 0;
    r.row_spans_images |= p.N > 1 && t.pq % 16 != 0;
    r.dead_piece |= t.d_live < t.chunks * kChunk;
    r.f16 |= p.dtype == DType::f16;
    r.bf16 |= p.dtype == DType::bf16;
    const int g = t.nt <= 3 ? 0 : 1, size = g == 0 ? kStreamGroup : kStreamGroup / 2;
    r.group[g] = true;
    r.group_tail[g] |= t.chunks % size != 0;
    r.second_task |= stream_tasks_past_a_wave(t);
    if (t.cta_part) {
      StreamTile whole = t;
      stream_tile_cut(whole, ldw / 8, kStreamMaxNT, false);
      r.own = true;
      r.own_short_rows |= t.m % 16 != 0;
      r.own_singles |= p.C_out % 2 == 1;
      r.own_middle |= t.parts >= 3;
      r.own_zero_cols |= 8 * t.parts * t.nt > ldw;
      r.own_residual |= t.residual;
      r.own_narrowed |= t.nt < whole.nt;
    }
  }
  return r;
}
// Every boundary of the whole-Wp stream; with cta_part allowed, every boundary of that form and
// the persistent GEMM at all (past hidden 7200); not allowed (11e), every boundary of the
// persistent GEMM and no cta_part.
bool reaches_all(const StreamReach& r, bool allow_cta_part) {
  const bool whole = r.persistent && r.streamed && r.parts && r.zero_cols && r.pairs && r.singles && r.residual &&
                     r.no_residual && r.short_rows && r.row_spans_images && r.dead_piece && r.f16 && r.bf16 &&
                     r.group[0] && r.group[1] && r.group_tail[0] && r.group_tail[1] && r.second_task;
  if (allow_cta_part)
    return whole && r.own && r.own_short_rows && r.own_singles && r.own_middle && r.own_zero_cols && r.own_residual &&
           r.own_narrowed;
  return whole && !r.own && r.gemm_f16 && r.gemm_bf16 && r.gemm_singles && r.gemm_x_staged && r.gemm_no_residual &&
         r.gemm_short_rows && r.gemm_col_tail && r.gemm_col_blocks && r.gemm_spans_images && r.gemm_k_tail;
}
}  // namespace

// 11c takes the three-CTA tile where stream_three_pays: its kernels (one per nt, built for three
// CTAs an SM) must meet the same boundaries on the GPU test table as the two-CTA ones, and the table
// must keep shapes where 11c stays with two CTAs.
TEST_CASE("mbconv stream, three-CTA form: where it pays, and the GPU test table reaches its boundaries",
          "[mbconv][lesson11][cpu]") {
  const auto takes_three = [](const MBConvProblem& p) {
    const int ldw = (p.C_out + 7) / 8 * 8;
    const StreamTile two = stream_tile_for(p, ldw, true);
    return stream_tile_fits(two) && stream_three_pays(two, stream_tile_three(p, ldw));
  };
  // The rule at the bench shapes (N = 128, f16, SiLU; measured in wave-3i on an H100): three CTAs
  // where the part keeps its width and nt ≤ 5; not at 7² (5 n8 tiles a part would become 3) nor at
  // C_out 192 from 14² (nt = 6).
  const auto bench = [](int hw, int c, int k, int stride, int c_out, int e = 6) {
    MBConvProblem p;
    p.N = 128, p.dtype = DType::f16, p.H = p.W = hw, p.C = c, p.kernel = k, p.stride = stride, p.C_out = c_out;
    p.expand = e;
    return p;
  };
  CHECK(takes_three(bench(56, 24, 3, 1, 24)));
  CHECK(takes_three(bench(28, 40, 3, 1, 40)));
  CHECK(takes_three(bench(14, 80, 3, 1, 80)));
  CHECK(takes_three(bench(14, 112, 3, 1, 112)));
  CHECK(takes_three(bench(112, 32, 3, 1, 16, 1)));
  CHECK(takes_three(bench(14, 80, 5, 1, 112)));
  CHECK_FALSE(takes_three(bench(7, 192, 3, 1, 192)));
  CHECK_FALSE(takes_three(bench(7, 192, 5, 1, 192)));
  CHECK_FALSE(takes_three(bench(7, 192, 3, 1, 320)));
  CHECK_FALSE(takes_three(bench(14, 112, 5, 2, 192)));

  bool two_kept = false, three = false, short_rows = false, singles = false, pairs = false, parts = false;
  bool one_part = false, zero_cols = false, residual = false, no_residual = false, spans = false, bf16 = false;
  bool group[2] = {false, false};
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu)) {
    if (!store_plan_shape(p) || !stream_tile_fits(routed_tile(p, true))) continue;
    if (!takes_three(p)) {
      two_kept = true;
      continue;
    }
    const int ldw = (p.C_out + 7) / 8 * 8;
    const StreamTile t = stream_tile_three(p, ldw);
    three = true;
    short_rows |= t.m % 16 != 0;
    singles |= p.C_out % 2 == 1;
    pairs |= p.C_out % 2 == 0;
    parts |= t.parts > 1;
    one_part |= t.parts == 1;
    zero_cols |= 8 * t.parts * t.nt > ldw;
    residual |= t.residual;
    no_residual |= !t.residual;
    spans |= p.N > 1 && t.pq % 16 != 0;
    bf16 |= p.dtype == DType::bf16;
    group[t.nt <= 3 ? 0 : 1] = true;
  }
  CHECK(two_kept);     // 11c's two-CTA stream kernels still run on the table
  CHECK(three);
  CHECK(short_rows);   // the last row tile runs past N·P·Q
  CHECK(singles);      // odd C_out
  CHECK(pairs);
  CHECK(parts);        // two or more parts: neighbouring CTAs
  CHECK(one_part);
  CHECK(zero_cols);    // the last part's columns past C_out
  CHECK(residual);
  CHECK(no_residual);
  CHECK(spans);        // a row tile in two images
  CHECK(bf16);
  CHECK(group[0]);     // kGroup = kStreamGroup (nt ≤ 3) and its half
  CHECK(group[1]);
}

TEST_CASE("mbconv stream (pass 2 as warp tasks): the GPU test table reaches each of its boundaries",
          "[mbconv][lesson11][cpu]") {
  const std::vector<MBConvProblem> table = OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::gpu);
  for (const bool allow : {false, true}) {
    INFO((allow ? "cta_part allowed (11c)" : "cta_part not allowed (11e)"));
    const StreamReach r = stream_reach(table, allow);
    CHECK(r.persistent);        // a store-plan shape that leaves the stream: the persistent GEMM
    CHECK(r.streamed);
    CHECK(r.parts);             // C_out past kStreamMaxNT n8 tiles: two or more column parts
    CHECK(r.zero_cols);         // staged columns past C_out (zeros)
    CHECK(r.pairs);             // two adjacent columns as one store
    CHECK(r.singles);           // odd C_out: one column a store
    CHECK(r.residual);
    CHECK(r.no_residual);
    CHECK(r.short_rows);        // the last task's 16 rows run past N·P·Q
    CHECK(r.row_spans_images);  // a task's rows belong to two images (two gates)
    CHECK(r.dead_piece);        // pieces past dbuf_live: zeros, not loaded
    CHECK(r.f16);
    CHECK(r.bf16);
    CHECK(r.group[0]);
    CHECK(r.group[1]);
    CHECK(r.group_tail[0]);     // a last group of fewer chunks than kGroup
    CHECK(r.group_tail[1]);
    CHECK(r.second_task);       // a warp's second task (the bench shapes reach it; the tests must too)
    if (allow) {
      CHECK(r.own);             // one part a CTA (Wp past kSharedTwoCtas)
      CHECK(r.own_short_rows);  // ... its last row tile short
      CHECK(r.own_singles);     // ... odd C_out
      CHECK(r.own_middle);      // ... a part between the first and the last (three or more)
      CHECK(r.own_zero_cols);   // ... the last part's columns past C_out
      CHECK(r.own_residual);
      CHECK(r.own_narrowed);    // ... nt cut below the whole form's so that one part fits
    } else {
      CHECK_FALSE(r.own);       // 11e never takes the cta_part form
      CHECK(r.gemm_f16);
      CHECK(r.gemm_bf16);
      CHECK(r.gemm_singles);       // odd C_out: one column a store
      CHECK(r.gemm_x_staged);      // the residual's rows staged with a block's last stage
      CHECK(r.gemm_no_residual);
      CHECK(r.gemm_short_rows);    // the last row block runs past N·P·Q
      CHECK(r.gemm_col_tail);      // the last column block runs past C_out
      CHECK(r.gemm_col_blocks);    // two or more column blocks
      CHECK(r.gemm_spans_images);  // a block's rows belong to two images
      CHECK(r.gemm_k_tail);        // the last stage's channels run past hidden
    }
    CHECK(reaches_all(r, allow));
  }
  // The check can fail: the table without the shapes that take a form, or a boundary of it, does not
  // reach everything.
  const auto without = [&](bool allow, auto drop) {
    std::vector<MBConvProblem> kept;
    for (const MBConvProblem& p : table)
      if (!(store_plan_shape(p) && drop(routed_tile(p, allow), p))) kept.push_back(p);
    CHECK(kept.size() < table.size());
    return stream_reach(kept, allow);
  };
  const auto cta_part = [](const StreamTile& t, const MBConvProblem&) { return t.cta_part && stream_tile_fits(t); };
  const auto gemm = [](const StreamTile& t, const MBConvProblem&) { return !stream_tile_fits(t); };
  CHECK_FALSE(reaches_all(without(true, cta_part), true));
  CHECK_FALSE(reaches_all(without(true, gemm), true));
  CHECK_FALSE(reaches_all(without(false, gemm), false));
  CHECK_FALSE(without(true, [](const StreamTile& t, const MBConvProblem&) {
                return stream_tile_fits(t) && stream_tasks_past_a_wave(t);
              }).second_task);
  CHECK_FALSE(without(true, [](const StreamTile& t, const MBConvProblem& p) {
                return t.cta_part && stream_tile_fits(t) && p.C_out % 2 == 1;
              }).own_singles);
  CHECK_FALSE(without(true, [](const StreamTile& t, const MBConvProblem&) {
                StreamTile whole = t;
                stream_tile_cut(whole, t.ldw / 8, kStreamMaxNT, false);
                return t.cta_part && t.nt < whole.nt;
              }).own_narrowed);
  CHECK_FALSE(without(false, [](const StreamTile& t, const MBConvProblem& p) {
                return !stream_tile_fits(t) && p.C_out % 2 == 1;
              }).gemm_singles);
  CHECK_FALSE(without(false, [](const StreamTile& t, const MBConvProblem& p) {
                return !stream_tile_fits(t) && p.dtype == DType::bf16;
              }).gemm_bf16);
  // The routing itself: allowing cta_part moves shapes off the persistent GEMM (11e's kernel at
  // those shapes is mbconv_project_kernel, 11c's the stream).
  int moved = 0;
  for (const MBConvProblem& p : table)
    if (store_plan_shape(p) && !stream_tile_fits(routed_tile(p, false))) moved += stream_tile_fits(routed_tile(p, true));
  CHECK(moved > 0);
}

TEST_CASE("mbconv stream (pass 2 as warp tasks): it reads D and the gates where pass 1 and the gate kernel wrote them",
          "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : project_shapes()) {
    const StreamTile t = stream_tile_for(p, (p.C_out + 7) / 8 * 8);
    const Tile pass1 = choose_tile(p, Stage::store);
    INFO(OpTraits<MBConvProblem>::spec(p));
    // Staged rows: a permutation of each chunk's 32 rows.
    std::vector<int> seen(std::size_t(t.chunks) * kChunk, 0);
    for (int r = 0; r < t.chunks * kChunk; ++r) {
      const int j = stream_staged_row(r);
      CHECK(j / kChunk == r / kChunk);
      ++seen[std::size_t(j)];
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == t.chunks * kChunk);
    // Pieces: live exactly where pass 1 wrote channels; a piece left out holds only channels ≥ hidden.
    for (int c = 0; c < t.chunks + 1; ++c)
      for (int tq = 0; tq < 4; ++tq) {
        const int first = kChunk * c + 8 * tq;
        CHECK(stream_piece_live(t, c, tq) == (c < t.chunks && first < t.d_live));
        if (c < t.chunks && !stream_piece_live(t, c, tq)) CHECK(first >= t.hidden);
      }
    const int probes[] = {0, 1, 15, 16, t.pq - 1, t.pq, t.pq + 1, t.m / 2, t.m - 1};
    for (int m : probes) {
      if (m < 0 || m >= t.m) continue;
      const int n = m / t.pq, pixel = m - n * t.pq;
      for (int tq = 0; tq < 4; ++tq) {
        CHECK(stream_gate_offset(t, m, tq) == std::ptrdiff_t(n) * t.d_live + 8 * tq);
        for (int c = 0; c < t.chunks; ++c)
          CHECK(stream_d_offset(t, m, tq) + std::ptrdiff_t(c) * t.pq * kChunk ==
                dbuf_offset(pass1, n, c, pixel) + 8 * tq);
      }
    }
  }
}

TEST_CASE("mbconv tile: the SE gate kernel's block size and shared memory", "[mbconv][lesson11][cpu]") {
  std::vector<MBConvProblem> shapes;
  for (ShapeTable table : {ShapeTable::test, ShapeTable::bench})
    for (Device device : {Device::cpu, Device::gpu})
      for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(table, device)) shapes.push_back(p);
  MBConvProblem wide;  // Cr past 8·256 (FC1 with one row group), hidden past 8·256 (FC2 unsplit)
  wide.N = 1, wide.H = wide.W = 3, wide.C = 1000, wide.expand = 3, wide.se = 2.5, wide.C_out = 8;
  shapes.push_back(wide);
  for (const MBConvProblem& p : shapes) {  // with SE and without (Cr = 0: the layer rungs still ask)
    INFO(OpTraits<MBConvProblem>::spec(p));
    const int hidden = p.hidden(), cr = p.se_channels(), threads = se_gate_threads(hidden, cr);
    CHECK((threads == kGateThreadsSmall || threads == kGateThreadsLarge));
    // The chains, replayed: the kernel's FC1 and FC2 loops, the longest a thread walks.
    for (int T : {kGateThreadsSmall, kGateThreadsLarge}) {
      const int units = (cr + 7) / 8, groups = std::max(1, T / std::max(1, units));
      const int pieces = (hidden + 7) / 8, splits = std::max(1, T / pieces);
      int longest = 0;
      for (int jj = 0; jj < groups; ++jj) {
        int loads = 0;
        for (int j = jj; j < hidden; j += groups) ++loads;
        longest = std::max(longest, loads);
      }
      for (int rr = 0; rr < splits; ++rr) {
        int loads = 0;
        for (int r = rr; r < cr; r += splits) ++loads;
        longest = std::max(longest, loads);
      }
      if (cr > 0 && units * groups <= T && pieces * splits <= T) CHECK(se_gate_chain(hidden, cr, T) == longest);
    }
    CHECK(threads == (se_gate_chain(hidden, cr, kGateThreadsSmall) <= kGateShortChain ? kGateThreadsSmall
                                                                                        : kGateThreadsLarge));
    const int units = std::max(1, (cr + 7) / 8), groups = std::max(1, threads / units);
    const int pieces = (hidden + 7) / 8, splits = std::max(1, threads / pieces);
    const int red = se_gate_red_floats(hidden, cr, threads);
    CHECK(red >= groups * 8 * units);              // FC1: group jj's outputs at jj·8·units + 8u + i
    if (splits > 1) CHECK(red >= splits * 8 * pieces);  // FC2: split rr's channels at rr·8·pieces + 8v + i
    CHECK(se_gate_shared_bytes(p) == (std::size_t(hidden) + cr + red) * sizeof(float));
    (void)se_gate_fits(p);
  }
  // The measured ends: hidden 144 (Cr 6) at 256 threads, hidden 1152 (Cr 48) and 672 (Cr 28) at 512.
  CHECK(se_gate_threads(144, 6) == 256);
  CHECK(se_gate_threads(1152, 48) == 512);
  CHECK(se_gate_threads(672, 28) == 512);
  CHECK(se_gate_threads(480, 20) == 256);
}

TEST_CASE("mbconv image (11f): the one-image layout is aligned, disjoint, and its project covers every output once",
          "[mbconv][lesson11][cpu]") {
  int fitting = 0;
  for (const MBConvProblem& p : fused_shapes()) {
    const ImageLayout l(p);
    if (!l.fits()) continue;
    ++fitting;
    INFO(OpTraits<MBConvProblem>::spec(p));
    const std::pair<std::size_t, std::size_t> regions[] = {
        {l.xs, std::size_t(l.HW) * l.ldx * 2},
        {l.es, p.has_expand() ? std::size_t(l.hp) * l.wp * kImageLde * 2 : 0},
        {l.dws, 2 * std::size_t(kImageChunk) * p.kernel * p.kernel * 2},
        {l.bias, 2 * std::size_t(l.hidden_p) * 2},
        {l.ds, std::size_t(l.PQ) * l.ldd * 2},
        {l.wbuf, std::max(p.has_expand() ? 2 * std::size_t(l.ck) * kImageLde * 2 : 0,
                          std::size_t(kProjectStages) * kProjectK * l.ldwp * 2)},
        {l.pooled, std::size_t(l.hidden_p) * 4},
        {l.red, std::size_t(kImageWarps) * l.red_cols * 4},
        {l.z, std::size_t(l.cr_p) * 4}};
    for (std::size_t i = 0; i < std::size(regions); ++i) {
      CHECK(regions[i].first % 128 == 0);
      CHECK(regions[i].first + regions[i].second <= l.bytes);
      if (i + 1 < std::size(regions)) CHECK(regions[i].first + regions[i].second <= regions[i + 1].first);
    }
    for (int stride : {l.ldx, kImageLde, l.ldd, l.ldwp}) CHECK((stride * 2 / 16) % 2 == 1);
    CHECK(l.ldx - 8 >= (p.has_expand() ? p.C : l.hidden_p));  // x's columns, and E's without an expand
    CHECK(l.hidden_p >= p.hidden());
    CHECK(l.hidden_p % kProjectK == 0);
    CHECK(l.red_cols >= kImageChunk);
    CHECK(l.red_cols % 32 == 0);
    CHECK(l.wm * l.wn == kImageWarps);
    CHECK(l.block_cols <= 32 * l.wn);
    CHECK(l.block_cols * l.n_blocks >= p.C_out);
    // The depthwise's taps of every output pixel fall inside E's bordered rows (stride 1 and 2).
    for (int q : {0, p.Q() - 1}) {
      CHECK((q * p.stride + p.kernel - 1) < l.wp);
      CHECK(((p.P() - 1) * p.stride + p.kernel - 1) < l.hp);
    }
    // Replay the project's blocks: warp (i, j) of block b owns 16·kWarpMTiles pixels × 32 channels.
    std::vector<int> hits(std::size_t(l.PQ) * p.C_out, 0);
    for (int b = 0; b < l.m_blocks * l.n_blocks; ++b)
      for (int w = 0; w < kImageWarps; ++w) {
        const int m0 = (b / l.n_blocks) * 16 * kWarpMTiles * l.wm + 16 * kWarpMTiles * (w / l.wn);
        const int n0 = (b % l.n_blocks) * l.block_cols + 32 * (w % l.wn);
        if (32 * (w % l.wn) >= l.block_cols) continue;  // a warp past a narrow block's columns idles
        for (int r = m0; r < std::min(m0 + 16 * kWarpMTiles, l.PQ); ++r)
          for (int c = n0; c < std::min(n0 + 32, p.C_out); ++c) ++hits[std::size_t(r) * p.C_out + c];
      }
    CHECK(std::count(hits.begin(), hits.end(), 1) == std::ptrdiff_t(hits.size()));
  }
  CHECK(fitting > 20);
}

TEST_CASE("mbconv image (11f): which goal and EfficientNet-B0 shapes one CTA can hold", "[mbconv][lesson11][cpu]") {
  const auto fits = [](int H, int C, int k, int s, int C_out) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = H, p.C = C, p.expand = 6, p.kernel = k, p.stride = s, p.se = 0.25, p.C_out = C_out;
    p.dtype = DType::f16;
    return ImageLayout(p).fits();
  };
  CHECK(fits(7, 192, 3, 1, 192));    // D: 49 × 1160 × 2 B = 111 KB
  CHECK(fits(7, 192, 5, 1, 192));
  CHECK(fits(7, 192, 3, 1, 320));
  CHECK(fits(14, 112, 5, 2, 192));   // stride 2: D is 7 × 7
  CHECK_FALSE(fits(14, 80, 3, 1, 80));   // D alone 196 × 488 × 2 B = 187 KB, with x past 227 KB
  CHECK_FALSE(fits(14, 112, 3, 1, 112));
  CHECK_FALSE(fits(28, 40, 3, 1, 40));
  MBConvProblem p;
  p.N = 128, p.H = p.W = 7, p.C = 192, p.expand = 6, p.se = 0.25, p.C_out = 320, p.dtype = DType::f16;
  const ImageLayout l(p);
  CHECK(l.wm == 2);  // 4 m16 tiles: two warp rows of 2; 40 n8 tiles in two blocks of 32
  CHECK(l.n_blocks == 2);
  CHECK(l.m_blocks == 1);
}

TEST_CASE("mbconv image on wgmma (11g, 11j): the layout's tiles start on swizzle atoms, are disjoint, and hold the Wp stages",
          "[mbconv][lesson11][cpu]") {
  int fitting[3] = {0, 0, 0};
  for (const MBConvProblem& p : fused_shapes())
  for (int split : {1, 2}) {
    const WgImageLayout l(p, split);
    if (!l.fits()) continue;
    ++fitting[split];
    INFO(OpTraits<MBConvProblem>::spec(p) << " split " << split);
    CHECK(p.has_expand());
    CHECK(l.px_in <= 64 * l.mt);
    CHECK(l.px_out <= 64 * l.mt);
    CHECK(l.tasks_per_warpgroup() * 3 >= l.nb * l.mt);
    // wgmma reads 128-byte-swizzled tiles from 1024-byte boundaries: every panel and slot.
    for (std::size_t at : {l.ds, l.xs, l.wes, l.x_panel, l.d_panel, l.we_slot, l.wp_stage, l.wp_panel})
      CHECK(at % 1024 == 0);
    CHECK(l.e_slot % 128 == 0);  // E is read by the depthwise's loads, not by wgmma
    const std::pair<std::size_t, std::size_t> regions[] = {
        {l.ds, std::size_t(l.chunks) * l.d_panel},
        {l.xs, std::size_t(l.cp / 64) * l.x_panel},
        {l.wes, 2 * l.we_slot},
        {l.es, std::size_t(l.e_slots) * l.e_slot},
        {l.pooled, std::size_t(l.hidden_p) * 4},
        {l.red, std::size_t(kWgRedFloats) * 4},
        {l.z, std::size_t(l.cr_p) * 4},
        {l.rows, std::size_t(64 * l.mt + l.px_out) * 2},
        {l.bars, std::size_t(kWgBars) * 8}};
    CHECK(l.bars % 8 == 0);  // mbarriers
    CHECK((l.hp * l.ep) < (1 << 15));  // the row table's int16 entries
    CHECK(l.ep % 2 == 1);  // eight consecutive bordered rows on eight bank groups
    CHECK(l.ep >= l.wp);
    for (std::size_t i = 0; i < std::size(regions); ++i) {
      CHECK(regions[i].first % 16 == 0);
      CHECK(regions[i].first + regions[i].second + 1024 <= l.bytes);  // the base's alignment slack
      if (i + 1 < std::size(regions)) CHECK(regions[i].first + regions[i].second <= regions[i + 1].first);
    }
    CHECK(l.bytes <= kWgSharedLimit);
    // The m64 tiles' read of x or D past its rows stays inside the layout (it lands in the next region).
    CHECK(l.xs + std::size_t(l.cp / 64 - 1) * l.x_panel + 64 * l.mt * 128 <= l.bytes - 1024);
    CHECK(l.ds + std::size_t(l.chunks - 1) * l.d_panel + 64 * l.mt * 128 <= l.bytes - 1024);
    CHECK(l.cp >= p.C);
    CHECK(l.rx >= l.px_in);
    CHECK(l.rd >= l.px_out);
    CHECK(l.hidden_p >= p.hidden());
    CHECK(l.hidden_p % kWgProjectK == 0);
    // We's TMA boxes tile the slot exactly (a box past cp would write past the slot).
    CHECK((l.we_box % 64 == 0 && l.we_box <= 256 && l.cp % l.we_box == 0));
    CHECK(64 * l.nb >= p.C_out);
    // The Wp stages fit the room of x, We and E, which are dead by the project.
    CHECK(l.wp_stages() * l.wp_stage <= l.wp_room());
    CHECK(l.xs + l.wp_stages() * l.wp_stage <= l.es + l.e_slots * l.e_slot);
    // The depthwise's taps of every output pixel fall inside E's bordered rows (each band's, from
    // its first output row), and every expand row the band stores lands in them.
    CHECK(((p.Q() - 1) * p.stride + p.kernel - 1) < l.wp);
    for (int k = 0; k < split; ++k) {
      const WgBand b = split == 1 ? WgBand{0, p.P(), 0, p.H} : wg_band(p.P(), p.H, p.kernel, p.stride, split, k);
      CHECK(((b.rows - 1) * p.stride + p.kernel - 1) < l.hp);
      const int top = b.p0 * p.stride - p.kernel / 2;
      CHECK(b.ih0 - top >= 0);
      CHECK(b.ih1 - 1 - top < l.hp);
    }
  }
  CHECK(fitting[1] > 10);
  CHECK(fitting[2] > 5);
}

TEST_CASE("mbconv image over a cluster (11j): the bands cover the output rows once and read every tap's input row",
          "[mbconv][lesson11][cpu]") {
  for (int K : {3, 5})
    for (int S : {1, 2})
      for (int H = 1; H <= 31; ++H) {
        const int P = (H + 2 * (K / 2) - K) / S + 1;
        for (int split = 2; split <= 4; ++split) {
          if (P < split) continue;
          INFO("H " << H << " K " << K << " S " << S << " split " << split);
          int next = 0, lo = P, hi = 0;
          for (int k = 0; k < split; ++k) {
            const WgBand b = wg_band(P, H, K, S, split, k);
            CHECK(b.p0 == next);  // contiguous, in rank order
            next = b.p0 + b.rows;
            lo = std::min(lo, b.rows), hi = std::max(hi, b.rows);
            // The input rows are exactly those some tap of the band's output rows reads.
            int need_lo = H, need_hi = 0;
            for (int p = b.p0; p < b.p0 + b.rows; ++p)
              for (int t = 0; t < K; ++t) {
                const int ih = p * S - K / 2 + t;
                if (ih >= 0 && ih < H) need_lo = std::min(need_lo, ih), need_hi = std::max(need_hi, ih + 1);
              }
            CHECK(b.ih0 == need_lo);
            CHECK(b.ih1 == need_hi);
          }
          CHECK(next == P);
          CHECK(hi - lo <= 1);  // balanced
        }
      }
  // EfficientNet-B0's 14 × 14 blocks: C = 80 takes a cluster of two with both E slots; C = 112's D
  // (11 chunks of 104 rows) does not fit beside the rest.
  const auto layout = [](int C, int k, int split) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = 14, p.C = C, p.expand = 6, p.kernel = k, p.se = 0.25, p.C_out = C, p.dtype = DType::f16;
    return WgImageLayout(p, split);
  };
  CHECK(layout(80, 3, 2).fits());
  CHECK(layout(80, 3, 2).e_slots == 2);
  CHECK(layout(80, 3, 2).px_in == 112);  // 8 rows of 14: one halo row
  CHECK(layout(80, 3, 2).px_out == 98);
  CHECK(layout(80, 5, 2).px_in == 126);
  CHECK(layout(80, 5, 2).e_slots == 1);  // K = 5's taller bordered band: one E slot beside D
  CHECK(layout(80, 3, 2).ep == 17);      // 16-pixel bordered rows at an odd pitch
  CHECK_FALSE(layout(80, 3, 1).fits());
  CHECK_FALSE(layout(112, 3, 2).fits());
}

// The project's Wp ring as the kernel runs it: stages 0 .. S − 2 out before the loop; at the top
// of stage kk (after the CTA barrier) the stage refill(kk) is asked for into slot refill % S; then
// every warpgroup waits for stage kk, issues its group, and at the stage's end waits until at
// most `in_flight` groups (0 or 1) are pending. Returns the first rule broken ("" when none):
// a slot refilled while the stage in it is unread or its group may still run, a stage waited for
// that was never asked for (or was overwritten), a stage asked for twice or past the last.
std::string wp_ring_fault(int stages, int k_stages, bool in_flight, int (*refill)(int, int, bool)) {
  std::vector<int> slot(std::size_t(stages), -1);
  std::vector<int> asked(std::size_t(k_stages), 0);
  const auto ask = [&](int r, int kk) -> std::string {
    if (r >= k_stages) return "";  // past the last stage: nothing asked for (the kernel's check)
    if (asked[std::size_t(r)]++) return "stage " + std::to_string(r) + " asked for twice";
    const int held = slot[std::size_t(r % stages)];
    const int retired = kk - 1 - (in_flight ? 1 : 0);  // groups 0 .. retired have retired everywhere
    if (held >= 0 && (held >= kk || held > retired))
      return "stage " + std::to_string(r) + " overwrites stage " + std::to_string(held) + " at stage " + std::to_string(kk);
    slot[std::size_t(r % stages)] = r;
    return "";
  };
  for (int r = 0; r < stages - 1; ++r)
    if (std::string f = ask(r, 0); !f.empty()) return f;
  for (int kk = 0; kk < k_stages; ++kk) {
    if (const int r = refill(kk, stages, in_flight); r >= 0)
      if (std::string f = ask(r, kk); !f.empty()) return f;
    if (!asked[std::size_t(kk)] || slot[std::size_t(kk % stages)] != kk)
      return "stage " + std::to_string(kk) + " waited for but not in its slot";
  }
  return "";
}

TEST_CASE("mbconv image on wgmma (11g, 11j): the project's Wp ring, drained or with a group in flight",
          "[mbconv][lesson11][cpu]") {
  for (int stages = 2; stages <= 6; ++stages)
    for (int k_stages = 1; k_stages <= 40; ++k_stages) {
      INFO(stages << " stages, " << k_stages << " Wp stages");
      CHECK(wp_ring_fault(stages, k_stages, false, wp_refill_stage) == "");
      if (stages >= 3) CHECK(wp_ring_fault(stages, k_stages, true, wp_refill_stage) == "");
    }
  // A ring of two with a group in flight is correct but asks for each stage only at its own top
  // (nothing ahead): why the kernel keeps the drain there.
  CHECK(wp_ring_fault(2, 18, true, wp_refill_stage) == "");
  CHECK(wp_refill_stage(5, 2, true) == 5);
  // The model catches the drained loop's refill kept with a group in flight (it overwrites the
  // running group's stage), and a refill one stage too early.
  const auto drained_refill = [](int kk, int stages, bool) { return kk + stages - 1; };
  CHECK(wp_ring_fault(3, 18, true, drained_refill).find("overwrites") != std::string::npos);
  const auto eager_refill = [](int kk, int stages, bool) { return kk + stages; };
  CHECK(wp_ring_fault(3, 18, false, eager_refill) != "");
}

TEST_CASE("mbconv image on wgmma (11g): its swizzled offsets are Sw128Tile's, and which shapes fit", "[mbconv][lesson11][cpu]") {
  using Tile = gpu::Sw128Tile<56, 192>;
  for (int r = 0; r < 56; ++r)
    for (int c = 0; c < 192; ++c) REQUIRE(sw128_offset(r, c, Tile::kPanelBytes) == std::size_t(Tile::byte_offset(r, c)));
  const auto layout = [](int H, int C, int k, int s, int C_out) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = H, p.C = C, p.expand = 6, p.kernel = k, p.stride = s, p.se = 0.25, p.C_out = C_out;
    p.dtype = DType::f16;
    return WgImageLayout(p);
  };
  CHECK(layout(7, 192, 3, 1, 192).fits());
  CHECK(layout(7, 192, 3, 1, 192).e_slots == 2);  // E double-buffered: the expand runs a chunk ahead
  CHECK(layout(7, 192, 5, 1, 192).fits());
  CHECK(layout(7, 192, 5, 1, 192).e_slots == 1);  // K = 5's bordered E: one slot
  CHECK(layout(7, 192, 3, 1, 320).fits());
  CHECK(layout(7, 192, 3, 1, 192).wp_stages() == kWgProjectStagesDeep);
  CHECK(layout(7, 192, 3, 1, 192).we_box == 192);  // one box a We chunk
  CHECK(layout(7, 320, 3, 1, 192).we_box == 64);   // cp 320: five 64-row boxes
  CHECK(layout(7, 192, 3, 1, 320).wp_stages() == kWgProjectStages);  // five n64 blocks: 40 KB a stage
  CHECK(layout(8, 128, 3, 2, 192).fits());        // 64 input pixels, stride 2
  CHECK_FALSE(layout(9, 64, 3, 1, 64).fits());    // 81 pixels: more than one m64 tile
  CHECK_FALSE(layout(14, 112, 5, 2, 192).fits()); // 196 input pixels
  CHECK_FALSE(layout(7, 192, 3, 1, 448).fits());  // C_out past six n64 blocks
}

TEST_CASE("mbconv image: the SE's recursive halving leaves each output's whole sum on one lane", "[mbconv][lesson11][cpu]") {
  // A host model of the warp: lane l holds 8 partials; the halving steps, then the two plain
  // exchanges, as the kernel does them (gpu/lib/mbconv_image_se.cuh).
  std::vector<std::vector<double>> v(32, std::vector<double>(8));
  for (int l = 0; l < 32; ++l)
    for (int o = 0; o < 8; ++o) v[l][o] = (l + 1) * 1000.0 + o * 0.5;  // distinct partials
  for (int half = 4, off = 16; half >= 1; half /= 2, off /= 2) {
    std::vector<std::vector<double>> next = v;
    for (int l = 0; l < 32; ++l) {
      const bool upper = l & off, partner_upper = (l ^ off) & off;
      for (int k = 0; k < half; ++k)
        next[l][k] = (upper ? v[l][k + half] : v[l][k]) + (partner_upper ? v[l ^ off][k] : v[l ^ off][k + half]);
    }
    v = next;
  }
  for (int off : {2, 1}) {
    std::vector<std::vector<double>> next = v;
    for (int l = 0; l < 32; ++l) next[l][0] = v[l][0] + v[l ^ off][0];
    v = next;
  }
  std::set<int> seen;
  for (int l = 0; l < 32; ++l) {
    const int o = gpu::mbconv::halving_output(l, 8);
    double want = 0;
    for (int m = 0; m < 32; ++m) want += (m + 1) * 1000.0 + o * 0.5;
    CHECK(v[l][0] == want);
    seen.insert(o);
  }
  CHECK(seen.size() == 8);
}

namespace {

// 11k's finish for one problem at an H200's residency, as the launcher builds it (split_tile, then
// cluster_splits), and whether its task walk writes every Y cell of two tile groups once.
ClusterFinish finish_at(const MBConvProblem& p, Tile& t) {
  t = choose_tile(p, Stage::store, kH200Resident);
  split_tile(t, Stage::store, kH200Resident);
  cluster_splits(t);
  const std::size_t limit = t.bytes <= kSharedTwoCtas ? kSharedTwoCtas : kMaxShared;
  return cluster_finish_for(p, t, (p.C_out + 7) / 8 * 8, limit);
}

void check_cluster_walk(const MBConvProblem& p, const Tile& t, const ClusterFinish& f, int group) {
  INFO("group " << group << ": " << f.ctas << " CTAs, " << f.col_groups << " column ranges of " << f.group_n8
                << " n8 tiles, " << f.st.parts << " sub-parts of " << f.st.nt);
  const int pq = p.P() * p.Q(), n0 = group * t.images, images = std::min(t.images, p.N - n0);
  const int m_begin = n0 * pq, m_end = (n0 + images) * pq;
  const int tile0 = m_begin / 16, tiles = (m_end + 15) / 16 - tile0, tasks = tiles * f.st.parts;
  const int row_groups = f.ctas / f.col_groups;
  std::vector<int> writes(std::size_t(m_end - m_begin) * p.C_out, 0);
  for (int rank = 0; rank < f.ctas; ++rank)
    for (int warp = 0; warp < kWarps; ++warp)
      for (int task = rank / f.col_groups * kWarps + warp; task < tasks; task += row_groups * kWarps) {
        const ClusterTask k = cluster_task(f, rank, tile0, task);
        REQUIRE(k.n_live >= 1);
        REQUIRE(k.n_live <= f.st.nt);
        REQUIRE(k.s0 + 8 * k.n_live <= f.st.cols);                          // within the staged columns
        REQUIRE(k.col0 - k.s0 == cluster_range_col0(f, rank));              // staged column s is Y's col0 − s0 + s
        REQUIRE(k.col_end <= cluster_range_col0(f, rank) + 8 * f.group_n8);  // within the CTA's range
        for (int r = 0; r < 16; ++r) {
          const int m = 16 * k.tile + r;
          if (m < m_begin || m >= m_end) continue;
          for (int o = k.col0; o < k.col0 + 8 * k.n_live && o < k.col_end; ++o) ++writes[std::size_t(m - m_begin) * p.C_out + o];
        }
      }
  CHECK(std::count(writes.begin(), writes.end(), 1) == std::ptrdiff_t(writes.size()));
}

}  // namespace

TEST_CASE("mbconv tile: 11k's cluster finish at the goal shapes: one cluster a tile group, Y written once",
          "[mbconv][lesson11][cpu]") {
  struct Goal {
    int H, C, k, stride, C_out;
    bool cluster;  // whether 11k takes the cluster form
  };
  // Not at 56² (12 tiles an image: more CTAs than a cluster) nor at 14², 112 → 192, stride 2: two
  // tiles of one split are a cluster of two, and half of Wp (672 × 96 columns, 140 KB) does not fit
  // one CTA beside its twin on the SM; 11k runs 11c's launches there.
  for (const Goal g : {Goal{7, 192, 3, 1, 192, true}, Goal{7, 192, 5, 1, 192, true}, Goal{7, 192, 3, 1, 320, true},
                       Goal{14, 80, 3, 1, 80, true}, Goal{14, 112, 3, 1, 112, true}, Goal{14, 80, 5, 1, 112, true},
                       Goal{14, 112, 5, 1, 112, true}, Goal{14, 112, 5, 2, 192, false}, Goal{28, 40, 3, 1, 40, true},
                       Goal{28, 40, 5, 1, 40, true}, Goal{28, 40, 3, 2, 80, true}, Goal{56, 24, 3, 1, 24, false}}) {
    MBConvProblem p;
    p.N = 128, p.H = p.W = g.H, p.C = g.C, p.kernel = g.k, p.stride = g.stride, p.C_out = g.C_out, p.dtype = DType::f16;
    INFO(OpTraits<MBConvProblem>::spec(p));
    Tile t;
    const ClusterFinish f = finish_at(p, t);
    INFO(t.tiles << " tiles × " << t.splits << " splits, " << t.images << " images a tile");
    CHECK(f.fits == g.cluster);
    if (!f.fits) continue;
    CHECK(t.tiles * t.splits <= kClusterMax);
    CHECK(f.ctas % f.col_groups == 0);
    CHECK(f.bytes <= kSharedTwoCtas);  // two CTAs an SM, as pass 1
    CHECK(f.st.nt <= kStreamMaxNT);
    CHECK(f.st.parts * f.st.nt >= f.group_n8);
    check_cluster_walk(p, t, f, 0);
    check_cluster_walk(p, t, f, t.groups - 1);
  }
}

TEST_CASE("mbconv tile: 11k's cluster finish at odd shapes writes every Y cell once", "[mbconv][lesson11][cpu]") {
  struct Odd {
    int N, H, C, e, k, stride, C_out;
  };
  for (const Odd o : {Odd{1, 7, 8, 6, 3, 1, 8}, Odd{3, 13, 24, 4, 5, 2, 40}, Odd{5, 9, 40, 6, 3, 1, 40},
                      Odd{7, 14, 112, 6, 3, 1, 112}, Odd{2, 7, 192, 6, 5, 1, 320}, Odd{9, 11, 16, 1, 3, 1, 24},
                      Odd{4, 5, 136, 6, 3, 2, 200}}) {
    MBConvProblem p;
    p.N = o.N, p.H = p.W = o.H, p.C = o.C, p.expand = o.e, p.kernel = o.k, p.stride = o.stride, p.C_out = o.C_out;
    p.dtype = DType::f16;
    INFO(OpTraits<MBConvProblem>::spec(p));
    Tile t;
    const ClusterFinish f = finish_at(p, t);
    INFO(t.tiles << " tiles × " << t.splits << " splits, " << t.images << " images a tile, fits " << f.fits);
    if (!f.fits) continue;
    for (int group = 0; group < t.groups; ++group) check_cluster_walk(p, t, f, group);
  }
}
