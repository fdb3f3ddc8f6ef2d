# lead-wave4k call P (not run): where the gate tail's 6.4–8.2 µs go (lesson 11's NOTES, wave-4k,
# "What the stamps say"): the source profile of 11c's pass 1 with its tail at C = 80 @ 14², the L2
# as the block leaves it. Read lines.txt for se_gate_image's lines (gpu/lib/mbconv_layers.cuh):
# FC2's loop, its barrier, the second sums, the sigmoid and the stores. Reuses build-gpu/ from
# ../lead-wave4j/callF.sh (11c with gate-tail-on.patch) on the same warm machine, after
# ../lead-wave4g/callN.sh; any card. Needs about 180 s of budget.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
[[ -x build-gpu/convlab ]] || { echo "no build-gpu/: callF.sh did not run on this machine"; exit 4; }
T=${CALL_BUDGET:-170}
CONVLAB_NCU_CACHE=none timeout $((T - 10)) bench/profile_source.sh mbconv/gpu/11c_fused_store \
  N=128,H=14,C=80,dtype=f16 mbconv_store_gate_kernel
echo "profile: status $?"
ls -la "$OUT"
