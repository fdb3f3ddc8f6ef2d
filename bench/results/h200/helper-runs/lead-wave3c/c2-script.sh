export CONVLAB_GIT_REV=$(cat .scratch/rev); mkdir -p /tmp/p; S=N=128,H=56,C=24,dtype=f16
OUT=/tmp/p timeout 100 bench/profile_source.sh mbconv/gpu/11c_fused_store $S mbconv_tile_kernel
OUT=/tmp/p timeout 100 bench/profile_source.sh mbconv/gpu/11s_store_stream $S mbconv_project_stream_kernel
OUT=/tmp/p timeout 90 bench/profile_source.sh mbconv/gpu/11c_fused_store $S mbconv_project_kernel
OUT=/tmp/p timeout 90 bench/profile_source.sh mbconv/gpu/11l_fused_store_lean $S mbconv_tile_kernel
# (all four ran into their timeouts: nothing came back)
