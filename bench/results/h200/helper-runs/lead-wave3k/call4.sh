# wave-3k call 4: 10e's phase stamps (per tile: conv and T, chunk loop, y; %globaltimer) beside the
# chunk trace, at C = 256 @ 14² and 28², and the SM clock under 10e's load (nvidia-smi, every 20 ms).
set -x
T=${CALL_LIMIT:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/b/gpu.txt
OUT=/tmp/b timeout $((T - 200)) bench/run_gpu.sh --no-bench --only 'convfirst/gpu/10e|convfirst: every GPU rung' > /tmp/b/run.log 2>&1
for shape in N=128,H=14,C=256,dtype=f16 N=128,H=28,C=256,dtype=f16; do
  echo "== $shape" >> /tmp/b/trace.txt
  CONVLAB_PHASE_STAMPS=1 CONVLAB_CHUNK_TRACE=1 timeout 60 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape $shape --reps 0 >> /tmp/b/trace.txt 2>&1
done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader -lms 20 > /tmp/b/clocks.txt 2>&1 &
smi=$!
timeout 60 build-gpu/convlab run convfirst/gpu/10e_fused_cluster --shape N=128,H=14,C=256,dtype=f16 --reps 20000 > /tmp/b/clock-run.txt 2>&1
kill $smi
cp /tmp/b/trace.txt /tmp/b/gpu-tests.xml /tmp/b/clocks.txt /tmp/b/clock-run.txt /tmp/b/summary.txt $OUT/ 2>/dev/null
tar -czf $OUT/logs.tar.gz -C /tmp --ignore-failed-read b/logs.tar.gz b/run.log b/gpu.txt
cat /tmp/b/summary.txt; cut -c1-400 /tmp/b/trace.txt | head -70; cut -c1-200 /tmp/b/clock-run.txt | tail -3
awk -F', ' '{print $2}' /tmp/b/clocks.txt | sort | uniq -c | sort -rn | head -8
