# Installs the build in BUILD_DIR into WORK_DIR/prefix, then builds and runs the consumer project
# against it with find_package(conveyor). Any failing step fails the test with its output.
function(run_step description)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${description} failed (${result}):\n${output}")
  endif()
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)

run_step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run_step("configure the consumer"
  ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build} -G ${GENERATOR}
    -D CMAKE_CXX_COMPILER=${CXX_COMPILER}
    -D CMAKE_PREFIX_PATH=${prefix}
    "-D CMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-D CMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run_step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run_step("run the consumer" ${consumer_build}/consumer)
if(NOT step_output MATCHES "conveyor ${EXPECTED_VERSION}: ok")
  message(FATAL_ERROR "unexpected consumer output:\n${step_output}")
endif()
message(STATUS "${step_output}")
