# Flags for graft's own tests, examples and benchmarks (never for consumers):
# warnings, optional -Werror, optional sanitizers. Link graft::build_options
# PRIVATE. No -march anywhere: graft picks the CPU target at run time.
include_guard(GLOBAL)

add_library(graft_build_options INTERFACE)
add_library(graft::build_options ALIAS graft_build_options)

if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(graft_build_options INTERFACE -Wall -Wextra -Wpedantic)
  if(GRAFT_WERROR)
    target_compile_options(graft_build_options INTERFACE -Werror)
  endif()
elseif(MSVC)
  target_compile_options(graft_build_options INTERFACE /W4 /permissive-)
  if(GRAFT_WERROR)
    target_compile_options(graft_build_options INTERFACE /WX)
  endif()
endif()

if(GRAFT_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "GRAFT_SANITIZE needs GCC or Clang (compiler is ${CMAKE_CXX_COMPILER_ID})")
  endif()
  string(REPLACE "," ";" _graft_sanitizers "${GRAFT_SANITIZE}")
  foreach(_s IN LISTS _graft_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR
        "GRAFT_SANITIZE='${GRAFT_SANITIZE}': unknown sanitizer '${_s}' "
        "(use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _graft_sanitizers AND
     ("address" IN_LIST _graft_sanitizers OR "leak" IN_LIST _graft_sanitizers))
    message(FATAL_ERROR "GRAFT_SANITIZE: thread cannot be combined with address or leak")
  endif()
  set(_graft_san_flags
    -fsanitize=${GRAFT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_compile_options(graft_build_options INTERFACE ${_graft_san_flags})
  target_link_options(graft_build_options INTERFACE ${_graft_san_flags})
  message(STATUS "graft: sanitizers ${GRAFT_SANITIZE} for tests, examples and benchmarks")
endif()
