# spore_mpi_test_properties(TEST LABELS ENVIRONMENT TIMEOUT): the ctest properties of a test that
# starts mpirun, with Open MPI's session directory made the test's own.
#
# Why (NOTE [MPI tests' session directories]): Open MPI 4's mpirun and its ranks keep their
# session files under one directory per user and host, /tmp/ompi.HOST.UID, and each of them, when
# it ends, removes that directory if it finds it empty. An mpirun that starts at that moment has
# just seen the directory exist and fails to make its own subdirectory in it ("A call to mkdir was
# unable to create the desired directory"), about 0.1 s after it started. ctest runs several MPI
# tests at once, so on a loaded machine one of them now and then failed this way. Under a base of
# its own (orte_tmpdir_base, a folder of the build tree named after the test) no other job's
# cleanup can take a test's directory away; ctest never runs one test twice at once.
function(spore_mpi_test_properties test labels environment timeout)
  set(base "${PROJECT_BINARY_DIR}/mpi-sessions/${test}")
  set_tests_properties(${test} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
                       ENVIRONMENT "${environment};OMPI_MCA_orte_tmpdir_base=${base}")
endfunction()
