# wave-3r call 2: where the conv ahead loses. Tree: main + conv-ahead.patch (10e: pieces behind
# O(r)); 10z = 10e with placement-a-on-conv-ahead.patch (pieces after P(r − 1) retired, before
# O(r) is issued), made before the call; 10y = HEAD's 10e (made here). 1. tests of the three;
# 2. one bench process; 3. source profiles (SASS stalls) of 10e and 10z at C = 256 @ 14².
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-ahead
mkdir -p /tmp/t /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/t/gpu.txt
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
grep -c "kConvAhead" gpu/convfirst/10[eyz]_*.cu
OUT=/tmp/t timeout 260 bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/t/run.log 2>&1
cp /tmp/t/summary.txt $OUT/tests-summary.txt; cp /tmp/t/gpu-tests.xml $OUT/ 2>/dev/null
OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=45 timeout 55 bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y|10z)_' > /tmp/c/run.log 2>&1
cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
OUT=$OUT timeout 100 bash bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
OUT=$OUT timeout 100 bash bench/profile_source.sh convfirst/gpu/10z_fused_cluster_ahead_a N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read t/logs.tar.gz t/run.log t/gpu.txt c/logs.tar.gz c/run.log
cat /tmp/t/summary.txt /tmp/c/summary.txt
python3 bench/bench_rows.py /tmp/c/bench-gpu.json
ls -la $OUT
