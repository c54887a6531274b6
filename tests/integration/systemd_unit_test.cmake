# Checks deploy/systemd/log-ingest.service as systemd would read it, installed: `systemd-analyze
# verify` (every key known, every value well formed, the binary executable) must say nothing, and
# `systemd-analyze security` must rate its exposure at most 2.0 ("OK"). ExecStart is pointed at
# the built binary and the example configuration, since neither is installed here. The sysusers.d
# file that makes its user must pass `systemd-sysusers --dry-run`.
#
#   cmake -DANALYZE=... -DSYSUSERS=... -DUNIT=... -DUSERS=... -DLOG_INGEST=... -DCONFIG=...
#         -DWORK=... -P systemd_unit_test.cmake
file(READ "${UNIT}" text)
string(REPLACE "/usr/local/bin/log-ingest" "${LOG_INGEST}" text "${text}")
string(REPLACE "/etc/log-ingest/log-ingest.yaml" "${CONFIG}" text "${text}")
file(MAKE_DIRECTORY "${WORK}")
set(unit "${WORK}/log-ingest.service")
file(WRITE "${unit}" "${text}")

execute_process(COMMAND "${ANALYZE}" verify --man=no "${unit}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
  message(FATAL_ERROR "systemd-analyze verify ${unit} (exit ${status}):\n${out}${err}")
endif()

execute_process(COMMAND "${ANALYZE}" security --offline=true --threshold=20 --no-pager "${unit}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "systemd-analyze security rates ${unit} above 2.0:\n${out}${err}")
endif()
string(REGEX MATCH "Overall exposure level[^\n]*" overall "${out}")
message(STATUS "${overall}")

execute_process(COMMAND "${SYSUSERS}" --dry-run "${USERS}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "systemd-sysusers --dry-run ${USERS} (exit ${status}):\n${out}${err}")
endif()
