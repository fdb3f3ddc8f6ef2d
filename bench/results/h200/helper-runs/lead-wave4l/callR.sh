# lead-wave4l call R (any card): two shorter gate tails (tree-sums.patch, se_gate_tail_image<kTail>)
# against the tail as filed-to-be (11c with gate-tail-on.patch) and the filed 11c (copy 11q), in one
# build and process. Applies tree-sums.patch on the device and makes copies 11r (11c with
# kGateTail = 2: FC1's sum as warp trees, the biases read first) and 11s (kGateTail = 3: FC1's
# products over W1 read flat too). Every lesson-11 GPU test on the four rungs; the bench at the 14²
# inputs (where the tail runs); pass 1 with its tail under ncu at C = 80 @ 14² for 11c, 11r, 11s;
# the tail kernel's source profile (11s) in the time left. Needs about 600 s.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
P=bench/results/h200/helper-runs/lead-wave4l/tree-sums.patch
git apply "$P" 2>/dev/null || patch -p1 < "$P" || { echo "tree-sums.patch did not apply"; exit 5; }
sed 's#11c_fused_store#11r_tree_sums#g; s#, false, true>,#, false, 2>,#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11r_tree_sums.cu
sed 's#11c_fused_store#11s_flat_fc1#g; s#, false, true>,#, false, 3>,#' gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11s_flat_fc1.cu
grep -q ", false, 2>," gpu/mbconv/11r_tree_sums.cu && grep -q ", false, 3>," gpu/mbconv/11s_flat_fc1.cu ||
  { echo "11r, 11s: kGateTail not set"; exit 5; }
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-590}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+gate-tail-on+tree-sums
CALL_GPU_ONLY='gpu/mbconv/(11c_|11q_|11r_|11s_)' call_build 420 || { call_finish; exit 4; }
call_stage tests 50 --no-bench --only 'mbconv/gpu/|mbconv: every GPU rung|mbconv tile|mbconv stream'
CONVLAB_BENCH_TIMEOUT=70 call_stage bench 80 --no-tests --only 'mbconv/gpu/(11c|11q|11r|11s)_[a-z0-9_]+/n128_14x14_'
for r in 11c_fused_store 11s_flat_fc1 11r_tree_sums; do
  call_ncu_times "mbconv/gpu/$r/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16" mbconv_store_gate_kernel
done
tar -czf $OUT/ncu.tar.gz -C $OUT $(cd $OUT && ls ncu-*.csv) && rm -f $OUT/ncu-*.csv
left=$((CALL_LIMIT - SECONDS - 5)); echo "profile: ${left}s left"
((left > 60)) && CONVLAB_NCU_CACHE=none timeout $left bench/profile_source.sh mbconv/gpu/11s_flat_fc1 \
  N=128,H=14,C=80,dtype=f16 mbconv_store_gate_kernel
call_finish
ls -la "$OUT"
