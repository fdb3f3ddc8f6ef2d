# lead-wave4d call 4 (any card): the two levers call 3's timeline points at, each alone and both,
# against copy 11x (11c with the timeline's stamps; call 3: 0.0684 against 11c's 0.0681 ms), all
# with the stamps so that each prints its timeline. 11w: pass 1's split tiles in part-major CTA
# order (kPartMajor). 11v: the gate kernel at 128 threads and 32 registers, so that it shares an SM
# with three stream CTAs (kGateTiny). 11u: both. Prediction in lesson 11's NOTES (wave-4d). Cut to
# fit the session's last ≈ 380 s of device time: no 11c (11x is the baseline), no sanitizers
# unless time is left, timelines at C = 80 @ 14² and 28², the bench at three shapes.
# Host steps: `git apply levers.patch` (timeline.patch and the two flags), the copies:
#   for c in "11x_store_timeline:true, false, false" "11w_store_part_major:true, true, false" "11v_store_gate_tiny:true, false, true" "11u_store_part_gate:true, true, true"; do
#     n=${c%%:*}; f=${c#*:}; sed "s#11c_fused_store#$n#g; s#run_store_plan<false, false, true, true, true, true, true>#run_store_plan<false, false, true, true, true, true, true, $f>#" gpu/mbconv/11c_fused_store.cu > gpu/mbconv/$n.cu; done
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-420}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+levers
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11u_|11v_|11w_|11x_)' call_build 200 || exit 4
call_stage tests 40 --no-bench --only 'mbconv/gpu/(11u_|11v_|11w_|11x_)'
{
  shapes='N=128,H=14,C=80 N=128,H=28,C=40'
  [[ ${CALL_FORM:-full} == least ]] && shapes=N=128,H=14,C=80
  for s in $shapes; do
    for v in 11x_store_timeline 11w_store_part_major 11v_store_gate_tiny 11u_store_part_gate; do
      echo "== $v $s"
      CONVLAB_STORE_TIMELINE=1 timeout 20 build-gpu/convlab run mbconv/gpu/$v --shape $s,dtype=f16 --reps 3 2>&1 | grep -E "store timeline|^mbconv" | tail -3
    done
  done
} > $OUT/timeline.txt
cat $OUT/timeline.txt | cut -c1-250
rows='14x14_c80_e6_k3_s1_se25_co80|28x28_c40_e6_k3_s1_se25_co40|56x56_c24_e6_k3_s1_se25_co24'
[[ ${CALL_FORM:-full} == least ]] && rows=14x14_c80_e6_k3_s1_se25_co80  # CALL_FORM=least: C = 80 @ 14² only (≈ 185 s)
CONVLAB_BENCH_TIMEOUT=20 call_stage bench 60 --no-tests --only "mbconv/gpu/(11u|11v|11w|11x)_.*($rows)_"
CONVLAB_RACECHECK_FLOP_LIMIT=1e8 call_sanitize 'mbconv/gpu/11u_store_part_gate'
call_finish
ls -la "$OUT"
