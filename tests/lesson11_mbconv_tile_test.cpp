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
//      plain loop's taps.
//   3. ldmatrix .x2.trans on a [k][n] tile delivers the mma B fragment.
//   4. The 16-byte copy path's preconditions: every chunk's rows and the
//      depthwise slice start on 16 bytes and are whole vectors.
//   5. split_tile: the CTAs that share a tile make every hidden chunk (sums,
//      store) or every output column (project_stored) exactly once.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

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

constexpr Stage kStages[] = {Stage::sums, Stage::store, Stage::project, Stage::project_stored};

TEST_CASE("mbconv tile: the shared layout is aligned, disjoint and bank-friendly", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : fused_shapes())
    for (Stage s : kStages) {
      const Tile t = choose_tile(p, s);
      INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s));
      REQUIRE(t.rows > 0);
      CHECK(t.bytes <= kMaxShared);
      CHECK(t.acc_tiles() <= kWarps * kMaxAccTiles);
      CHECK(t.tiles * t.rows >= t.P);
      CHECK((t.tiles - 1) * t.rows < t.P);
      // Regions: [offset, offset + size), each buffered region counted as often as it is buffered.
      const bool make_d = s != Stage::project_stored;
      const bool sums = s == Stage::sums || s == Stage::store;
      const std::size_t taps = std::size_t(p.kernel) * p.kernel;
      CHECK(t.e_buffers == (t.expand ? 2 : 3));  // the pipeline: E of chunks k and k+1 (and k+2, copied, without expand)
      CHECK(t.d_buffers == (s == Stage::project ? 1 : s == Stage::project_stored ? 2 : 0));
      const std::vector<std::pair<std::size_t, std::size_t>> regions = {
          {t.x_off, make_d && t.expand ? std::size_t(t.m_in) * t.ldx * 2 : 0},
          {t.e_off, make_d ? t.e_buffers * std::size_t(t.m_in) * t.lde * 2 : 0},
          {t.d_off, t.d_buffers * std::size_t(t.m_out) * t.ldd * 2},
          {t.we_off, 2 * t.we_bytes},
          {t.wp_off, 2 * t.wp_bytes},
          {t.dw_off, 2 * t.dw_bytes},
          {t.dwf_off, make_d ? 2 * kChunk * taps * 4 : 0},
          {t.v_off, 3 * std::size_t(3) * kChunk * 4},
          {t.red_off, sums ? 2 * std::size_t(kPixelGroups) * kChunk * 4 : 0}};
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
      const int group_max = dw_group_max(p.kernel, p.stride, s == Stage::project || s == Stage::project_stored);
      const int groups = (t.rows + t.dw_rows - 1) / t.dw_rows;
      CHECK((t.dw_rows >= 1 && t.dw_rows <= group_max));
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
      // The halo: every input row a tile's depthwise reads is inside the E buffer.
      for (int tile = 0; tile < t.tiles; ++tile) {
        const int p0 = tile * t.rows, p1 = std::min(t.P, p0 + t.rows);
        const int h0 = std::max(0, p0 * t.stride - t.pad), h1 = std::min(t.H, (p1 - 1) * t.stride - t.pad + p.kernel);
        CHECK((h1 - h0) * t.W <= t.m_in);
        CHECK(h1 - h0 <= t.in_rows);
        CHECK((p1 - p0) * t.Q <= t.m_out);
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
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::bench, Device::gpu))
    for (Stage s : kStages) {
      const Tile t = choose_tile(p, s);
      INFO(OpTraits<MBConvProblem>::spec(p) << " stage " << int(s));
      CHECK(t.bytes <= kSharedTwoCtas);
    }
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

TEST_CASE("mbconv tile: the CTAs of a split tile make every chunk or output column once", "[mbconv][lesson11][cpu]") {
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
        CHECK(t.cout_split % 8 == 0);
        if (1LL * t.tiles * p.N >= 2LL * resident) CHECK(t.splits == 1);  // split only a grid short of two waves
        if (s == Stage::project || (s == Stage::project_stored && t.splits == 1)) CHECK(t.cout_split == t.cout_pad);
        if (s == Stage::project) CHECK(t.splits == 1);
        // the kernel's walk: part z makes chunks z, z + splits, ... and columns [z·cout_split, +cout_split)
        std::vector<int> chunk_seen((p.hidden() + kChunk - 1) / kChunk, 0), col_seen(p.C_out, 0);
        const bool sums = s == Stage::sums || s == Stage::store;
        for (int part = 0; part < t.splits; ++part) {
          const int c_first = sums ? part * kChunk : 0, c_step = sums ? t.splits * kChunk : kChunk;
          CHECK(c_first < p.hidden());  // no CTA without work
          for (int c0 = c_first; c0 < p.hidden(); c0 += c_step) ++chunk_seen[c0 / kChunk];
          const int o0 = s == Stage::project_stored ? part * t.cout_split : 0;
          CHECK(o0 < p.C_out);
          for (int o = o0; o < std::min(p.C_out, o0 + t.cout_split); ++o) ++col_seen[o];
        }
        const int chunk_times = sums ? 1 : t.splits, col_times = s == Stage::project_stored ? 1 : t.splits;
        for (int c : chunk_seen) CHECK(c == chunk_times);
        for (int c : col_seen) CHECK(c == col_times);
      }
}

TEST_CASE("mbconv tile: the depthwise runs cover every output pixel once per pair, with the plain loop's taps",
          "[mbconv][lesson11][cpu]") {
  for (int stride : {1, 2})
    for (int K : {3, 5})
      for (int W : {1, 2, 3, 6, 7, 8, 13, 14, 28, 56, 57}) {
        const int Q = (W - 1) / stride + 1, pad = K / 2;
        const int runs_per_row = (Q + kRun - 1) / kRun;
        for (int rows : {1, 2, 4, 5, 6, 9})
        for (int dw_rows : {1, 2, 3}) {
          std::multiset<std::pair<int, int>> seen;  // (row, q), per pair
          const int groups = (rows + dw_rows - 1) / dw_rows;
          const int items = groups * runs_per_row * kPairs;
          for (int tid = 0; tid < kThreads; ++tid) {
            DwRunWalk walk(tid / kPairs, runs_per_row);  // the kernel's walk: no division per item
            for (int item = tid; item < items; item += kThreads, walk.next()) {
              CHECK(item % kPairs == tid % kPairs);  // a thread's pair never changes
              const DwRun run = dw_run(item / kPairs, runs_per_row);
              CHECK(walk.run().row == run.row);
              CHECK(walk.run().q0 == run.q0);
              if (tid % kPairs != 0) continue;
              CHECK((run.row >= 0 && run.row < groups));
              const int w0 = run.q0 * stride - pad;
              for (int i = 0; i < kRun; ++i) {
                const int q = run.q0 + i;
                if (q >= Q) break;
                // the kernel's rows of the group: og + g for g < min(dw_rows, rows − og)
                const int og = run.row * dw_rows;
                for (int g = 0; g < std::min(dw_rows, rows - og); ++g) seen.insert({og + g, q});
                for (int s = 0; s < K; ++s) {  // window slot i·stride + s is input column q·stride + s − pad
                  const int u = i * stride + s;
                  CHECK(u < (kRun - 1) * stride + K);
                  CHECK(w0 + u == q * stride + s - pad);
                }
              }
            }
          }
          CHECK(int(seen.size()) == rows * Q);
          // The two runs of a warp (runs 2k, 2k + 1): both edge runs or both interior when a row has an even count.
          if (runs_per_row % 2 == 0)
            for (int run = 0; run < groups * runs_per_row; run += 2) {
              const auto edge = [&](int r) {
                const int q0 = dw_run(r, runs_per_row).q0;
                return q0 == 0 || q0 == (runs_per_row - 1) * kRun;
              };
              CHECK(edge(run) == edge(run + 1));
            }
          for (int r = 0; r < rows; ++r)
            for (int q = 0; q < Q; ++q) CHECK(seen.count({r, q}) == 1);
        }
      }
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

TEST_CASE("mbconv tile: 11c's pass 2 reads D where pass 1 wrote it, with the gates of the rows' images",
          "[mbconv][lesson11][cpu]") {
  std::vector<MBConvProblem> shapes = fused_shapes();
  MBConvProblem one_pixel;  // 150 one-pixel images: a block spans 129 of them
  one_pixel.N = 150, one_pixel.H = one_pixel.W = 1, one_pixel.C = 32, one_pixel.C_out = 32, one_pixel.dtype = DType::f16;
  shapes.push_back(one_pixel);
  for (const MBConvProblem& p : shapes)
    for (int sms : {1, 78, 132}) {
      const ProjectTile t = choose_project_tile(p, sms);
      INFO(OpTraits<MBConvProblem>::spec(p) << " sms " << sms << " tile " << t.bm << "x" << t.bn);
      REQUIRE(t.bm > 0);
      CHECK(t.bytes <= kMaxShared);
      CHECK(t.bytes == kProjectStages * t.stage_bytes);
      CHECK(t.a_bytes % 16 == 0);
      CHECK(t.b_bytes % 16 == 0);
      CHECK(t.g_bytes % 16 == 0);
      CHECK(t.lda % 8 == 0);  // ldmatrix rows: an odd number of 16-byte units
      CHECK((t.lda / 8) % 2 == 1);
      CHECK((t.ldb / 8) % 2 == 1);
      CHECK(t.ldb >= t.bn);
      CHECK(std::int64_t(t.m_blocks) * t.bm >= t.m);
      CHECK(std::int64_t(t.n_blocks) * t.bn >= p.C_out);
      CHECK(t.d_live % 8 == 0);  // gate16 rows and dbuf chunk columns: whole 16-byte pieces
      // Every block's rows lie in at most `span` images, and each row's slot is its image's place.
      for (int mb = 0; mb < t.m_blocks; ++mb) {
        const std::int64_t m0 = std::int64_t(mb) * t.bm, last = std::min<std::int64_t>(m0 + t.bm, t.m) - 1;
        CHECK(project_gate_slot(t, m0, last) < t.span);
        CHECK(project_gate_slot(t, m0, m0) == 0);
      }
      // The rows pass 2 copies are the ones pass 1 stored: dbuf_offset's layout, chunk by chunk.
      const Tile pass1 = choose_tile(p, Stage::store);
      const std::int64_t probes[] = {0, 1, t.pq - 1, t.pq, t.m / 2, t.m - 1};
      for (std::int64_t m : probes) {
        if (m < 0 || m >= t.m) continue;
        const int n = int(m / t.pq);
        const std::int64_t pixel = m - std::int64_t(n) * t.pq;
        for (int chunk : {0, t.chunks - 1})
          CHECK(project_row_offset(t, m) + std::ptrdiff_t(chunk) * t.pq * kChunk ==
                dbuf_offset(pass1, n, chunk, pixel));
      }
    }
}

TEST_CASE("mbconv tile: 11c's pass 2 tile at the goal shapes", "[mbconv][lesson11][cpu]") {
  // The busiest SM's work ⌈CTAs / 132⌉·bm·bn, then fewer column blocks: at 7 × 7 × 192 (M = 6272),
  // 64 × 64 (294 CTAs, 3 column blocks) ties 128 × 32 (294 CTAs, 6 blocks) and wins on blocks.
  MBConvProblem p;
  p.N = 128, p.H = p.W = 7, p.C = p.C_out = 192, p.dtype = DType::f16;
  ProjectTile t = choose_project_tile(p, 132);
  CHECK(t.bm == 64);
  CHECK(t.bn == 64);
  CHECK(t.span == 3);  // 64 rows of 49-pixel images
  // At 56 × 56 × 24 (M = 401 408, DRAM-bound): 256 × 32 ties 128 × 32 on work and wins on size
  // (fewer blocks, each with more bytes in flight per fixed cost).
  p.H = p.W = 56, p.C = p.C_out = 24;
  t = choose_project_tile(p, 132);
  CHECK(t.bm == 256);
  CHECK(t.bn == 32);
  CHECK(t.n_blocks == 1);
}

TEST_CASE("mbconv tile: the SE gate kernel's shared memory holds both FCs' partial sums", "[mbconv][lesson11][cpu]") {
  std::vector<MBConvProblem> shapes;
  for (ShapeTable table : {ShapeTable::test, ShapeTable::bench})
    for (Device device : {Device::cpu, Device::gpu})
      for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(table, device)) shapes.push_back(p);
  MBConvProblem wide;  // Cr past 8·256 (FC1 with one row group), hidden past 8·256 (FC2 unsplit)
  wide.N = 1, wide.H = wide.W = 3, wide.C = 1000, wide.expand = 3, wide.se = 2.5, wide.C_out = 8;
  shapes.push_back(wide);
  for (const MBConvProblem& p : shapes) {  // with SE and without (Cr = 0: the layer rungs still ask)
    INFO(OpTraits<MBConvProblem>::spec(p));
    const int hidden = p.hidden(), cr = p.se_channels();
    const int units = std::max(1, (cr + 7) / 8), groups = std::max(1, kGateThreads / units);
    const int pieces = (hidden + 7) / 8, splits = std::max(1, kGateThreads / pieces);
    const int red = se_gate_red_floats(hidden, cr);
    CHECK(red >= groups * 8 * units);              // FC1: group jj's outputs at jj·8·units + 8u + i
    if (splits > 1) CHECK(red >= splits * 8 * pieces);  // FC2: split rr's channels at rr·8·pieces + 8v + i
    CHECK(se_gate_shared_bytes(p) == (std::size_t(hidden) + cr + red) * sizeof(float));
    (void)se_gate_fits(p);
  }
}
