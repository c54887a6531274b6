# Build settings that only the project's own code uses. Nothing here is exported: a consumer of the
# installed package compiles with its own flags.

# Warnings as errors, for the project's own targets only.
add_library(conveyor_warnings INTERFACE)
add_library(conveyor::warnings ALIAS conveyor_warnings)
target_compile_options(conveyor_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Werror>)

# Sanitizers chosen by the preset through CONVEYOR_SANITIZE.
add_library(conveyor_sanitizers INTERFACE)
add_library(conveyor::sanitizers ALIAS conveyor_sanitizers)
if(CONVEYOR_SANITIZE)
  list(JOIN CONVEYOR_SANITIZE "," conveyor_sanitize_list)
  target_compile_options(conveyor_sanitizers INTERFACE
    -fsanitize=${conveyor_sanitize_list} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(conveyor_sanitizers INTERFACE -fsanitize=${conveyor_sanitize_list})
  # A trap in place of each check's report call: a sixth less compile time and a third less code
  # (docs/design/build-and-test-time.md). AddressSanitizer prints the stack of the trap, file:line
  # first, when ASAN_OPTIONS has handle_sigill=1 (the dev test preset's). GCC drops the vptr
  # check, which needs its runtime, without a word; the fuzzers (Clang) keep it.
  if(CONVEYOR_UBSAN_TRAP AND "undefined" IN_LIST CONVEYOR_SANITIZE)
    target_compile_options(conveyor_sanitizers INTERFACE -fsanitize-undefined-trap-on-error)
  endif()
  # Coverage feedback for libFuzzer in every library the fuzzers link.
  if(CONVEYOR_BUILD_FUZZERS)
    target_compile_options(conveyor_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
  endif()
  if("thread" IN_LIST CONVEYOR_SANITIZE)
    target_compile_definitions(conveyor_sanitizers INTERFACE CONVEYOR_TSAN=1)
    # Race reports need file:line and inlined frames, not where each variable lives: without
    # variable tracking GCC compiles the ThreadSanitizer tree about 13% faster.
    target_compile_options(conveyor_sanitizers INTERFACE
      $<$<CXX_COMPILER_ID:GNU>:-fno-var-tracking-assignments>)
  endif()
endif()

# GCC collects its garbage whenever its heap grows by ggc-min-expand percent over ggc-min-heapsize
# (KiB); the defaults suit small machines. With a 1 GiB floor the template-heavy units compile up
# to 13% faster alone (median 8%) for about 0.4 GB more memory per compile job; in CI the optimised
# and ThreadSanitizer builds gained, the ASan build did not (docs/design/build-and-test-time.md).
add_library(conveyor_compile_speed INTERFACE)
target_compile_options(conveyor_compile_speed INTERFACE
  $<$<CXX_COMPILER_ID:GNU>:--param=ggc-min-expand=100 --param=ggc-min-heapsize=1048576>)

# conveyor_project_target(<target>): the settings every target of this project shares.
function(conveyor_project_target target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_link_libraries(${target} PRIVATE
    $<BUILD_INTERFACE:conveyor::warnings>
    $<BUILD_INTERFACE:conveyor::sanitizers>
    $<BUILD_INTERFACE:conveyor_compile_speed>)
endfunction()
