# lead-wave3y call 5 (any card, ≈ 250 s on an H100): 11c's three kernels (pass 1, the SE gate, the
# stream) timed under Nsight Compute with the L2 as the block leaves it (--cache-control none)
# and flushed before each kernel (--cache-control all, ncu's default and every earlier figure),
# at C = 80 @ 14², C = 40 @ 28² and C = 24 @ 56². One pass per kernel (three metrics), so the
# first and only pass sees the natural L2. The bench flushes the L2 before each repetition of
# the block, so "natural" is: pass 1 after a flush, the gate after pass 1, the stream after the
# gate. Lesson 11's NOTES, wave-3y, has the prediction.
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-330}
call_build 250 || exit 4
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for shape in n128_14x14_c80_e6_k3_s1_se25_co80 n128_28x28_c40_e6_k3_s1_se25_co40 n128_56x56_c24_e6_k3_s1_se25_co24; do
  for cc in none all; do
    left=$((CALL_LIMIT - SECONDS - 5))
    ((left < 20)) && { echo "skipped $shape $cc: ${left}s left"; continue; }
    ((left > 60)) && left=60
    timeout $left "$ncu" --cache-control $cc --clock-control none \
      --kernel-name regex:'mbconv_tile_kernel|se_gate_kernel|mbconv_project_stream_kernel' \
      --launch-skip 6 --launch-count 6 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      --csv build-gpu/convlab_bench --benchmark_filter="^mbconv/gpu/11c_fused_store/${shape}_silu_f16" \
      --benchmark_min_time=0.01s > "$OUT/ncu-$shape-$cc.csv" 2>&1
    echo "$shape $cc: status $?"
    grep -E 'gpu__time_duration|dram__bytes' "$OUT/ncu-$shape-$cc.csv" | awk -F'","' '{print substr($5,1,40)" | "$(NF-2)" | "$NF}'
  done
done
tar -czf "$OUT/ncu.tar.gz" -C "$OUT" $(cd "$OUT" && ls ncu-*.csv) && rm -f "$OUT"/ncu-*.csv
