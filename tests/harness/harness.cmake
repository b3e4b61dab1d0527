# The shared multi-rank test harness (included by tests/CMakeLists.txt, so
# every folder under tests/ sees these):
#   TSU_HARNESS_DIR  this folder: mp_util.hpp (bounded waits that drive
#                    progress, issue-with-retry, patterns), msg_util.hpp
#                    (mp::sync), netns_run.sh (hosts made of network namespaces)
#   TSU_MP_MAIN      rank_test_main.cpp, the GoogleTest main of a rank program
#                    (tsu_init, RUN_ALL_TESTS, tsu_finalize)
set(TSU_HARNESS_DIR ${CMAKE_CURRENT_LIST_DIR})
set(TSU_MP_MAIN ${TSU_HARNESS_DIR}/rank_test_main.cpp)
set(TSU_NETNS_RUN ${TSU_HARNESS_DIR}/netns_run.sh)

# tsu_add_rank_test(NAME <name> RANKS <n> TARGET <exe> [TIMEOUT <s>] [ARGS ...] [ENV VAR=VALUE ...])
# Runs <exe> on <n> ranks through tsurun (which kills the job at the timeout).
function(tsu_add_rank_test)
  cmake_parse_arguments(T "" "NAME;RANKS;TARGET;TIMEOUT" "ARGS;ENV;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_NAME}
    COMMAND $<TARGET_FILE:tsurun> -n ${T_RANKS} --tag-output --timeout ${T_TIMEOUT}
            $<TARGET_FILE:${T_TARGET}> ${T_ARGS})
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${ctest_timeout}
    LABELS "multiproc;${T_LABELS}" ENVIRONMENT "${T_ENV}")
endfunction()

# A GoogleTest rank program of the messaging tests (layers, transports):
# internal headers (tsunagi_core), the shared main, the harness headers.
function(tsu_messaging_program name)
  add_executable(${name} ${ARGN} ${TSU_MP_MAIN})
  target_include_directories(${name} PRIVATE ${TSU_HARNESS_DIR})
  target_link_libraries(${name} PRIVATE tsunagi_core GTest::gtest tsu_warnings)
endfunction()

# Every rank program in three modes: bypass (default), through the progress
# engine (TSU_BYPASS=0), and manual progress (TSU_PROGRESS=manual).
function(tsu_messaging_modes name ranks target timeout)
  tsu_add_rank_test(NAME ${name} RANKS ${ranks} TARGET ${target} TIMEOUT ${timeout}
    LABELS messaging ${ARGN})
  tsu_add_rank_test(NAME ${name}.engine RANKS ${ranks} TARGET ${target} TIMEOUT ${timeout}
    ENV TSU_BYPASS=0 LABELS messaging ${ARGN})
  tsu_add_rank_test(NAME ${name}.manual RANKS ${ranks} TARGET ${target} TIMEOUT ${timeout}
    ENV TSU_PROGRESS=manual LABELS messaging ${ARGN})
endfunction()

# Across pseudo-nodes: tsurun --ranks-per-node makes ranks separate nodes on
# 127.0.0.1, so messages between nodes go over the udp transport (and inside a
# node over shm).  Single-copy eager is node-only; the programs expect plain
# eager towards other nodes.
# tsu_xnode_test(NAME n RANKS r PER_NODE k TARGET exe [TIMEOUT s] [ENV ...])
function(tsu_xnode_test)
  cmake_parse_arguments(T "" "NAME;RANKS;PER_NODE;TARGET;TIMEOUT" "ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 50)
  endif()
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  add_test(NAME ${T_NAME}
    COMMAND $<TARGET_FILE:tsurun> -n ${T_RANKS} --ranks-per-node ${T_PER_NODE} --tag-output
            --timeout ${T_TIMEOUT} $<TARGET_FILE:${T_TARGET}>)
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${ctest_timeout}
    LABELS "messaging;udp;multiproc" ENVIRONMENT "${T_ENV}")
endfunction()
