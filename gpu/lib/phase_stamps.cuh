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

}  // namespace convlab::gpu
