# The next session's first call (written in wave-3i, not run): on the H200 only (the goals are H200
# figures; an H100's rows are not filed), the filing run of every store-plan rung with PyTorch's
# MBConv rows in the same run (a budget that reaches the graph mode), 11q (11c without the
# three-CTA stream) as the same-run baseline of that form, then lesson 10's pair (10e and PyTorch's
# ConvFirst at C = 256 @ 14² and C = 512 @ 7²) if time is left. Before it: git rev-parse --short HEAD
# > .scratch/rev; copy this file to .scratch/call.sh. About 430 s for the first part on a cold
# machine (build ≈ 190 s), 120–150 s for the pair.
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b /tmp/c
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
if ! grep -q H200 /tmp/b/gpu.txt; then
  # An H100: nothing to file; the stream kernel's source profile at C = 80 @ 14² instead (11c).
  mkdir -p /tmp/p
  timeout $((T - 200)) bench/run_gpu.sh --no-tests --no-bench > /tmp/b/run.log 2>&1
  OUT=/tmp/p timeout $((T - SECONDS - 15)) bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 mbconv_project_stream_kernel > /tmp/p/pass2.log 2>&1
  cp /tmp/p/source-*.tar.gz $OUT/ 2>/dev/null
  tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/run.log b/gpu.txt p/pass2.log
  for f in /tmp/p/source-*.tar.gz; do tar -xzOf $f ./stalls.txt | head -14; tar -xzOf $f ./hot.txt | head -50; done
  exit 0
fi
sed 's/11c_fused_store/11q_store_two_ctas/g; s/run_store_plan<false, false, true, true, true, true>/run_store_plan<false, false, true, true, true>/' \
  gpu/mbconv/11c_fused_store.cu > gpu/mbconv/11q_store_two_ctas.cu
OUT=/tmp/b CONVLAB_BENCH_TIMEOUT=120 CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_TIMEOUT=150 CONVLAB_TORCH_BUDGET=130 \
  timeout $((T - 130)) bench/run_gpu.sh --torch --only 'random shapes|mbconv/gpu/(11b|11c|11e|11h|11i|11q)' > /tmp/b/run.log 2>&1
left=$((T - SECONDS)); [ $left -gt 110 ] && OUT=/tmp/c CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' CONVLAB_TORCH_TIMEOUT=100 CONVLAB_TORCH_BUDGET=80 \
  CONVLAB_BENCH_TIMEOUT=60 timeout $((left - 10)) bench/run_gpu.sh --no-tests --torch --only 'convfirst/gpu/10e' > /tmp/c/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench.json; cp /tmp/b/gpu-tests.xml $OUT/ 2>/dev/null; cp /tmp/b/summary.txt $OUT/summaries.txt
cp /tmp/c/bench-gpu.json $OUT/pair-bench.json 2>/dev/null; cp /tmp/c/summary.txt $OUT/pair-summary.txt 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log c/logs.tar.gz c/run.log
cat $OUT/summaries.txt $OUT/pair-summary.txt
# After it: drop 11q's rows (a comparison copy, not a rung), e.g.
#   python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['benchmarks']=[b for b in d['benchmarks']
#     if '/11q_' not in b['name']]; json.dump(d, open(sys.argv[2], 'w'), indent=1)" bench.json filed.json
# then file the rows (python3 bench/merge_bench_json.py --into bench/results/h200/bench-gpu.json
# --source LABEL filed.json, and pair-bench.json), regenerate the lesson tables
# (scripts/lesson_tables.py), and mend the README text that says "has run on an H100 only".
