# Golden suites of the CLI (tools/golden, tests/golden/README.md): what `autobatch` prints
# is compared with reviewed expectations under tests/golden/. Regenerate with
# `tools/golden update SUITE` and review `git diff tests/golden`.
#
# fmt: hand-written canonical forms, and fmt of every program idempotent and running like
# the program; diag: `check` diagnostics; lower: `lower` of every program; passes: small
# programs printed after each registered pass (a pass without cases fails it); headers:
# every expectation under tests/golden says how it was made.
foreach(suite fmt diag lower passes headers)
  add_test(NAME golden_${suite}
    COMMAND ${PROJECT_SOURCE_DIR}/tools/golden check ${suite}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(golden_${suite} PROPERTIES
    ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>"
    LABELS golden)
endforeach()

# Every program's inferred signatures (sig) and outputs under the reference interpreter
# (the RUN lines name `--vm reference`): against the reviewed expectation (run), through
# lower then run of what was printed (roundtrip), and against the values worked out by
# hand (hand).
foreach(suite sig run roundtrip hand)
  add_test(NAME golden_${suite}_reference
    COMMAND ${PROJECT_SOURCE_DIR}/tools/golden check ${suite}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(golden_${suite}_reference PROPERTIES
    ENVIRONMENT "AUTOBATCH=$<TARGET_FILE:autobatch>"
    LABELS golden)
endforeach()
