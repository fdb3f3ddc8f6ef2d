// gpu/lib/wgmma_probe.cu — the GPU half of gpu/lib/wgmma_probe.hpp: one
// tile of each of 09d_flash_wgmma's products, with its layouts, descriptors and
// fragment maps, written out so tests/lesson09_wgmma_test.cpp can compare
// them with a host product. Compiled for sm_90a (its name contains "wgmma";
// see CMakeLists.txt). Not a variant: it registers nothing.
#include "gpu/lib/wgmma_probe.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"

namespace convlab::gpu {
namespace {

constexpr int kProbeThreads = 256;  // two warpgroups, as in the rung
constexpr int kProbeRowsPerWarpgroup = 64;
constexpr int kAtomBytes = 1024;

// Writes 1 if this device runs the code that contains wgmma (sm_90a), 0 if it
// runs code compiled for another target.
__global__ void wgmma_compiled_kernel(int* flag) { *flag = kWgmmaCompiled ? 1 : 0; }

// A row-major [Tile rows x cols] matrix from global memory into a swizzled tile,
// element by element (the rung uses cp.async; the layout is the point here).
template <class Tile, int kCols, class Element>
__device__ void fill_tile(unsigned char* tile, const Element* src) {
  constexpr int kElems = Tile::kBytes / 2;
  for (int e = threadIdx.x; e < kElems; e += blockDim.x)
    *reinterpret_cast<Element*>(tile + Tile::byte_offset(e / kCols, e % kCols)) = src[e];
}

template <class Element, int kHeadDim>
__global__ void __launch_bounds__(kProbeThreads)
    wgmma_probe_kernel(const Element* q, const Element* k, const Element* p, const Element* v, float* s_out,
                       float* o_from_p_out, float* o_from_s_out) {
  if constexpr (!kWgmmaCompiled) {
    __trap();
  } else {
    using QTile = Sw128Tile<kWgmmaProbeRows, kHeadDim>;
    using KVTile = Sw128Tile<kWgmmaProbeKeys, kHeadDim>;
    constexpr int kSRegs = kWgmmaProbeKeys / 2, kORegs = kHeadDim / 2;
    constexpr int kDSteps = kHeadDim / 16, kKeySteps = kWgmmaProbeKeys / 16;
    extern __shared__ unsigned char shared[];
    const uint32_t raw = shared_address(shared);
    const uint32_t aligned = (raw + kAtomBytes - 1) & ~uint32_t(kAtomBytes - 1);
    unsigned char* q_smem = shared + (aligned - raw);
    unsigned char* k_smem = q_smem + QTile::kBytes;
    unsigned char* v_smem = k_smem + KVTile::kBytes;
    const uint32_t q_tile = aligned, k_tile = aligned + QTile::kBytes, v_tile = k_tile + KVTile::kBytes;
    fill_tile<QTile, kHeadDim>(q_smem, q);
    fill_tile<KVTile, kHeadDim>(k_smem, k);
    fill_tile<KVTile, kHeadDim>(v_smem, v);
    fence_proxy_async_shared();
    __syncthreads();

    const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;
    const int row0 = warpgroup * kProbeRowsPerWarpgroup;

    // ---- S = Q·Kᵀ: accumulators preset to NaN, first k-step with scale-d = 0 ------
    float s[kSRegs];
#pragma unroll
    for (int i = 0; i < kSRegs; ++i) s[i] = __int_as_float(0x7fc00000);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kDSteps; ++ks)
      wgmma_m64n128k16_ss<Element>(s, k_major_descriptor<QTile>(q_tile, row0, 16 * ks),
                                   k_major_descriptor<KVTile>(k_tile, 0, 16 * ks), ks > 0);
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(s);
#pragma unroll
    for (int i = 0; i < kSRegs; ++i) {
      const MatrixCoord c = wgmma_d_coord(thread, i);
      s_out[(row0 + c.row) * kWgmmaProbeKeys + c.col] = s[i];
    }

    // ---- O = P·V with P loaded into A fragments by wgmma_a_coord ---------------------
    uint32_t pa[kKeySteps][4];
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const MatrixCoord lo = wgmma_a_coord(thread, r, 0), hi = wgmma_a_coord(thread, r, 1);
        const Element e_lo = p[(row0 + lo.row) * kWgmmaProbeKeys + 16 * kk + lo.col];
        const Element e_hi = p[(row0 + hi.row) * kWgmmaProbeKeys + 16 * kk + hi.col];
        pa[kk][r] = uint32_t(*reinterpret_cast<const uint16_t*>(&e_lo)) |
                    uint32_t(*reinterpret_cast<const uint16_t*>(&e_hi)) << 16;
      }
    float o1[kORegs] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk)
      wgmma_m64nNk16_rs_mn_major_b<Element, kHeadDim>(o1, pa[kk], mn_major_descriptor<KVTile>(v_tile, 16 * kk),
                                                      true);
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(o1);
    fence_operands(pa);
#pragma unroll
    for (int i = 0; i < kORegs; ++i) {
      const MatrixCoord c = wgmma_d_coord(thread, i);
      o_from_p_out[(row0 + c.row) * kHeadDim + c.col] = o1[i];
    }

    // ---- O = round(S)·V with P packed from S's accumulators, as the rung does -------
    uint32_t ps[kKeySteps][4];
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        ps[kk][r] = pack_pair<Element>(s[wgmma_d_index_for_a(kk, r, 0)], s[wgmma_d_index_for_a(kk, r, 1)]);
    float o2[kORegs] = {};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk)
      wgmma_m64nNk16_rs_mn_major_b<Element, kHeadDim>(o2, ps[kk], mn_major_descriptor<KVTile>(v_tile, 16 * kk),
                                                      true);
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(o2);
    fence_operands(ps);
#pragma unroll
    for (int i = 0; i < kORegs; ++i) {
      const MatrixCoord c = wgmma_d_coord(thread, i);
      o_from_s_out[(row0 + c.row) * kHeadDim + c.col] = o2[i];
    }
  }
}

// Device buffer freed on scope exit.
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) : ptr(device_malloc(bytes)), bytes(bytes) {}
  ~DeviceBuffer() { device_free(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* ptr;
  std::size_t bytes;
};

std::string probe_reason() {
  if (cuda_device_count() == 0) return "no CUDA device";
  int major = 0, minor = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "cudaDeviceGetAttribute");
  const std::string device = cuda_device_name() + " (compute capability " + std::to_string(major) + "." +
                             std::to_string(minor) + ")";
  if (major != 9 || minor != 0) return "wgmma needs compute capability 9.0 (sm_90a code); device 0 is " + device;
  DeviceBuffer flag(sizeof(int));
  device_memset(flag.ptr, 0xff, sizeof(int));
  wgmma_compiled_kernel<<<1, 1>>>(static_cast<int*>(flag.ptr));
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return std::string("this build has no code for ") + device + ": " + cudaGetErrorString(err) +
           "; configure with an explicit 90 in CONVLAB_CUDA_ARCHS (files named *wgmma*.cu are then built for "
           "sm_90a)";
  device_synchronize("wgmma_compiled_kernel");
  int value = -1;
  copy_bytes(&value, Device::cpu, flag.ptr, Device::gpu, sizeof(int));
  if (value != 1)
    return "the code loaded for " + device +
           " was compiled without sm_90a features: configure with an explicit 90 in CONVLAB_CUDA_ARCHS "
           "(files named *wgmma*.cu are then built for sm_90a)";
  return "";
}

template <class Element, int kHeadDim>
void launch_probe(const void* q, const void* k, const void* p, const void* v, float* s, float* o_p, float* o_s) {
  const auto kernel = wgmma_probe_kernel<Element, kHeadDim>;
  constexpr int kShared = Sw128Tile<kWgmmaProbeRows, kHeadDim>::kBytes +
                          2 * Sw128Tile<kWgmmaProbeKeys, kHeadDim>::kBytes + kAtomBytes;
  allow_dynamic_shared(kernel, kShared, "wgmma_probe_kernel");
  kernel<<<1, kProbeThreads, kShared>>>(static_cast<const Element*>(q), static_cast<const Element*>(k),
                                        static_cast<const Element*>(p), static_cast<const Element*>(v), s, o_p, o_s);
  check_launch("wgmma_probe_kernel");
}

}  // namespace

std::string wgmma_unavailable_reason() {
  static const std::string reason = probe_reason();
  return reason;
}

WgmmaProbeResult run_wgmma_probe(DType dtype, int d, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                                 const std::vector<uint16_t>& p, const std::vector<uint16_t>& v) {
  if (dtype != DType::f16 && dtype != DType::bf16) throw std::invalid_argument("run_wgmma_probe: f16 or bf16");
  if (d != 64 && d != 128) throw std::invalid_argument("run_wgmma_probe: d = 64 or 128");
  const std::size_t q_elems = std::size_t(kWgmmaProbeRows) * d, kv_elems = std::size_t(kWgmmaProbeKeys) * d,
                    p_elems = std::size_t(kWgmmaProbeRows) * kWgmmaProbeKeys;
  if (q.size() != q_elems || k.size() != kv_elems || v.size() != kv_elems || p.size() != p_elems)
    throw std::invalid_argument("run_wgmma_probe: q [128 x d], k and v [128 x d], p [128 x 128]");
  if (const std::string why = wgmma_unavailable_reason(); !why.empty()) throw std::runtime_error(why);

  DeviceBuffer dq(q_elems * 2), dk(kv_elems * 2), dp(p_elems * 2), dv(kv_elems * 2);
  DeviceBuffer ds(p_elems * 4), dop(q_elems * 4), dos(q_elems * 4);
  copy_bytes(dq.ptr, Device::gpu, q.data(), Device::cpu, dq.bytes);
  copy_bytes(dk.ptr, Device::gpu, k.data(), Device::cpu, dk.bytes);
  copy_bytes(dp.ptr, Device::gpu, p.data(), Device::cpu, dp.bytes);
  copy_bytes(dv.ptr, Device::gpu, v.data(), Device::cpu, dv.bytes);
  for (DeviceBuffer* out : {&ds, &dop, &dos}) device_memset(out->ptr, 0xff, out->bytes);  // NaN: unwritten shows
  float* s = static_cast<float*>(ds.ptr);
  float* o_p = static_cast<float*>(dop.ptr);
  float* o_s = static_cast<float*>(dos.ptr);
  visit_dtype<__half, __nv_bfloat16>(dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (d == 64)
      launch_probe<Element, 64>(dq.ptr, dk.ptr, dp.ptr, dv.ptr, s, o_p, o_s);
    else
      launch_probe<Element, 128>(dq.ptr, dk.ptr, dp.ptr, dv.ptr, s, o_p, o_s);
  });
  device_synchronize("wgmma_probe_kernel");

  WgmmaProbeResult r;
  r.s.resize(p_elems);
  r.o_from_p.resize(q_elems);
  r.o_from_s.resize(q_elems);
  copy_bytes(r.s.data(), Device::cpu, ds.ptr, Device::gpu, ds.bytes);
  copy_bytes(r.o_from_p.data(), Device::cpu, dop.ptr, Device::gpu, dop.bytes);
  copy_bytes(r.o_from_s.data(), Device::cpu, dos.ptr, Device::gpu, dos.bytes);
  return r;
}

}  // namespace convlab::gpu
