// gpu/lib/shared_poison.hpp — what the harness's shared-memory poison (shared_poison.cu, behind
// core/device.hpp's poison_shared_memory) does, callable on its own so that a test can check it.
// Plain C++ (no CUDA types); implemented in shared_poison.cu, which exists only in builds with
// CONVLAB_CUDA. Both launch one CTA per SM, each asking for the largest dynamic shared memory a
// CTA may have, so every SM runs exactly one of them.
#pragma once

#include <vector>

namespace convlab::gpu {

// Every SM's shared memory := `byte` (the poison is 0xFF: NaN in f16, bf16 and f32).
void fill_every_sm_shared(unsigned char byte);

// Per CTA (one per SM), how many 16-byte units of its shared memory, read without being written,
// hold a byte other than `byte`: what a kernel that reads shared memory it never wrote finds there.
std::vector<int> count_shared_units_other_than(unsigned char byte);

}  // namespace convlab::gpu
