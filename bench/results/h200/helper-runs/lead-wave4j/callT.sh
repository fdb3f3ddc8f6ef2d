# lead-wave4j call T: the first GPU run of the block scripts on bench/torch_blocks.py (ecc7ec7,
# checked on the host with a CPU torch only), on whichever card comes when no H200 does. Needs
# ≈ 300 s of budget. A partial build (gpu/lib/ only: the scripts' agreement check runs convlab's
# CPU reference), then each script at one small shape: the agreement with convlab, then eager and
# Inductor rows in the suite's schema. Nothing here is a filed row.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-290}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
CALL_GPU_ONLY='gpu/lib/' call_build 170 || { call_finish; exit 4; }
export PYTHONUNBUFFERED=1
left=$((CALL_LIMIT - SECONDS - 10)); echo "torch scripts: ${left}s left"
timeout $((left / 2)) python3 bench/mbconv_torch.py --convlab build-gpu/convlab --shapes '16,14,14,80,6,3,1,0.25,80' \
  --reps 10 --budget-s $((left / 2 - 15)) --out $OUT/mbconv-torch.json > $OUT/torch.log 2>&1
echo "mbconv_torch rc=$?" | tee -a $OUT/torch.log
left=$((CALL_LIMIT - SECONDS - 5))
timeout $left python3 bench/convfirst_torch.py --convlab build-gpu/convlab --shapes '16,14,14,256,1024,256,1' \
  --reps 10 --budget-s $((left - 15)) --no-max-autotune --out $OUT/convfirst-torch.json >> $OUT/torch.log 2>&1
echo "convfirst_torch rc=$?" | tee -a $OUT/torch.log
grep -h "agreement\|rc=\|rror" $OUT/torch.log | head -30
for f in $OUT/mbconv-torch.json $OUT/convfirst-torch.json; do [[ -f $f ]] && python3 bench/bench_rows.py $f; done
gzip -f $OUT/build.log
ls -la "$OUT"
