# lead-wave3z call 2 (any card), for the last ≈ 290 s of the budget: only the first step of
# call1.sh, the source profile of 11c's stream at C = 80 @ 14² with the natural L2
# (CONVLAB_NCU_CACHE=none), after a build of the convlab program alone (not the tests or the
# bench), in the time the build leaves. Prediction: lesson 11's NOTES, wave-3z.
LIMIT=${CALL_BUDGET:-250}
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVLAB_CUDA=ON -DCONVLAB_CUDA_ARCHS=90 > "$OUT/build.log" 2>&1 &&
  timeout $((LIMIT - 40)) ninja -C build-gpu convlab >> "$OUT/build.log" 2>&1 || { echo "build: not finished at ${SECONDS}s"; tail -5 "$OUT/build.log"; exit 4; }
echo "built at ${SECONDS}s"
left=$((LIMIT - SECONDS - 5))
CONVLAB_NCU_CACHE=none timeout $left bench/profile_source.sh mbconv/gpu/11c_fused_store N=128,H=14,C=80,dtype=f16 mbconv_project_stream_kernel
echo "profile: status $? at ${SECONDS}s"
ls -la "$OUT"
