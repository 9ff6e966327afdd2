# Runs EXE with ARGS (a ;-list), checks its exit code is CODE and its output matches REGEX.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code STREQUAL "${CODE}")
  message(FATAL_ERROR "exit code ${code}, expected ${CODE}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match \"${REGEX}\"\nstdout:\n${out}\nstderr:\n${err}")
endif()
