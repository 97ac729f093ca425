# cmake -DREADELF=<readelf> -DBINARY=<executable> -P check_no_libhwy.cmake
# Fails if <executable> has a DT_NEEDED entry for libhwy: graft::graft and
# graft::compiled use Highway's headers only.
execute_process(COMMAND "${READELF}" -d "${BINARY}"
  OUTPUT_VARIABLE dynamic ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${BINARY} failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${dynamic}")
if(NOT needed)
  message(FATAL_ERROR "no NEEDED entries in the output of ${READELF} -d ${BINARY}:\n${dynamic}")
endif()
string(REPLACE ";" "\n" needed_text "${needed}")
if(needed_text MATCHES "libhwy")
  message(FATAL_ERROR "${BINARY} needs libhwy at run time:\n${needed_text}")
endif()
message(STATUS "${BINARY}: no libhwy among\n${needed_text}")
