# Structured-form programs (tests/structured/*.ab) against their plain-Python
# twins (*.py): the outputs Python gives, under --vm stack, stackless and
# reference, after `lower`, and after `fmt` (which must keep every comment and
# be idempotent). A few seconds.
add_test(NAME structured_programs
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/structured/check.py $<TARGET_FILE:autobatch>
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(structured_programs PROPERTIES LABELS structured TIMEOUT 600)
