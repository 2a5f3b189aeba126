# Differential tests (tests/differential/README.md): the three VMs and the lowered
# program must print the outputs of `--vm reference`, on the example programs with
# random inputs (differential_programs) and on random terminating integer programs
# (differential_random). Each prints one line per mismatch with the commands that
# reproduce it and ends with `N passed, M failed`.
#
# The inputs and lowered example programs stay in ${CMAKE_CURRENT_BINARY_DIR}/differential-programs
# for the reproduce commands; failing random programs are saved with their inputs under
# ${CMAKE_BINARY_DIR}/differential-failures/.
#
# Time: a Release build runs both in a few minutes under `ctest -j2` on two cores
# (every program under nine VM configurations: the JIT on, off and compiled
# first, both schedules). The sanitized Debug build of tools/test is far slower (about 17
# minutes for differential_programs at four batch sizes), hence the one-hour
# timeouts; tools/test runs 60 random programs and batches 7 and 1000 there.
# The two cache variables trade coverage for time.
set(AUTOBATCH_DIFFERENTIAL_COUNT 150 CACHE STRING
    "Number of random programs of the differential_random test")
set(AUTOBATCH_DIFFERENTIAL_BATCHES "1,7,64,1000" CACHE STRING
    "Batch sizes of the differential_programs test (comma-separated)")

add_test(NAME differential_programs
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/differential/check_programs.py
          --batches ${AUTOBATCH_DIFFERENTIAL_BATCHES}
          --workdir ${CMAKE_CURRENT_BINARY_DIR}/differential-programs
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

add_test(NAME differential_random
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/differential/random_programs.py
          --count ${AUTOBATCH_DIFFERENTIAL_COUNT} --seed 1
          --failures ${CMAKE_BINARY_DIR}/differential-failures
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

set_tests_properties(differential_programs differential_random PROPERTIES
  ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>"
  LABELS differential
  TIMEOUT 3600)
