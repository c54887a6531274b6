# Runs every variant briefly with --check (a goofup in a sound variant fails), then checks that
# the chart was written and is well-formed XML.
file(REMOVE "${SVG}")
execute_process(
  COMMAND "${LOCKTEST}" --loops 40 --time-scale 0.01 --check --svg "${SVG}"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "locktest --check failed with status ${status}")
endif()
if(NOT EXISTS "${SVG}")
  message(FATAL_ERROR "locktest did not write ${SVG}")
endif()
file(READ "${SVG}" chart)
if(NOT chart MATCHES "^<\\?xml" OR NOT chart MATCHES "</svg>\n$")
  message(FATAL_ERROR "${SVG} is not a complete SVG document")
endif()
execute_process(COMMAND "${XMLLINT}" --noout "${SVG}" RESULT_VARIABLE xml_status)
if(NOT xml_status EQUAL 0)
  message(FATAL_ERROR "${SVG} is not well-formed XML")
endif()
message(STATUS "locktest short run: no goofup in a sound variant, chart well-formed")
