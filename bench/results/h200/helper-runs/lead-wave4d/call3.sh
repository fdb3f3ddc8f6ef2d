# lead-wave4d call 3 (any card): where the block's time goes in its real pipeline. Copy 11x = 11c
# with run_store_plan's kTimeline (timeline.patch: gpu/lib/mbconv_store_timeline.cuh, and the three
# kernels' kTimed stamps): with CONVLAB_STORE_TIMELINE set, each launch prints when pass 1's CTAs
# end, when the gate starts, is released and ends, and when the stream's CTAs start, have staged
# Wp, are released and end, on one clock. Also: 11a in a partial build (its test must now skip,
# with the reason), 11e's four sanitizers at the GPU test table (wave-4c's new shape included).
# Host steps: `git apply timeline.patch`, the copy (the sed line below), `.scratch/rev`:
#   sed 's#11c_fused_store#11x_store_timeline#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, true>#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11x_store_timeline.cu
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+timeline
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11a_|11c_|11e_|11x_)' call_build 220 || exit 4
call_stage tests 40 --no-bench --only 'mbconv/gpu/(11a_|11c_|11e_|11x_)'
grep -h "CONVLAB-SKIP" /tmp/call-tests/*.log 2>/dev/null | head -3
{
  for s in N=128,H=14,C=80 N=128,H=28,C=40 N=128,H=56,C=24 N=128,H=14,C=112 N=128,H=7,C=192; do
    echo "== $s"
    CONVLAB_STORE_TIMELINE=1 timeout 30 build-gpu/convlab run mbconv/gpu/11x_store_timeline --shape $s,dtype=f16 --reps 5 2>&1
  done
} > $OUT/timeline.txt
cat $OUT/timeline.txt
CONVLAB_BENCH_TIMEOUT=20 call_stage bench 40 --no-tests --only 'mbconv/gpu/(11c|11x)_.*14x14_c80_e6_k3_s1_se25_co80'
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11e_fused_store_tc'
call_finish
ls -la "$OUT"
