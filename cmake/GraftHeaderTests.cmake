# graft_add_header_test(<target> BASE_DIR <include dir> HEADERS <paths relative to BASE_DIR>...)
#
# Proves every listed header compiles on its own: one generated TU per header
# containing only `#include <header>`, all built into the OBJECT library
# <target>. Model: boostorg/hana cmake/TestHeaders.cmake (add_header_test).
include_guard(GLOBAL)

function(graft_add_header_test target)
  cmake_parse_arguments(ARG "" "" "HEADERS" ${ARGN})
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/header_tests")
  set(sources "")
  foreach(header IN LISTS ARG_HEADERS)
    string(REGEX REPLACE "\\.[^.]*$" ".cpp" rel "${header}")
    set(source "${gen_dir}/${rel}")
    set(content "#include <${header}>\n")
    # Rewrite only on change so an unchanged configure does not force rebuilds.
    if(EXISTS "${source}")
      file(READ "${source}" old)
    else()
      set(old "")
    endif()
    if(NOT old STREQUAL content)
      file(WRITE "${source}" "${content}")
    endif()
    list(APPEND sources "${source}")
  endforeach()
  add_library(${target} OBJECT ${sources})
endfunction()
