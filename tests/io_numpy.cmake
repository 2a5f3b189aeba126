# Cross-check of our .npy and JSON I/O against NumPy itself: NumPy writes
# arrays that our reader must read exactly, and reads back exactly what our
# writer wrote. Skipped (exit 77) only when no python3 with numpy exists.
add_executable(npy_tool ${CMAKE_CURRENT_SOURCE_DIR}/io/npy_tool.cpp)
target_link_libraries(npy_tool PRIVATE autobatch_lib)
add_test(NAME io_numpy
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/io/numpy_roundtrip.sh $<TARGET_FILE:npy_tool>
          ${CMAKE_CURRENT_BINARY_DIR}/io_numpy_work)
set_tests_properties(io_numpy PROPERTIES SKIP_RETURN_CODE 77)
