#!/usr/bin/env bash
# wave-2r call 3: the wgmma rate probe; 11f/11g at 7² with PyTorch again (call 2's PyTorch rows were noisy); 11g stamps with the SE split
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b
CONVLAB_TORCH_SCRIPTS=mbconv CONVLAB_TORCH_SHAPES="128,7,7,192,6,3,1,0.25,192;128,7,7,192,6,5,1,0.25,192;128,7,7,192,6,3,1,0.25,320" \
  OUT=/tmp/b bench/run_gpu.sh --no-tests --torch --only 'mbconv/gpu/11[fg].*7x7_c192' > $OUT/run.log 2>&1
cp /tmp/b/bench-gpu.json $OUT/bench-11fg-torch.json; cat /tmp/b/summary.txt > $OUT/summaries.txt
ninja -C build-gpu convlab_wgmma_rate >> $OUT/run.log 2>&1
build-gpu/convlab_wgmma_rate --json $OUT/wgmma-rate.json > $OUT/wgmma-rate.txt 2>&1; echo "rc $?" >> $OUT/wgmma-rate.txt
build-gpu/convlab_wgmma_rate --steps 4 --chains 256 >> $OUT/wgmma-rate.txt 2>&1; echo "rc $?" >> $OUT/wgmma-rate.txt
for s in "N=128,H=7,C=192,dtype=f16" "N=128,H=7,C=192,k=5,dtype=f16" "N=128,H=7,C=192,C_out=320,dtype=f16"; do
  echo "== $s"; CONVLAB_PHASE_STAMPS=1 build-gpu/convlab run mbconv/gpu/11g_fused_image_wgmma --shape $s --reps 2 2>&1 | grep phases
done > $OUT/stamps.txt 2>&1
cat $OUT/wgmma-rate.txt $OUT/stamps.txt $OUT/summaries.txt
grep -E "manual_time:" $OUT/run.log
