# posteriordb posteriors (tests/sample/posteriordb/): `autobatch sample` on each translation,
# with a fixed seed, every quantity's mean and sd against posteriordb's reference draws. One
# test per posterior (ctest -R sample_posteriordb); those marked long in check.py are skipped
# (exit 77) unless the environment sets AUTOBATCH_POSTERIORDB_LONG=1.
find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB POSTERIORDB_MODELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sample/posteriordb/*.ab)
  foreach(model ${POSTERIORDB_MODELS})
    get_filename_component(name ${model} NAME_WE)
    add_test(NAME sample_posteriordb_${name}
      COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/sample/posteriordb/check.py
              $<TARGET_FILE:autobatch> ${CMAKE_CURRENT_BINARY_DIR}/posteriordb_work ${name})
    set_tests_properties(sample_posteriordb_${name} PROPERTIES
      LABELS posteriordb SKIP_RETURN_CODE 77 TIMEOUT 1800)
  endforeach()
endif()
