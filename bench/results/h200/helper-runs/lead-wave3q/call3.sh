# wave-3q call 3: two forms of 10e's conv against main's 10e, in one process. Before the call,
# on main: git apply conv-one-pass.patch (10e = A) and the layout header and host test of
# conv-by-group-2.patch (t_word_coord); the call builds 10y = HEAD's 10e and 10z = HEAD's 10e with
# conv-by-group-2.patch (B). 1. tests of 10e, 10y, 10z and the convfirst sweep; 2. one bench
# process of the three (PyTorch beside them on an H200); 3. compute-sanitizer on 10e and 10z.
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-one-pass
P=bench/results/h200/helper-runs/lead-wave3q
mkdir -p /tmp/t /tmp/c /tmp/s
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
TORCH=; grep -q H200 /tmp/t/gpu.txt && TORCH=--torch
git show HEAD:gpu/convfirst/10e_fused_cluster.cu > gpu/convfirst/10y_fused_cluster_before.cu
cp gpu/convfirst/10y_fused_cluster_before.cu gpu/convfirst/10z_fused_cluster_groups.cu
sed 's#gpu/convfirst/10e_fused_cluster.cu#gpu/convfirst/10z_fused_cluster_groups.cu#g' $P/conv-by-group-2.patch |
  git apply --include=gpu/convfirst/10z_fused_cluster_groups.cu && echo 10Z-IS-B
sed -i 's#10e_fused_cluster#10y_fused_cluster_before#g' gpu/convfirst/10y_fused_cluster_before.cu
sed -i 's#10e_fused_cluster#10z_fused_cluster_groups#g' gpu/convfirst/10z_fused_cluster_groups.cu
grep -c "kConvPairs\|L::kGroups\]\[4\]" gpu/convfirst/10[eyz]_*.cu
OUT=/tmp/t timeout 270 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y|10z)_|convfirst: every GPU rung' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=70 CONVLAB_TORCH_BUDGET=60 CONVLAB_BENCH_TIMEOUT=50 timeout $([ -n "$TORCH" ] && echo 125 || echo 60) \
  bench/run_gpu.sh --no-tests $TORCH --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
left=$((T - SECONDS))
[ $left -gt 35 ] && OUT=/tmp/s CONVLAB_SANITIZE_TESTS='convfirst/gpu/10e_fused_cluster,convfirst/gpu/10z_fused_cluster_groups' \
  CONVLAB_SANITIZE_TIMEOUT=$((left - 15)) CONVLAB_SANITIZE_TEST_TIMEOUT=$((left - 18)) CONVLAB_RACECHECK_FLOP_LIMIT=5e7 \
  CONVLAB_SANITIZE_JOBS=4 timeout $((left - 10)) bench/run_gpu.sh --sanitize-only > /tmp/s/run.log 2>&1
cp /tmp/s/sanitize.log $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log s/run.log s/logs.tar.gz
cat /tmp/t/summary.txt /tmp/c/summary.txt; head -6 /tmp/s/sanitize.log 2>/dev/null
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
