# Shared by the consumer projects tests/cmake_import/project and
# tests/cmake_add_subdirectory/project.
#
# graft_add_consumer(<name> <graft target> [COMPILED])
#   Builds tests/consumer_main.cpp as executable <name> linked with <graft target>
#   (graft::graft, or graft::compiled with COMPILED) and registers CTest test <name>.
#   On ELF platforms also test <name>.no_libhwy: the binary, linked with --no-as-needed,
#   has no DT_NEEDED entry for libhwy (graft uses Highway's headers only).
set(_graft_consumer_dir "${CMAKE_CURRENT_LIST_DIR}")

set(GRAFT_READELF "")
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND CMAKE_SYSTEM_NAME MATCHES "Linux|BSD")
  if(CMAKE_READELF)  # set by project() on ELF platforms
    set(GRAFT_READELF "${CMAKE_READELF}")
  else()
    find_program(GRAFT_READELF_PROGRAM readelf)
    if(GRAFT_READELF_PROGRAM)
      set(GRAFT_READELF "${GRAFT_READELF_PROGRAM}")
    endif()
  endif()
endif()

function(graft_add_consumer name lib)
  cmake_parse_arguments(ARG "COMPILED" "" "" ${ARGN})
  add_executable(${name} "${_graft_consumer_dir}/consumer_main.cpp")
  target_link_libraries(${name} PRIVATE ${lib})
  if(ARG_COMPILED)
    target_compile_definitions(${name} PRIVATE GRAFT_CONSUMER_EXPECT_COMPILED)
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${name} PRIVATE -Wall -Wextra)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(GRAFT_READELF)
    # --no-as-needed: a library on the link line is recorded even if unused, so the
    # check below sees what graft's targets put on the link line.
    target_link_options(${name} PRIVATE LINKER:--no-as-needed)
    add_test(NAME ${name}.no_libhwy
      COMMAND "${CMAKE_COMMAND}" "-DREADELF=${GRAFT_READELF}" "-DBINARY=$<TARGET_FILE:${name}>"
              -P "${_graft_consumer_dir}/check_no_libhwy.cmake")
  endif()
endfunction()
