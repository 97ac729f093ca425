# graft_add_compile_fail_test(<name> <source> [MATCHES <regex>] [DEFINITIONS <defs>...])
#
# Registers CTest test <name> that builds <source> (an OBJECT library kept out
# of `all`) and passes only if that build fails. With MATCHES the build output
# must also contain <regex>, e.g. the static_assert message, so the test fails
# if the source breaks for an unrelated reason. Model: Eigen failtest/.
include_guard(GLOBAL)

function(graft_add_compile_fail_test name source)
  cmake_parse_arguments(ARG "" "MATCHES" "DEFINITIONS" ${ARGN})
  string(MAKE_C_IDENTIFIER "graft_compile_fail_${name}" target)
  add_library(${target} OBJECT EXCLUDE_FROM_ALL "${source}")
  target_link_libraries(${target} PRIVATE graft::graft graft::build_options)
  # Compiled mode (declarations only): the static_asserts under test are in templates, which
  # both modes compile alike, and the TU skips parsing every non-template definition.
  target_compile_definitions(${target} PRIVATE GRAFT_COMPILED_LIB)
  if(ARG_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINITIONS})
  endif()
  set_target_properties(${target} PROPERTIES EXCLUDE_FROM_DEFAULT_BUILD ON)
  add_test(NAME ${name}
    COMMAND "${CMAKE_COMMAND}" --build "${PROJECT_BINARY_DIR}"
            --target ${target} --config $<CONFIG>)
  # Builds of the same tree must not run concurrently. The lock runs them one after another:
  # COST starts them first, so that chain (~70 s) overlaps the other tests under ctest -j
  # instead of running alone at the end.
  set_tests_properties(${name} PROPERTIES
    LABELS compile_fail RESOURCE_LOCK graft_build_tree COST 100)
  if(ARG_MATCHES)
    # A regex decides pass/fail on its own; a clean build never prints the
    # compiler's diagnostic, so a match implies the build failed.
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${ARG_MATCHES}")
  else()
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()
