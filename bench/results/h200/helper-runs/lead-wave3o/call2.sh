# Call 2 (follows call 1 on the warm machine: build-gpu/convlab built there). PyTorch's rows at the
# goal shapes of lessons 10 and 11, timed with the head start (the scripts' default) and without it
# (--no-head-start, as every filed PyTorch row was timed), each script once per method, one process.
set -x
T=${CALL_LIMIT:-400}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/q
nvidia-smi --query-gpu=name --format=csv,noheader | tee /tmp/q/gpu.txt
conv=""
[[ -x build-gpu/convlab ]] && conv="--convlab build-gpu/convlab"
CF=${CF:-'128,14,14,256,1024,256,1;128,7,7,512,2048,512,1'}
MB=${MB:-'128,28,28,40,6,3,1,0.25,40;128,14,14,80,6,3,1,0.25,80;128,14,14,112,6,3,1,0.25,112'}
for m in head flush; do
  flag=""; [[ $m == flush ]] && flag=--no-head-start
  PYTHONUNBUFFERED=1 timeout ${TS:-75} python3 bench/convfirst_torch.py $conv $flag --no-max-autotune --budget-s ${BS:-62} \
    --shapes "$CF" --out $OUT/convfirst-torch-$m.json > /tmp/q/convfirst-$m.log 2>&1
  PYTHONUNBUFFERED=1 timeout ${TS:-75} python3 bench/mbconv_torch.py $conv $flag --budget-s ${BS:-62} \
    --shapes "$MB" --out $OUT/mbconv-torch-$m.json > /tmp/q/mbconv-$m.log 2>&1
done
tar -czf $OUT/logs-call2.tar.gz -C /tmp q
grep -h "ms (cv" /tmp/q/*.log
python3 bench/bench_rows.py $OUT/*-torch-*.json
python3 - $OUT/*-torch-*.json <<'PY'
import json, sys
for p in sys.argv[1:]:
    for b in json.load(open(p)).get("benchmarks", []):
        print(p.rsplit("/", 1)[-1][:-5], b["name"].split("/")[2], b.get("label", ""), "%.4f" % b.get("real_time", 0),
              "cv %.3f" % b.get("cv", 0), "late %d" % b.get("late", -1), "head %.2f" % b.get("head_start_ms", -1),
              "host %.3f" % b.get("host_ms", -1), b.get("error_message", ""))
PY
