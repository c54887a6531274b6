# Compiles SOURCE (syntax only) and succeeds only if the compiler rejects it with the message
# named on its `// expect: <regex>` line.
file(STRINGS ${SOURCE} expect_line REGEX "^// expect: ")
if(NOT expect_line)
  message(FATAL_ERROR "${SOURCE} has no '// expect: <regex>' line")
endif()
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")

set(include_flags "")
foreach(dir IN LISTS INCLUDES)
  list(APPEND include_flags "-I${dir}")
endforeach()

execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only ${include_flags} ${SOURCE}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not")
endif()
if(NOT output MATCHES "${expected}")
  message(FATAL_ERROR "${SOURCE} failed to compile, but without '${expected}':\n${output}")
endif()
message(STATUS "rejected as expected: ${expected}")
