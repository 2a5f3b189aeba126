# `autobatch report` rendered by headless Chromium (skipped, exit 77, only
# when chromium is not installed), and the progress line and Ctrl-C of a run
# on a pseudo-terminal.
find_program(PYTHON3 python3)
if(PYTHON3)
  add_test(NAME report_render
    COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/report/render_test.py $<TARGET_FILE:autobatch>
            ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/report_work)
  set_tests_properties(report_render PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  add_test(NAME run_progress_interrupt
    COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/report/progress_test.py $<TARGET_FILE:autobatch>
            ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/progress_work)
  set_tests_properties(run_progress_interrupt PROPERTIES TIMEOUT 300)
endif()
