// gpu/mbconv/11k_fused_block_cluster.cu — lesson 11, GPU rung k: 11c's store plan as one kernel,
// its kernel boundaries turned into cluster barriers.
//
// Idea over 11c_fused_store: the SE gate of an image depends only on the CTAs that made that
// image's D. Launch pass 1 with every CTA of a tile group (an image's tiles × splits, or a tile of
// several small images × splits) in one thread-block cluster; after a cluster barrier the cluster
// makes its images' gates, after a second one its rows of pass 2. No gate kernel, no pass-2
// kernel, no wait for the whole batch's pass 1: each cluster finishes on its own.
//
//   per cluster   pass 1 (11c's store stage: D -> dbuf, sums -> partial)
//                 barrier; the gates of its images (CTA r: images r, r + ctas, ...) -> gate16
//                 barrier; Y = (D ⊙ G)·Wp + bp (+ x) over its rows, CTA r on one range of Wp's columns
//
// Plain loop it replaces: ref::mbconv_block. Cost: 11c's (pass 1's splits capped at a cluster of
// kClusterMax CTAs), D through L2 between the halves of one kernel. Where a tile group has more
// CTAs than a cluster (56²: 12 tiles an image) or the finish does not fit pass 1's shared memory,
// 11k runs 11c's three launches (gpu/lib/mbconv_block_cluster.cuh: cluster_plan).
// Supported: f16, bf16, with SE; the sizes of fused_support. Workspace: 11c's (StorePlanLayout).
// Run just this: build/convlab run mbconv/gpu/11k_fused_block_cluster --shape N=128,H=14,C=80,dtype=f16
#include "gpu/lib/mbconv_block_cluster.cuh"

namespace convlab {
namespace {

using namespace gpu::mbconv;

const Register<MBConvProblem> reg{{
    .name = "11k_fused_block_cluster",
    .device = Device::gpu,
    .lesson = 11,
    .supports = store_plan_supported,
    .run = run_block_cluster,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "11c's two passes and gate as one kernel: each image's CTAs form a cluster, and the kernel boundaries become cluster barriers",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
