# wave-3q call 4: source-level profiles (bench/profile_source.sh) of main's code, no patch:
# 10e at C = 256 @ 14² (where its conv's 4.10 µs a tile go), then 11c's pass 1 at C = 24 @ 56².
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)
mkdir -p /tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=/tmp/b timeout 280 bench/run_gpu.sh --no-tests --no-bench > /tmp/b/run.log 2>&1; tail -4 /tmp/b/summary.txt
OUT=$OUT timeout 110 bash bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
OUT=$OUT timeout 90 bash bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=56,C=24,dtype=f16 mbconv_tile_kernel
cp /tmp/b/summary.txt $OUT/build-summary.txt
ls -la $OUT
