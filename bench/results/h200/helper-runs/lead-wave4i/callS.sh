# lead-wave4i call S (not run: the session's one H200 came with too little budget left, README.md;
# tries 20 and 21 ran callS2.sh, its cut). Three things a filing run must not be the first to try, and the
# measurement wave-4h left for the gate's tail. Needs ≈ 650 s of budget at its start.
# Host steps: git apply ../lead-wave4e/gate-tail-on.patch (11c with the tail where gate_tail_pays) and
#   tail-stamps.patch,
#   git show HEAD:gpu/mbconv/11c_fused_store.cu | sed 's#11c_fused_store#11q_store_before#g' > gpu/mbconv/11q_store_before.cu
# 1. a partial build (a4862b1's filter keeps gpu/lib/): softmax and 11c, 11q only; the convfirst
#    sweep must skip with the partial build's reason, the mbconv sweep run 11c and 11q;
# 2. 11c and 11q at the GPU test table; the bench of both at C = 80 @ 14² (one process);
# 3. ncu, C = 80 @ 14²: 11q's pass 1 (mbconv_tile_kernel, no tail) and 11c's pass 1 with its tail
#    (mbconv_store_gate_kernel), the L2 natural and flushed: what the tail costs inside the kernel;
#    then the tail's steps stamped (tail-stamps.patch, applied on the host: CONVLAB_PHASE_STAMPS);
# 4. the block scripts on bench/torch_blocks.py (uncommitted until they pass here), one small
#    shape each with the agreement check against convlab's CPU rungs, in the time left.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-575}  # the measurement first, then the tests that make it count, while budgets are small
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+tail-stamps+torch-blocks
CALL_GPU_ONLY='gpu/softmax/|gpu/mbconv/(11c_|11q_)' call_build 420 || { call_finish; exit 4; }
call_ncu_times "mbconv/gpu/11q_store_before/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_tile_kernel
call_ncu_times "mbconv/gpu/11c_fused_store/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_store_gate_kernel
# the tail's steps, stamped (tail-stamps.patch: CONVLAB_PHASE_STAMPS), five launches after the check
CONVLAB_PHASE_STAMPS=1 timeout 40 build-gpu/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=14,C=80,dtype=f16 \
  --reps 5 > $OUT/stamps.txt 2>&1; echo "stamps rc=$?"; grep -E "phases" $OUT/stamps.txt | head -8
call_stage tests 60 --no-bench --only 'GPU rung agrees with the reference on random shapes|softmax/gpu/|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
grep -h "CONVLAB-SKIP" /tmp/call-tests/gpu-tests.log 2>/dev/null | sort -u | head -5
CONVLAB_BENCH_TIMEOUT=40 call_stage bench 50 --no-tests --only 'mbconv/gpu/(11c|11q)_[a-z_]+/n128_14x14_c80_e6_k3_s1_se25_co80_'
tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls ncu-*.csv) && rm -f $OUT/ncu-*.csv
export PYTHONUNBUFFERED=1
left=$((CALL_LIMIT - SECONDS - 10)); echo "torch scripts: ${left}s left"
if ((left > 60)); then
  timeout $((left / 2)) python3 bench/mbconv_torch.py --convlab build-gpu/convlab --shapes '16,14,14,80,6,3,1,0.25,80' \
    --reps 10 --budget-s $((left / 2 - 15)) --out $OUT/mbconv-torch.json > $OUT/torch.log 2>&1
  echo "mbconv_torch rc=$?" | tee -a $OUT/torch.log
  left=$((CALL_LIMIT - SECONDS - 5))
  timeout $left python3 bench/convfirst_torch.py --convlab build-gpu/convlab --shapes '16,14,14,256,1024,256,1' \
    --reps 10 --budget-s $((left - 15)) --no-max-autotune --out $OUT/convfirst-torch.json >> $OUT/torch.log 2>&1
  echo "convfirst_torch rc=$?" | tee -a $OUT/torch.log
  grep -h "agreement\|manual_time\|rc=\|rror" $OUT/torch.log | head -30
fi
call_finish
ls -la "$OUT"
