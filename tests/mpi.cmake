# The batch split over MPI processes (src/mpi; only when the build has MPI):
# tests/mpi/check_mpi.sh runs `mpirun --oversubscribe -np 2|3 autobatch run`
# against one-process runs of the same binary (which also checks the plain
# run of an MPI-linked binary). Each takes 2-45 s on 2 loaded cores, mostly
# mpirun start-up (about 1 s per launch).
# Leak detection is off for these tests only: Open MPI keeps allocations past
# MPI_Finalize (its runtime and PMIx state), which LeakSanitizer would report
# as leaks that are not ours. (Not yet run under ASan on this branch: the
# lead's tools/test run will tell whether anything else shows.)
if(AUTOBATCH_MPI)
  foreach(case programs-2 programs-3 programs-dynamic error stop record npy dying sample)
    add_test(NAME mpi_${case}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_mpi.sh ${case} $<TARGET_FILE:autobatch>
              ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/${case})
    set_tests_properties(mpi_${case} PROPERTIES LABELS mpi TIMEOUT 600
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endforeach()
endif()
