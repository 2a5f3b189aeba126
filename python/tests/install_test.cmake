# Installs the "python" component into PREFIX and runs the README's fib
# example with the installed package alone on PYTHONPATH.
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${PREFIX}
                        --component python
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed")
endif()
set(script "import numpy as np, autobatch, os
assert autobatch.__file__.startswith(os.path.realpath('${PREFIX}')), autobatch.__file__
prog = autobatch.load('${SOURCE_DIR}/programs/fib.ab', entry='fib')
(out,) = prog.run(n=np.array([6, 7, 8, 7]))
assert out.tolist() == [13, 21, 34, 21], out
print('installed module OK:', autobatch.__file__)")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ENV} PYTHONPATH=${PREFIX}/${PYDIR}
                        ${PYTHON} -c "${script}"
                WORKING_DIRECTORY ${PREFIX}  # not the build tree's python/ (sys.path[0])
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the installed module failed")
endif()
