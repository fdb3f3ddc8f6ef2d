# lead-wave4i call S2: callS.sh cut to the budget left after eighteen tries (host steps as callS.sh's):
# build; the tail's steps stamped; the tests that make them count; ncu with the L2 as the launches
# before left it only (11q's pass 1 and 11c's pass 1 with its tail); the bench and the block scripts
# only in what time is left.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-340}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+tail-stamps+torch-blocks
CALL_GPU_ONLY='gpu/softmax/|gpu/mbconv/(11c_|11q_)' call_build 260 || { call_finish; exit 4; }
CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=14,C=80,dtype=f16 \
  --reps 5 > $OUT/stamps.txt 2>&1; echo "stamps rc=$?"; grep -E "phases" $OUT/stamps.txt | head -8
call_stage tests 50 --no-bench --only 'GPU rung agrees with the reference on random shapes|softmax/gpu/|mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
grep -h "CONVLAB-SKIP" /tmp/call-tests/gpu-tests.log 2>/dev/null | sort -u | head -5
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for rk in "11q_store_before mbconv_tile_kernel" "11c_fused_store mbconv_store_gate_kernel"; do
  set -- $rk; left=$((CALL_LIMIT - SECONDS - 5)); ((left > 40)) && left=40
  ((left < 15)) && { echo "ncu $1: ${left}s left, not run"; continue; }
  timeout $left "$ncu" --cache-control none --clock-control none --kernel-name "regex:$2" --launch-skip 6 --launch-count 6 \
    --metrics gpu__time_duration.sum --csv build-gpu/convlab_bench \
    --benchmark_filter="^mbconv/gpu/$1/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" --benchmark_min_time=0.01s > $OUT/ncu-$1.csv 2>&1
  echo "ncu $1: status $?"; grep gpu__time_duration $OUT/ncu-$1.csv | awk -F'","' '{v=$NF; gsub(/"/,"",v); print substr($5,1,40) " | " v}'
done
left=$((CALL_LIMIT - SECONDS - 5))
((left > 30)) && CONVLAB_BENCH_TIMEOUT=$((left - 10)) call_stage bench $left --no-tests --only 'mbconv/gpu/(11c|11q)_[a-z_]+/n128_14x14_c80_e6_k3_s1_se25_co80_'
left=$((CALL_LIMIT - SECONDS - 5))
if ((left > 40)); then
  PYTHONUNBUFFERED=1 timeout $left python3 bench/mbconv_torch.py --convlab build-gpu/convlab --shapes '16,14,14,80,6,3,1,0.25,80' \
    --reps 10 --budget-s $((left - 15)) --out $OUT/mbconv-torch.json > $OUT/torch.log 2>&1
  echo "mbconv_torch rc=$?" | tee -a $OUT/torch.log; grep -h "agreement\|manual_time\|rror" $OUT/torch.log | head
fi
(cd $OUT && tar -czf extra.tar.gz --ignore-failed-read ncu-*.csv torch.log mbconv-torch.json 2>/dev/null &&
  rm -f ncu-*.csv torch.log mbconv-torch.json)
call_finish
ls -la "$OUT"
