# wave-3k call 5: 10e with T sent in 16-byte blocks (quad_transpose; st.shared.v4 + st.async.v4) against
# 10y = the same kernel before (05c6a0f's 10e: 4-byte stores), tests first, both in one bench process,
# then 10e's phase stamps at C = 256 @ 14²; on an H200 with time left, PyTorch's rows in the same run.
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
cp .scratch/10y.cu gpu/convfirst/10y_fused_cluster_t4.cu
OUT=/tmp/b timeout $((T - 120)) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/(10e|10y)|convfirst: every GPU rung' > /tmp/b/run.log 2>&1
CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape N=128,H=14,C=256,dtype=f16 --reps 0 > /tmp/b/trace.txt 2>&1
CONVLAB_PHASE_STAMPS=1 timeout 30 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape N=128,H=7,C=512,dtype=f16 --reps 0 >> /tmp/b/trace.txt 2>&1
left=$((T - SECONDS))
if grep -q H200 /tmp/b/gpu.txt && [ $left -gt 200 ]; then
  OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1' CONVLAB_TORCH_TIMEOUT=100 \
    CONVLAB_TORCH_BUDGET=80 CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/(10e|10y)' > /tmp/c/run.log 2>&1
else
  OUT=/tmp/c CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 15)) bench/run_gpu.sh --no-tests --only 'convfirst/gpu/(10e|10y)' > /tmp/c/run.log 2>&1
fi
cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/c/bench-gpu.json $OUT/bench.json 2>/dev/null
cat /tmp/b/summary.txt /tmp/c/summary.txt > $OUT/summaries.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log c/logs.tar.gz c/run.log b/gpu.txt
cat $OUT/summaries.txt; grep -v "^variant" /tmp/b/trace.txt | cut -c1-700
python3 - <<'PY'
import json
try:
    rows = json.load(open('/tmp/c/bench-gpu.json'))['benchmarks']
except Exception as e:
    print('no bench json', e); rows = []
for r in rows:
    print(r['name'].split('/')[2][:28].ljust(28), r['name'].split('/')[3][:40].ljust(40), round(r['real_time'], 4), 'cv', round(r.get('cv') or 0, 3))
PY
