# Installs the build into a scratch prefix, then builds tests/abi/consumer
# against it twice (CMake package, pkg-config) and runs it with the installed
# tsurun on 3 ranks.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/abi/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_RPATH=${prefix}/lib)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${prefix}/bin/tsurun -n 3 --timeout 60 ${WORK_DIR}/build/consumer)
# pkg-config route
file(GLOB_RECURSE pc_file ${prefix}/*/tsunagi.pc)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND pkg-config --cflags --libs tsunagi OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config tsunagi failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(c++ -std=c++20 ${SOURCE_DIR}/tests/abi/consumer/consumer.cpp ${flags}
    -Wl,-rpath,${pc_dir}/.. -pthread -o ${WORK_DIR}/consumer-pc)
run(${prefix}/bin/tsurun -n 2 --timeout 60 ${WORK_DIR}/consumer-pc)
# The user-level thread library: CMake package (tsunagi::ult) and pkg-config
# (tsunagi-ult), a C program using <tsunagi/ult.h> alone, on 2 ranks.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/abi/ult_consumer -B ${WORK_DIR}/ult-build
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_RPATH=${prefix}/lib)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/ult-build)
run(${prefix}/bin/tsurun -n 2 --timeout 60 ${WORK_DIR}/ult-build/ult_consumer)
execute_process(COMMAND pkg-config --cflags --libs tsunagi-ult OUTPUT_VARIABLE ult_flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config tsunagi-ult failed")
endif()
separate_arguments(ult_flags UNIX_COMMAND "${ult_flags}")
run(cc -std=c11 ${SOURCE_DIR}/tests/abi/ult_consumer/ult_consumer.c ${ult_flags}
    -Wl,-rpath,${pc_dir}/.. -pthread -o ${WORK_DIR}/ult-consumer-pc)
run(${prefix}/bin/tsurun -n 3 --timeout 60 ${WORK_DIR}/ult-consumer-pc)
