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
set(CONVLAB_MISSING_REASONS "")   # "name: why", one per missing baseline

find_library(OPENBLAS_LIBRARY NAMES openblas)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas-pthread openblas)
if("openblas" IN_LIST CONVLAB_HIDE_BASELINES)
  list(APPEND CONVLAB_MISSING_BASELINES openblas)
  list(APPEND CONVLAB_MISSING_REASONS "openblas: hidden by CONVLAB_HIDE_BASELINES")
elseif(OPENBLAS_LIBRARY AND OPENBLAS_INCLUDE_DIR)
  add_library(convlab_openblas INTERFACE)
  target_link_libraries(convlab_openblas INTERFACE ${OPENBLAS_LIBRARY})
  target_include_directories(convlab_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_compile_definitions(convlab_openblas INTERFACE CONVLAB_HAVE_OPENBLAS=1)
  list(APPEND CONVLAB_BASELINE_LIBS convlab_openblas)
else()
  list(APPEND CONVLAB_MISSING_BASELINES openblas)
  list(APPEND CONVLAB_MISSING_REASONS "openblas: no libopenblas or cblas.h (Debian: libopenblas-dev)")
endif()

# oneDNN's CMake config calls find_package(OpenCL REQUIRED) when the library
# was built with its OpenCL GPU runtime (Debian's is), and that REQUIRED would
# stop our configure. So read the config first: if it needs OpenCL and OpenCL's
# development files are absent, report oneDNN missing instead of failing.
# CONVLAB_HIDE_BASELINES (a list: openblas;onednn;cudnn) pretends a baseline
# is absent; tests/install/ uses it to prove the build survives without them.
set(CONVLAB_HIDE_BASELINES "" CACHE STRING "Baselines to treat as missing (openblas;onednn;cudnn), for testing")
macro(convlab_baseline_missing name why)
  list(APPEND CONVLAB_MISSING_BASELINES ${name})
  list(APPEND CONVLAB_MISSING_REASONS "${name}: ${why}")
endmacro()

set(_want_onednn ON)
if("onednn" IN_LIST CONVLAB_HIDE_BASELINES)
  set(_want_onednn OFF)
  convlab_baseline_missing(onednn "hidden by CONVLAB_HIDE_BASELINES")
endif()
if(_want_onednn)
  find_file(CONVLAB_DNNL_CONFIG dnnl-config.cmake
            PATH_SUFFIXES lib/x86_64-linux-gnu/cmake/dnnl lib/cmake/dnnl lib64/cmake/dnnl)
  if(NOT CONVLAB_DNNL_CONFIG)
    convlab_baseline_missing(onednn "no dnnl-config.cmake (Debian: libdnnl-dev)")
  else()
    file(STRINGS ${CONVLAB_DNNL_CONFIG} _dnnl_ocl REGEX "DNNL_GPU_RUNTIME \"OCL\"")
    set(_dnnl_usable ON)
    if(_dnnl_ocl)
      find_package(OpenCL QUIET)
      if(NOT OpenCL_FOUND)
        set(_dnnl_usable OFF)
        convlab_baseline_missing(onednn "its CMake config needs OpenCL development files (Debian: ocl-icd-opencl-dev opencl-headers)")
      endif()
    endif()
    if(_dnnl_usable)
      find_package(dnnl CONFIG QUIET)
      if(dnnl_FOUND)
        list(APPEND CONVLAB_BASELINE_LIBS DNNL::dnnl)
      else()
        convlab_baseline_missing(onednn "find_package(dnnl) failed")
      endif()
    endif()
  endif()
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
  if("cudnn" IN_LIST CONVLAB_HIDE_BASELINES)
    list(APPEND CONVLAB_MISSING_BASELINES cudnn)
    list(APPEND CONVLAB_MISSING_REASONS "cudnn: hidden by CONVLAB_HIDE_BASELINES")
  elseif(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    add_library(convlab_cudnn INTERFACE)
    target_include_directories(convlab_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(convlab_cudnn INTERFACE ${CUDNN_LIBRARY})
    list(APPEND CONVLAB_BASELINE_LIBS convlab_cudnn)
  else()
    list(APPEND CONVLAB_MISSING_BASELINES cudnn)
    list(APPEND CONVLAB_MISSING_REASONS "cudnn: no cudnn.h or libcudnn (the CUDA image's cuDNN 9, or pip nvidia-cudnn-cu13)")
  endif()
endif()

message(STATUS "convlab: CUDA ${CONVLAB_CUDA} (archs ${CONVLAB_CUDA_ARCHS}); missing baselines: ${CONVLAB_MISSING_BASELINES}")
foreach(_reason IN LISTS CONVLAB_MISSING_REASONS)
  message(STATUS "convlab: baseline missing, its variants left out: ${_reason}")
endforeach()
