# The next session's first call (written in wave-3g, not run): the rows the split rule changed, on
# the H200, with PyTorch's MBConv rows (the graph mode too) in the same run, then 11k's kernel time.
# Before it: git rev-parse --short HEAD > .scratch/rev; copy this file to .scratch/. About 560 s
# on a cold machine (build ≈ 220 s).
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/p
# 1. tests and bench of every store-plan rung (the split changes 11b, 11c, 11e, 11h, 11i) and 11k,
#    PyTorch's rows in the same run (a budget that reaches the graph mode)
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=130 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=150 CONVLAB_TORCH_BUDGET=130 \
  timeout 480 bench/run_gpu.sh --torch --only 'mbconv/gpu/(11b|11c|11e|11h|11i|11k)' > /tmp/b/run.log 2>&1
# 2. 11k's one kernel against 11c's three at C = 80 @ 14² and 28² (ncu basic; the L2 flush is the first kernel)
printf '%s\n' 'mbconv/gpu/11k_fused_block_cluster | N=128,H=14,C=80,dtype=f16 | | 2' \
  'mbconv/gpu/11c_fused_store | N=128,H=14,C=80,dtype=f16 | | 4' \
  'mbconv/gpu/11k_fused_block_cluster | N=128,H=28,C=40,dtype=f16 | | 2' > /tmp/list.txt
left=$((585 - SECONDS)); [ $left -gt 30 ] && OUT=/tmp/p CONVLAB_NCU_SET=basic timeout $left bench/profile_gpu.sh /tmp/list.txt > /tmp/p/ncu.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/p/profile.tar.gz $OUT/kernel-times.tar.gz 2>/dev/null
cp /tmp/b/summary.txt $OUT/summaries.txt
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/results.tar.gz b/run.log p/ncu.log
cat $OUT/summaries.txt
