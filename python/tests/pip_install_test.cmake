# `pip install .` as a user runs it: a fresh virtual environment that sees
# Debian's NumPy and setuptools, the package built without network
# (--no-build-isolation --no-index) from the extension this build made
# (AUTOBATCH_CMAKE_BUILD_DIR, so nothing is compiled again and pip writes
# only under BINARY_DIR/pip), then the README's fib example run with the
# venv's python from outside the source and build trees.
set(dir ${BINARY_DIR}/python_pip_test)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${PYTHON} -m venv --system-site-packages ${dir}/venv RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "python3 -m venv failed (Debian python3-venv)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env AUTOBATCH_CMAKE_BUILD_DIR=${BINARY_DIR}
                        PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
                        ${dir}/venv/bin/python -m pip install --no-build-isolation --no-index
                        ${SOURCE_DIR}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "pip install failed")
endif()
set(script "import numpy as np, autobatch, os, sys
assert autobatch.__file__.startswith(os.path.realpath(sys.prefix)), autobatch.__file__
prog = autobatch.load('${SOURCE_DIR}/programs/fib.ab', entry='fib')
(out,) = prog.run(n=np.array([6, 7, 8, 7]))
assert out.tolist() == [13, 21, 34, 21], out
print('pip-installed module OK:', autobatch.__file__)")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ENV} ${dir}/venv/bin/python -c "${script}"
                WORKING_DIRECTORY ${dir}  # not the build tree's python/ (sys.path[0])
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the pip-installed module failed")
endif()
