# graft_add_header_test(<target> [SUBDIR <dir>] [LINK] HEADERS <paths relative to include/>...)
#
# Proves every listed header compiles on its own: one generated TU per header
# containing only `#include <header>`, all built into <target>: an OBJECT library, or
# with LINK an executable (a generated main added), which also proves that the TUs link
# together (in header-only mode: no non-inline definition in a header). Generated
# sources go to <binary dir>/<SUBDIR> (default header_tests).
# Model: boostorg/hana cmake/TestHeaders.cmake (add_header_test).
include_guard(GLOBAL)

function(graft_add_header_test target)
  cmake_parse_arguments(ARG "LINK" "SUBDIR" "HEADERS" ${ARGN})
  if(NOT ARG_SUBDIR)
    set(ARG_SUBDIR header_tests)
  endif()
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${ARG_SUBDIR}")
  set(sources "")
  set(files "")
  foreach(header IN LISTS ARG_HEADERS)
    string(REGEX REPLACE "\\.[^.]*$" ".cpp" rel "${header}")
    list(APPEND files "${gen_dir}/${rel}" "#include <${header}>\n")
  endforeach()
  if(ARG_LINK)
    # No ';' in the content: list() would split it into two elements.
    list(APPEND files "${gen_dir}/header_test_main.cpp" "int main() {}\n")
  endif()
  while(files)
    list(POP_FRONT files source content)
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
  endwhile()
  if(ARG_LINK)
    add_executable(${target} ${sources})
  else()
    add_library(${target} OBJECT ${sources})
  endif()
endfunction()
