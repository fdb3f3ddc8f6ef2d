// gpu/lib/phase_stamps.cuh — where the time of one CTA goes, phase by phase: a diagnostic for the
// one-CTA-per-image kernels (lesson 11's 11g), where Nsight's whole-kernel figures hide which phase
// of the CTA's serial chain is long.
//
// With CONVLAB_PHASE_STAMPS set in the environment, the rung's host code makes a PhaseStamps for the
// launch and hands its device pointer to the kernel; one thread per CTA calls phase_stamp(s, i) at
// the kernel's phase boundaries (%globaltimer, nanoseconds). After the launch, report() prints one
// line to stderr: for each phase, the median and the largest time over the CTAs, and how far apart
// the CTAs started and ended. Without the variable the pointer is null and each stamp is one
// predicated-off branch; the benchmark never sets it.
//
//   CONVLAB_PHASE_STAMPS=1 build/convlab run mbconv/gpu/11g_fused_image_wgmma --shape N=128,H=7,C=192,dtype=f16 --reps 0
//
// Inside a phase that loops over chunks with two roles handing work to each other (11g's expand and
// depthwise), ChunkTrace goes one level down: with CONVLAB_CHUNK_TRACE set, one thread of each role
// of the first kTraceCtas CTAs stamps the SM's clock (cycles) at every step of every chunk, and
// report() prints each step's median cycles, each role's chunk period and the hand-overs between
// the roles. The kernel reads the clock only in an instantiation made for the trace (a template
// flag), so the measured kernel carries no trace code at all.
//
//   CONVLAB_CHUNK_TRACE=1 build/convlab run mbconv/gpu/11g_fused_image_wgmma --shape N=128,H=7,C=192,dtype=f16 --reps 0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convlab::gpu {

// Stamp i of this CTA (s: the launch's stamps, kinds × gridDim.x, or null).
__device__ __forceinline__ void phase_stamp(unsigned long long* s, int i, int kinds) {
  if (s == nullptr) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  s[std::size_t(blockIdx.x) * kinds + i] = t;
}

// The clock of step `event` of chunk `chunk` in this CTA (t: the launch's trace, or null; only the
// first kTraceCtas CTAs record).
inline constexpr int kTraceCtas = 4;
__device__ __forceinline__ void chunk_stamp(unsigned long long* t, int chunks, int events, int chunk, int event) {
  if (t == nullptr || blockIdx.x >= kTraceCtas) return;
  t[(std::size_t(blockIdx.x) * chunks + chunk) * events + event] = clock64();
}

// Host side. names[i] names the phase that ends at stamp i + 1 (stamp 0 is the CTA's entry).
class PhaseStamps {
 public:
  PhaseStamps(std::string kernel, int ctas, std::vector<std::string> names);
  ~PhaseStamps();
  PhaseStamps(const PhaseStamps&) = delete;
  PhaseStamps& operator=(const PhaseStamps&) = delete;
  unsigned long long* device() const { return stamps_; }  // null when not enabled
  int kinds() const { return int(names_.size()) + 1; }
  void report() const;  // synchronizes; prints nothing when not enabled

 private:
  std::string kernel_;
  int ctas_;
  std::vector<std::string> names_;
  unsigned long long* stamps_ = nullptr;
};

// Host side of chunk_stamp. roles[r] names role r's steps in order; their event numbers run on
// across the roles (role 0's steps first). A link {name, from, to, lag} reports the cycles from
// event `from` of chunk c − lag to event `to` of chunk c: a hand-over between the roles.
struct TraceLink {
  std::string name;
  int from, to, lag;
};
class ChunkTrace {
 public:
  ChunkTrace(std::string kernel, int chunks, std::vector<std::vector<std::string>> roles,
             std::vector<TraceLink> links);
  ~ChunkTrace();
  ChunkTrace(const ChunkTrace&) = delete;
  ChunkTrace& operator=(const ChunkTrace&) = delete;
  static bool requested();                                   // CONVLAB_CHUNK_TRACE is set
  unsigned long long* device() const { return trace_; }      // null when not enabled
  int events() const { return events_; }
  void report() const;  // synchronizes; prints nothing when not enabled

 private:
  std::string kernel_;
  int chunks_, events_ = 0;
  std::vector<std::vector<std::string>> roles_;
  std::vector<TraceLink> links_;
  unsigned long long* trace_ = nullptr;
};

}  // namespace convlab::gpu
