# cmake/ConvlabHelpers.cmake — the few functions the top-level CMakeLists uses.

function(convlab_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  # GCC 12 reports hundreds of false "may be used uninitialized" warnings inside
  # its own AVX-512 intrinsics header (_mm512_undefined_*) when Eigen is built
  # with -march=native (GCC bug 105593, fixed in 13): silence that one there.
  # GCC 12 also warns -Wrestrict inside libstdc++'s std::string operator+
  # (GCC bug 105329, fixed in 13): a false positive on plain string building.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized -Wno-restrict>)
  endif()
endfunction()

# A program gets every registered variant (the OBJECT libraries' objects) and the core.
# An OBJECT library's objects reach only the targets that link it directly, so
# the sm_90a one (CMakeLists.txt) is named here too.
function(convlab_add_program name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE convlab_variants convlab_ops)
  if(TARGET convlab_variants_sm90a)
    target_link_libraries(${name} PRIVATE convlab_variants_sm90a)
  endif()
  convlab_warnings(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()

# Baseline variants are named after their library (cpu/gemm/openblas.cpp,
# gpu/conv2d/cudnn.cu): leave out those whose library this machine lacks.
function(convlab_filter_baselines list_var)
  set(kept "")
  foreach(src IN LISTS ${list_var})
    get_filename_component(stem ${src} NAME_WE)
    if(stem IN_LIST CONVLAB_MISSING_BASELINES)
      message(STATUS "convlab: skipping ${src} (${stem} not found)")
    else()
      list(APPEND kept ${src})
    endif()
  endforeach()
  set(${list_var} ${kept} PARENT_SCOPE)
endfunction()

# One CTest test per Catch2 test case (tests/main.cpp registers one case per
# variant at start-up). A GPU case on a machine without a GPU prints
# CONVLAB-SKIP and is counted by CTest as skipped, not passed.
function(convlab_register_tests target)
  include(Catch)
  # TMPDIR: the tests' scratch files stay under the build folder.
  catch_discover_tests(${target}
    PROPERTIES SKIP_REGULAR_EXPRESSION "CONVLAB-SKIP" ENVIRONMENT "TMPDIR=${CMAKE_BINARY_DIR}/test-tmp"
    DISCOVERY_TIMEOUT 60)
endfunction()

# CONVLAB_CUDA_ARCHS with every 90 (90-real, 90-virtual) turned into 90a, for
# the files that use sm_90a's arch-specific instructions (wgmma). Code built
# for 90a runs on compute capability 9.0 only — the H100/H200 this suite
# targets. Entries other than 90 stay as they are: there those files build
# their fallback (the wgmma wrappers trap; gpu::wgmma_unavailable_reason()
# says why, and rung 04's run() throws Unsupported with that message).
# CMake's own `native`, `all` and `all-major` (which CMake accepts only on
# their own) also pass through unchanged and never select 90a, so these files
# get the fallback even on an H100/H200: the function warns then.
function(convlab_sm90a_archs out_var)
  set(archs "")
  foreach(arch IN LISTS CONVLAB_CUDA_ARCHS)
    if(arch MATCHES "^90a?(-real|-virtual)?$")
      string(REGEX REPLACE "^90a?" "90a" arch "${arch}")
    elseif(arch MATCHES "^(native|all|all-major)$")
      message(WARNING
        "convlab: CONVLAB_CUDA_ARCHS=${arch} never selects sm_90a, so the files named *wgmma*.cu and "
        "*cluster*.cu (the Hopper rungs and the wgmma probe) get no sm_90a code and will not run, even on "
        "an H100/H200. To build them, configure with an explicit 90 in CONVLAB_CUDA_ARCHS "
        "(-DCONVLAB_CUDA_ARCHS=90); those files are then built for sm_90a.")
    endif()
    list(APPEND archs "${arch}")
  endforeach()
  set(${out_var} "${archs}" PARENT_SCOPE)
endfunction()
