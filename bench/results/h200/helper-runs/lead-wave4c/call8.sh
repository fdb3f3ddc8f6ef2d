# lead-wave4c call 8 (any card): why the ring lost (call 7: 11y's stream 28.7 µs against 11c's
# 22.4–23.7 at C = 80 @ 14², natural L2). The source profiles of both streams at that shape with
# the L2 as the block leaves it, one process each, 11y first. Before them, every GPU test of lesson
# 11 (all rungs, with ring.patch's new test shape, whose stream warps make two or three tasks).
# Host steps as call2.sh's (ring.patch, the copy, .scratch/rev); the build keeps only lesson 11's
# GPU files and the library's.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-380}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
CALL_GPU_ONLY='gpu/(lib|mbconv)/' call_build 220 || exit 4
call_stage tests 60 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
for v in 11y_store_ring 11c_fused_store; do
  left=$((CALL_LIMIT - SECONDS - 10))
  ((left < 60)) && { echo "skipped $v: ${left}s left"; continue; }
  ((left > 150)) && left=150
  CONVLAB_NCU_CACHE=none timeout $left bench/profile_source.sh mbconv/gpu/$v N=128,H=14,C=80,dtype=f16 \
    mbconv_project_stream_kernel
  echo "profile $v: status $?"
done
call_finish
ls -la "$OUT"
