# Golden suites of the CLI (tools/golden): what `autobatch fmt` and `autobatch check`
# print is compared byte for byte with reviewed files beside each case. Regenerate with
# `tools/golden update SUITE` and review `git diff` (tests/golden/README.md).
#
set(AUTOBATCH_GOLDEN_SUITES fmt diag lower)

foreach(suite ${AUTOBATCH_GOLDEN_SUITES})
  add_test(NAME golden_${suite}
    COMMAND ${PROJECT_SOURCE_DIR}/tools/golden check ${suite}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(golden_${suite} PROPERTIES
    ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>"
    LABELS golden)
endforeach()

# Every program's outputs under the reference interpreter: against the
# reviewed golden (run) and against the values worked out by hand (hand).
# roundtrip: lower, then run what was printed, equals the reviewed outputs.
foreach(suite sig run roundtrip hand)
  add_test(NAME golden_${suite}_reference
    COMMAND ${PROJECT_SOURCE_DIR}/tools/golden check ${suite}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(golden_${suite}_reference PROPERTIES
    ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>;GOLDEN_RUN_ARGS=--vm reference"
    LABELS golden)
endforeach()
