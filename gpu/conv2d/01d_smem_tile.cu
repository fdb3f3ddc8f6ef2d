// gpu/conv2d/01d_smem_tile.cu — lesson 01, GPU rung 01d: a shared-memory tile.
//
// Idea over 01c_thread_per_output: neighbouring outputs read almost the same
// inputs. An 8×8 patch of output pixels with a 3×3 filter reads a 10×10 patch
// of x, yet rung 01c loads each of those x values up to 9 times per output
// channel, and each weight once per output pixel. Here a block of threads
// owns a tile of outputs — kTileRows × kTileCols pixels of one image times
// kTileChannels output channels — and, one chunk of kChunk input channels at a
// time, copies the input "halo" patch those pixels need and the matching
// weights into shared memory, where many threads read each copied value.
//
// Cost: the same multiply-adds, far fewer global loads. Per chunk a block
// loads each halo value once and uses it for kTileChannels channels and up to
// R·S taps, and loads each weight once and uses it for kTileRows·kTileCols
// pixels (rung 01c: two global loads per multiply-add). In exchange every chunk
// of input channels costs 2·R·S block-wide barriers (__syncthreads), edge
// tiles spend work on outputs they do not store, and a block whose group has
// fewer than kTileChannels output channels (depthwise: one) leaves threads
// idle. Large filters or strides make the halo larger than the shared-memory
// budget: those problems are declared unsupported rather than handled slowly.
// fp32 and fp16 (widened to fp32 in shared memory, fp32 sums, one rounding to
// fp16 at the store).
// Run just this: build/convlab run conv2d/gpu/01d_smem_tile
#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables ----------------------------------------------------------------
constexpr int kTileRows = 8;       // output rows per block: one per threadIdx.y
constexpr int kTileCols = 8;       // output columns per block: every thread holds all of them (kTileCols sums)
constexpr int kTileChannels = 32;  // output channels per block: one per threadIdx.x
constexpr int kChunk = 16;         // input channels staged in shared memory at a time
constexpr int kThreads = kTileChannels * kTileRows;
constexpr int kSmemPerBlock = 48 * 1024;  // what a block may use without opting in to more

static_assert(kTileChannels % 32 == 0,
              "a warp must lie inside one output row (one threadIdx.y): then all 32 lanes read the same halo "
              "value, a shared-memory broadcast, and store 32 consecutive k of one pixel, a coalesced line");
static_assert(kThreads <= 1024, "CUDA allows at most 1024 threads per block");
static_assert(kTileCols <= 16, "each thread keeps kTileCols running sums in registers");

// The weight slice of one tap, [kChunk][kTileChannels + 1]: the +1 column of
// padding moves successive rows to different banks, so the staging writes
// (consecutive threads walk down a column) do not all hit the same bank.
constexpr int kWeightPitch = kTileChannels + 1;
constexpr int kWeightSmemBytes = kChunk * kWeightPitch * int(sizeof(float));
constexpr int kMaxHaloBytes = kSmemPerBlock - kWeightSmemBytes;  // dynamic shared memory left for the halo
static_assert(kMaxHaloBytes >= kTileRows * kTileCols * kChunk * int(sizeof(float)),
              "the halo of a 1×1 filter (the tile itself) must fit, or no problem could run");

// The input patch a tile of outputs needs: output rows p0 … p0+kTileRows−1
// read input rows p0·stride − pad … (p0+kTileRows−1)·stride − pad + R − 1.
__host__ __device__ constexpr int halo_rows(int R, int stride) { return (kTileRows - 1) * stride + R; }
__host__ __device__ constexpr int halo_cols(int S, int stride) { return (kTileCols - 1) * stride + S; }

int64_t halo_bytes(const ConvProblem& p) {
  return int64_t(halo_rows(p.R, p.stride)) * halo_cols(p.S, p.stride) * kChunk * int64_t(sizeof(float));
}

// Kernel contract.
//   x [N, H, W, C] NHWC, w [K, R, S, T] KRSC, y [N, P, Q, K] NHWC; Element = float or __half.
//   Block (bx, by): bx → (n, tile_p, tile_q), by → (group, k_block);
//   it computes y[n, p0 … p0+7, q0 … q0+7, k0 … k0+31] with p0 = 8·tile_p,
//   q0 = 8·tile_q, k0 = group·K_per_group + 32·k_block, k0+31 capped at the group's end.
//   Thread (tx, ty) owns output row p0+ty, channel k0+tx and all 8 columns:
//
//            q0 ───────────── q0+7
//     p0    [t(·,0): 8 sums per channel tx]      ← warp 0 = the 32 channels of row p0
//      ⋮     ⋮
//     p0+7  [t(·,7)]                             ← warp 7
//
//   Shared memory: halo [halo_rows][halo_cols][kChunk] (dynamic) and w_tap [kChunk][33].
//   Edge duties: halo entries outside the image (padding, or past the last
//   row/column of an edge tile) are zero; weights of channels past the group's
//   end are zero; only outputs inside [P, Q, K_per_group] are stored. Every
//   thread reaches every barrier: none returns early.
template <class Element>
__global__ void __launch_bounds__(kThreads)
    conv2d_smem_tile(ConvGeometry g, int tiles_p, int tiles_q, int k_blocks_per_group,
                     const Element* __restrict__ x, const Element* __restrict__ w, Element* __restrict__ y) {
  extern __shared__ float halo[];                       // [halo_rows][halo_cols][kChunk]
  __shared__ float w_tap[kChunk][kWeightPitch];         // w[k0 + kk, r, s, c0 + cc] at [cc][kk]

  const int rows = halo_rows(g.R, g.stride), cols = halo_cols(g.S, g.stride);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTileChannels + tx;

  // Which tile is ours.
  const int tile_q = blockIdx.x % tiles_q;
  const int tile_p = blockIdx.x / tiles_q % tiles_p;
  const int n = blockIdx.x / (tiles_q * tiles_p);
  const int group = blockIdx.y / k_blocks_per_group;
  const int k_block_start = (blockIdx.y % k_blocks_per_group) * kTileChannels;  // within the group
  const int p0 = tile_p * kTileRows, q0 = tile_q * kTileCols;
  const int ih0 = p0 * g.stride - g.pad, iw0 = q0 * g.stride - g.pad;  // halo origin in x (may be < 0)
  const int group_channel0 = group * g.T;                              // first x channel of the group
  const int group_k0 = group * g.K_per_group;                          // first y channel of the group

  float acc[kTileCols] = {};

  for (int c0 = 0; c0 < g.T; c0 += kChunk) {
    const int chunk = min(kChunk, g.T - c0);  // the last chunk may be short (and depthwise has T = 1)

    // TUTORIAL: stage the halo. Plain form:
    //   for hr, hc, cc: halo[hr][hc][cc] = inside(ih0+hr, iw0+hc) ? x[n, ih0+hr, iw0+hc, c0+cc] : 0
    // flattened so that consecutive threads take consecutive cc — consecutive
    // addresses in x (NHWC) and in shared memory. The previous chunk's last
    // barrier guarantees nobody still reads the old halo.
    for (int i = tid; i < rows * cols * kChunk; i += kThreads) {
      const int cc = i % kChunk, hc = i / kChunk % cols, hr = i / (kChunk * cols);
      const int ih = ih0 + hr, iw = iw0 + hc;
      float v = 0.f;
      if (cc < chunk && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
        v = gpu::to_float(x[((int64_t(n) * g.H + ih) * g.W + iw) * g.C + group_channel0 + c0 + cc]);
      halo[i] = v;
    }

    for (int r = 0; r < g.R; ++r)
      for (int s = 0; s < g.S; ++s) {
        // Stage this tap's weights: w_tap[cc][kk] = w[group_k0 + k_block_start + kk, r, s, c0 + cc].
        for (int i = tid; i < kChunk * kTileChannels; i += kThreads) {
          const int cc = i % kChunk, kk = i / kChunk;
          const int k_in_group = k_block_start + kk;
          float v = 0.f;
          if (cc < chunk && k_in_group < g.K_per_group)
            v = gpu::to_float(w[((int64_t(group_k0 + k_in_group) * g.R + r) * g.S + s) * g.T + c0 + cc]);
          w_tap[cc][kk] = v;
        }
        __syncthreads();  // halo (at the first tap) and w_tap are complete

        // TUTORIAL: the tile's share of the reduction for this tap. Plain form:
        //   for j < kTileCols: for cc < chunk:
        //     acc[j] += x[n, (p0+ty)·stride + r − pad, (q0+j)·stride + s − pad, c0+cc] · w[k, r, s, c0+cc]
        // Both operands now come from shared memory: the weight once per cc
        // into a register and reused for all kTileCols pixels; the halo value
        // is the same address for the whole warp (one broadcast).
        const float* halo_row = halo + ((ty * g.stride + r) * cols + s) * kChunk;
        for (int cc = 0; cc < chunk; ++cc) {
          const float weight = w_tap[cc][tx];
#pragma unroll
          for (int j = 0; j < kTileCols; ++j) acc[j] += halo_row[j * g.stride * kChunk + cc] * weight;
        }
        __syncthreads();  // everyone is done with w_tap (and after the last tap, with the halo)
      }
  }

  const int p = p0 + ty, k_in_group = k_block_start + tx;
  if (p >= g.P || k_in_group >= g.K_per_group) return;  // past the bottom edge or the group's channels
  Element* y_row = y + (int64_t(n) * g.P + p) * g.Q * int64_t(g.K) + group_k0 + k_in_group;
#pragma unroll
  for (int j = 0; j < kTileCols; ++j)
    if (q0 + j < g.Q) y_row[int64_t(q0 + j) * g.K] = gpu::from_float<Element>(acc[j]);
}

struct LaunchShape {
  int64_t tiles_p, tiles_q, k_blocks_per_group;
  int64_t grid_x, grid_y;
};

LaunchShape launch_shape(const ConvProblem& p) {
  LaunchShape l{};
  l.tiles_p = gpu::ceil_div<int64_t>(p.P(), kTileRows);
  l.tiles_q = gpu::ceil_div<int64_t>(p.Q(), kTileCols);
  l.k_blocks_per_group = gpu::ceil_div<int64_t>(p.K_per_group(), kTileChannels);
  l.grid_x = int64_t(p.N) * l.tiles_p * l.tiles_q;
  l.grid_y = int64_t(p.groups) * l.k_blocks_per_group;
  return l;
}

bool supports(const ConvProblem& p) {
  if (p.dtype != DType::f32 && p.dtype != DType::f16) return false;
  if (halo_bytes(p) > kMaxHaloBytes) return false;  // filter/stride too large for one halo in shared memory
  const LaunchShape l = launch_shape(p);
  return l.grid_x <= gpu::kMaxGridX && l.grid_y <= gpu::kMaxGridYZ;
}

template <class Element> void launch(const ConvProblem& p, const Args<ConvProblem>& a) {
  const LaunchShape l = launch_shape(p);
  const dim3 grid(unsigned(l.grid_x), unsigned(l.grid_y)), block(kTileChannels, kTileRows);
  const auto halo_smem = static_cast<std::size_t>(halo_bytes(p));  // dynamic; w_tap is static
  conv2d_smem_tile<Element><<<grid, block, halo_smem>>>(
      gpu::geometry_of(p), int(l.tiles_p), int(l.tiles_q), int(l.k_blocks_per_group),
      static_cast<const Element*>(a.x), static_cast<const Element*>(a.w), static_cast<Element*>(a.y));
  gpu::check_launch("conv2d_smem_tile");
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  // f16 tensors are the harness's uint16_t bit patterns, read as __half.
  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) { launch<typename decltype(tag)::type>(p, a); });
}

const Register<ConvProblem> reg{{
    .name = "01d_smem_tile",
    .device = Device::gpu,
    .lesson = 1,
    .supports = supports,
    .run = run,
    .idea = "8x8 pixels x 32 channels per block; input halo and weights staged in shared memory per 16 channels",
}};

}  // namespace
}  // namespace convlab
