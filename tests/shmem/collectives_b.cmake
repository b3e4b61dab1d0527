# ---- Teams and collectives: helper B's programs ---------------------------------
# Included at the end of tests/shmem/CMakeLists.txt (it uses shmem_program,
# shmem_test and the routes defined there).  3 PEs exercise the uneven trees
# of the active-set collectives and the short last row of split_2d.
list(APPEND TSU_SHMEM_ROUTES "shm3|3|0|SHMEM_TEST_NODE_PES=3")
foreach(p collectives_team collectives_active_set)
  shmem_program(${p})
  shmem_test(NAME ${p} PROGRAM ${p} TIMEOUT 120
             ROUTES ${TSU_SHMEM_DEFAULT_ROUTES} shm3 manual4 ofi4)
endforeach()
shmem_test(NAME collectives_team_debug PROGRAM collectives_team ENV SHMEM_DEBUG=1
           ROUTES shm2 udp4)
# ---- end of helper B's programs ---------------------------------------------------
