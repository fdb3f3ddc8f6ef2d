# wave-3r call 4: source profiles (bench/profile_source.sh) at C = 256 @ 14² of the conv ahead with
# its taps once a tile (10z, taps-once-on-conv-ahead.patch on conv-ahead.patch) and of main's 10e
# (10y = HEAD's file), in one call: where the taps-once form's remaining +6 % goes.
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+conv-ahead
mkdir -p /tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader
git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
OUT=/tmp/b timeout 280 bench/run_gpu.sh --no-tests --no-bench > /tmp/b/run.log 2>&1; tail -4 /tmp/b/summary.txt
OUT=$OUT timeout 100 bash bench/profile_source.sh convfirst/gpu/10z_fused_cluster_taps_once N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
OUT=$OUT timeout 100 bash bench/profile_source.sh convfirst/gpu/10y_fused_cluster_before N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
cp /tmp/b/summary.txt $OUT/build-summary.txt
ls -la $OUT
