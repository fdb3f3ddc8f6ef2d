# cmake/ConvlabDependencies.cmake — every dependency, found on the system (Debian
# packages here, the image's own on the GPU machine). Nothing is vendored or
# downloaded at build time; `make deps` installs what is missing.

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

# Programs are built where they run (CI, the lent GPU machine), so the host
# code may use every instruction of this CPU: Eigen needs it for AVX2/FMA.
option(CONVLAB_NATIVE "Compile host code with -march=native" ON)
if(CONVLAB_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()

find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(benchmark REQUIRED)
find_package(Catch2 REQUIRED)
list(APPEND CMAKE_MODULE_PATH ${Catch2_DIR})   # Catch.cmake (v2 and v3 both install it there)
if(TARGET Catch2::Catch2WithMain)              # Catch2 v3: we bring our own main
  set(CONVLAB_CATCH_TARGET Catch2::Catch2)
else()                                         # Catch2 v2: header-only
  set(CONVLAB_CATCH_TARGET Catch2::Catch2)
endif()

# ---- CPU baselines (optional: a missing one is reported, its variant skipped) -
set(CONVLAB_BASELINE_LIBS "")
set(CONVLAB_MISSING_BASELINES "")

find_library(OPENBLAS_LIBRARY NAMES openblas)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas-pthread openblas)
if(OPENBLAS_LIBRARY AND OPENBLAS_INCLUDE_DIR)
  add_library(convlab_openblas INTERFACE)
  target_link_libraries(convlab_openblas INTERFACE ${OPENBLAS_LIBRARY})
  target_include_directories(convlab_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_compile_definitions(convlab_openblas INTERFACE CONVLAB_HAVE_OPENBLAS=1)
  list(APPEND CONVLAB_BASELINE_LIBS convlab_openblas)
else()
  list(APPEND CONVLAB_MISSING_BASELINES openblas)
endif()

find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND)
  list(APPEND CONVLAB_BASELINE_LIBS DNNL::dnnl)
else()
  list(APPEND CONVLAB_MISSING_BASELINES onednn)
endif()

# ---- CUDA: on by default wherever nvcc exists, GPU or not ----------------------
include(CheckLanguage)
check_language(CUDA)
set(_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_cuda_default ON)
endif()
option(CONVLAB_CUDA "Build the GPU variants (needs nvcc; no GPU needed to build)" ${_cuda_default})
set(CONVLAB_CUDA_ARCHS "90" CACHE STRING "CUDA architectures to compile for (sm_90 = H100/H200)")

if(CONVLAB_CUDA)
  set(CMAKE_CUDA_ARCHITECTURES ${CONVLAB_CUDA_ARCHS})
  enable_language(CUDA)
  # C++20 by flag: CMake 3.25 (Debian 12) does not know nvcc's CUDA20 dialect.
  # -lineinfo lets compute-sanitizer and ncu point at source lines; it costs no speed.
  set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -std=c++20 -lineinfo")
  if(CONVLAB_NATIVE)
    set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -Xcompiler=-march=native")
  endif()
  find_package(CUDAToolkit REQUIRED)
  list(APPEND CONVLAB_BASELINE_LIBS CUDA::cublas CUDA::cudart)

  # cuDNN: the toolkit's folders, /usr/local, or the Python wheel (nvidia-cudnn-cu13).
  file(GLOB _cudnn_wheel_dirs /opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn
                              /usr/local/lib/python3*/dist-packages/nvidia/cudnn
                              /usr/lib/python3/dist-packages/nvidia/cudnn)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_cudnn_wheel_dirs}
            PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${CUDAToolkit_LIBRARY_DIR} ${_cudnn_wheel_dirs}
               PATH_SUFFIXES lib lib64)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    add_library(convlab_cudnn INTERFACE)
    target_include_directories(convlab_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(convlab_cudnn INTERFACE ${CUDNN_LIBRARY})
    list(APPEND CONVLAB_BASELINE_LIBS convlab_cudnn)
  else()
    list(APPEND CONVLAB_MISSING_BASELINES cudnn)
  endif()
endif()

message(STATUS "convlab: CUDA ${CONVLAB_CUDA} (archs ${CONVLAB_CUDA_ARCHS}); missing baselines: ${CONVLAB_MISSING_BASELINES}")
