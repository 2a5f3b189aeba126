# Golden suites of the CLI (tools/golden): what `autobatch fmt` and `autobatch check`
# print is compared byte for byte with reviewed files beside each case. Regenerate with
# `tools/golden update SUITE` and review `git diff` (tests/golden/README.md).
#
# The run suite (programs/NAME.ab on NAME.json against NAME.out.json) and the hand suite
# (against NAME.expected-by-hand.txt) join this list once `autobatch run` works.
set(AUTOBATCH_GOLDEN_SUITES fmt diag)

foreach(suite ${AUTOBATCH_GOLDEN_SUITES})
  add_test(NAME golden_${suite}
    COMMAND ${PROJECT_SOURCE_DIR}/tools/golden check ${suite}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(golden_${suite} PROPERTIES
    ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>"
    LABELS golden)
endforeach()
