# Finds every dependency ember uses; all come from Debian packages
# (tools/install-deps.sh installs them).
# TBB first, in config mode: RocksDB's package adds a FindTBB module that
# defines no TBB::tbb target.
find_package(TBB CONFIG REQUIRED)
find_package(absl REQUIRED)
find_package(RocksDB REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(Threads REQUIRED)

find_library(XXHASH_LIB xxhash REQUIRED)
add_library(xxhash INTERFACE IMPORTED)
set_target_properties(xxhash PROPERTIES INTERFACE_LINK_LIBRARIES ${XXHASH_LIB})

# CPU GEMM: OpenBLAS through its CBLAS interface.
find_path(EMBER_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas-pthread openblas REQUIRED)
find_library(EMBER_OPENBLAS_LIB NAMES openblas REQUIRED)
include_directories(SYSTEM ${EMBER_CBLAS_INCLUDE})
set(EMBER_BLAS_LIBS ${EMBER_OPENBLAS_LIB})

find_package(OpenMP QUIET)
find_package(BLAS QUIET)
find_package(faiss QUIET)
if(faiss_FOUND)
  set(EMBER_FAISS_LIBS faiss)
endif()

# HDF5's C library (libhdf5-dev), for `ember export --format h5` (PBG's
# checkpoint layout). Optional: without it ember builds, and --format h5
# says it is not built.
option(EMBER_HDF5 "Build export --format h5 where HDF5's C library is found" ON)
set(EMBER_HAVE_HDF5 OFF)
if(EMBER_HDF5)
  find_package(HDF5 COMPONENTS C QUIET)
  if(HDF5_FOUND AND TARGET HDF5::HDF5)
    set(EMBER_HAVE_HDF5 ON)
  endif()
endif()

include(CheckLanguage)
set(EMBER_HAVE_CUDA OFF)
if(EMBER_CUDA)
  # The toolkit's usual home, for machines whose PATH lacks it.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100, H200) machine code, plus its PTX for later chips.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(EMBER_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "ember: CUDA trainer ${EMBER_HAVE_CUDA}, FAISS ${faiss_FOUND}, "
  "HDF5 ${EMBER_HAVE_HDF5} (export --format h5)")
