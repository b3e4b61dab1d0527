# Installs the build into a scratch prefix, outside the loader's search path
# as /opt/tsunagi would be, then:
#  1. every installed ELF file finds the libraries it needs with a clean
#     environment, and the installed libraries carry an $ORIGIN run path
#     (libtsunagi-ult finds libtsunagi beside it; issue 43);
#  2. builds tests/abi/consumer against it twice (CMake package, pkg-config)
#     and runs it with the installed tsurun;
#  3. the same for libtsunagi-ult, and a program linked against
#     libtsunagi-ult alone, whose libtsunagi comes only through
#     libtsunagi-ult's run path;
#  4. OpenSHMEM: the installed oshcc / oshc++ build programs that the
#     installed oshrun runs; the CMake package and pkg-config; a moved prefix.
# Every program starts under `env -i PATH=/usr/bin:/bin`: no LD_LIBRARY_PATH
# of the caller's can hide a library that the installed files do not find.
# A program's own run path (-Wl,-rpath,<prefix>/lib) is the user's business.
cmake_minimum_required(VERSION 3.25)  # policies of this project (IN_LIST)
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(clean env -i PATH=/usr/bin:/bin)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB_RECURSE pc_file ${prefix}/*/tsunagi.pc)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
get_filename_component(libdir "${pc_dir}" DIRECTORY)

# 1. The installed files on their own.
file(GLOB_RECURSE installed LIST_DIRECTORIES false ${prefix}/*)
set(elf_count 0)
foreach(f IN LISTS installed)
  if(IS_SYMLINK ${f})
    continue()
  endif()
  file(READ ${f} magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "7f454c46")
    continue()
  endif()
  math(EXPR elf_count "${elf_count} + 1")
  execute_process(COMMAND readelf -d ${f} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${f} failed")
  endif()
  # The run path as a list; it may keep entries of its own besides ours
  # (pmix's pkg-config adds its library directory).
  string(REGEX MATCH "Library (run)?path: \\[([^]\n]*)\\]" runpath_line "${dyn}")
  string(REPLACE ":" ";" runpath "${CMAKE_MATCH_2}")
  if(f MATCHES "\\.so(\\.[0-9]+)*$" AND NOT "$ORIGIN" IN_LIST runpath)
    message(FATAL_ERROR "${f}: run path '${runpath}' lacks $ORIGIN (it must find the "
                        "libraries installed beside it)")
  endif()
  if(dyn MATCHES "Shared library: \\[libtsunagi" AND NOT runpath MATCHES "(^|;)\\$ORIGIN")
    message(FATAL_ERROR "${f} needs a library of ours but its run path '${runpath}' has "
                        "no entry relative to \$ORIGIN")
  endif()
  # ldd resolves the whole tree of dependencies, the libraries' own included.
  execute_process(COMMAND ${clean} ldd ${f} OUTPUT_VARIABLE deps ERROR_VARIABLE deps
                  RESULT_VARIABLE rc)
  if(deps MATCHES "not found" OR (NOT rc EQUAL 0 AND NOT deps MATCHES "not a dynamic"))
    message(FATAL_ERROR "ldd ${f} (clean environment):\n${deps}")
  endif()
endforeach()
if(elf_count LESS 3)  # libtsunagi, libtsunagi-ult, tsurun at least
  message(FATAL_ERROR "found only ${elf_count} ELF files under ${prefix}")
endif()
# Real starts of the installed programs that link our libraries.
run(${clean} ${prefix}/bin/tsu-info)
if(EXISTS ${prefix}/bin/tsu-bench)
  run(${clean} ${prefix}/bin/tsu-bench --help)
endif()
file(GLOB tree_search ${prefix}/*/tsunagi/examples/ult_tree_search)
if(tree_search)
  run(${clean} ${prefix}/bin/tsurun -n 2 --timeout 60 ${tree_search} 10)
endif()

# 2. libtsunagi: CMake package and pkg-config.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/abi/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_RPATH=${libdir})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${clean} ${prefix}/bin/tsurun -n 3 --timeout 60 ${WORK_DIR}/build/consumer)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND pkg-config --cflags --libs tsunagi OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config tsunagi failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(c++ -std=c++20 ${SOURCE_DIR}/tests/abi/consumer/consumer.cpp ${flags}
    -Wl,-rpath,${libdir} -pthread -o ${WORK_DIR}/consumer-pc)
run(${clean} ${prefix}/bin/tsurun -n 2 --timeout 60 ${WORK_DIR}/consumer-pc)

# 3. The user-level thread library: CMake package (tsunagi::ult) and
# pkg-config (tsunagi-ult), a C program using <tsunagi/ult.h> alone.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/abi/ult_consumer -B ${WORK_DIR}/ult-build
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_RPATH=${libdir})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/ult-build)
run(${clean} ${prefix}/bin/tsurun -n 2 --timeout 60 ${WORK_DIR}/ult-build/ult_consumer)
execute_process(COMMAND pkg-config --cflags --libs tsunagi-ult OUTPUT_VARIABLE ult_flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config tsunagi-ult failed")
endif()
# Requires: tsunagi, so that a program calling tsu_init links with these flags.
if(NOT ult_flags MATCHES "-ltsunagi-ult" OR NOT ult_flags MATCHES "-ltsunagi( |$)")
  message(FATAL_ERROR "pkg-config --libs tsunagi-ult: '${ult_flags}' (want -ltsunagi-ult -ltsunagi)")
endif()
separate_arguments(ult_flags UNIX_COMMAND "${ult_flags}")
run(cc -std=c11 ${SOURCE_DIR}/tests/abi/ult_consumer/ult_consumer.c ${ult_flags}
    -Wl,-rpath,${libdir} -pthread -o ${WORK_DIR}/ult-consumer-pc)
run(${clean} ${prefix}/bin/tsurun -n 3 --timeout 60 ${WORK_DIR}/ult-consumer-pc)
# A program that calls libtsunagi-ult only, linked --as-needed (the default
# of some distributions): libtsunagi drops out of its own dependencies, and
# its run path (which the loader does not apply to a library's dependencies)
# no longer finds it; libtsunagi-ult's run path must.
run(cc -std=c11 ${SOURCE_DIR}/tests/abi/ult_only/ult_only.c -Wl,--as-needed ${ult_flags}
    -Wl,-rpath,${libdir} -pthread -o ${WORK_DIR}/ult-only)
execute_process(COMMAND readelf -d ${WORK_DIR}/ult-only OUTPUT_VARIABLE dyn)
if(NOT dyn MATCHES "Shared library: \\[libtsunagi-ult\\.so" OR
   dyn MATCHES "Shared library: \\[libtsunagi\\.so")
  message(FATAL_ERROR "ult-only should need libtsunagi-ult and not libtsunagi itself:\n${dyn}")
endif()
run(${clean} ${WORK_DIR}/ult-only)
# The C++ layer of the ULT library (<tsunagi/ult.hpp>) from the installed
# headers.
run(c++ -std=c++20 ${SOURCE_DIR}/tests/abi/header_ult_cxx.cpp ${ult_flags}
    -Wl,-rpath,${libdir} -pthread -o ${WORK_DIR}/ult-cxx-pc)
run(${clean} ${prefix}/bin/tsurun -n 2 --timeout 60 ${WORK_DIR}/ult-cxx-pc)

# 4. OpenSHMEM (issue 45): the installed wrappers build a C and a C++ program
# (oshcc, oshc++ and its other names), the installed oshrun runs them, from a
# clean environment; the CMake package (tsunagi::shmem) and pkg-config
# (tsunagi-shmem) build the same program; then the whole prefix is moved and
# the moved wrappers still work (they find their prefix from where they lie).
foreach(tool oshcc oshc++ oshcxx oshCC oshrun)
  if(NOT EXISTS ${prefix}/bin/${tool})
    message(FATAL_ERROR "${prefix}/bin/${tool} was not installed")
  endif()
endforeach()
function(check_showme prefix_dir)
  execute_process(COMMAND ${clean} ${prefix_dir}/bin/oshcc -showme prog.c -o prog
                  OUTPUT_VARIABLE line RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(REAL_PATH ${prefix_dir} real_prefix)
  string(FIND "${line}" "cc -I${real_prefix}/include -pthread prog.c -o prog -L${real_prefix}/"
         at_include)
  string(FIND "${line}" " -Wl,-rpath,${real_prefix}/" at_rpath)
  if(NOT rc EQUAL 0 OR NOT at_include EQUAL 0 OR at_rpath LESS 0 OR
     NOT line MATCHES " -ltsunagi-shmem -ltsunagi -pthread$")
    message(FATAL_ERROR "oshcc -showme under ${prefix_dir} (${rc}): '${line}'")
  endif()
  execute_process(COMMAND ${clean} ${prefix_dir}/bin/oshc++ -showme:compile
                  OUTPUT_VARIABLE line OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT line STREQUAL "-I${real_prefix}/include -pthread")
    message(FATAL_ERROR "oshc++ -showme:compile under ${prefix_dir}: '${line}'")
  endif()
endfunction()
check_showme(${prefix})
set(shmem_src ${SOURCE_DIR}/tests/abi/shmem_consumer)
run(${clean} ${prefix}/bin/oshcc -O2 ${shmem_src}/shmem_consumer.c -o ${WORK_DIR}/shmem-c)
run(${clean} ${prefix}/bin/oshrun -n 4 --timeout 60 ${WORK_DIR}/shmem-c)
run(${clean} ${prefix}/bin/oshrun -np 1 --timeout 60 ${WORK_DIR}/shmem-c)
foreach(cxx oshc++ oshcxx oshCC)
  run(${clean} ${prefix}/bin/${cxx} -std=c++17 ${shmem_src}/shmem_consumer.cpp
      -o ${WORK_DIR}/shmem-cxx-${cxx})
endforeach()
run(${clean} ${prefix}/bin/oshrun -np 2 --timeout 60 ${WORK_DIR}/shmem-cxx-oshcxx)
# Compile and link in two steps (-c adds no link flags).
run(${clean} ${prefix}/bin/oshcc -c ${shmem_src}/shmem_consumer.c -o ${WORK_DIR}/shmem-c.o)
run(${clean} ${prefix}/bin/oshcc ${WORK_DIR}/shmem-c.o -o ${WORK_DIR}/shmem-c2)
run(${clean} ${prefix}/bin/oshrun -n 2 --timeout 60 ${WORK_DIR}/shmem-c2)
# The CMake package and pkg-config.
run(${CMAKE_COMMAND} -S ${shmem_src} -B ${WORK_DIR}/shmem-build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_RPATH=${libdir})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/shmem-build)
run(${clean} ${prefix}/bin/oshrun -n 3 --timeout 60 ${WORK_DIR}/shmem-build/shmem_consumer)
run(${clean} ${prefix}/bin/oshrun -n 2 --timeout 60 ${WORK_DIR}/shmem-build/shmem_consumer_cxx)
execute_process(COMMAND pkg-config --cflags --libs tsunagi-shmem OUTPUT_VARIABLE shmem_flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT shmem_flags MATCHES "-ltsunagi-shmem" OR
   NOT shmem_flags MATCHES "-ltsunagi( |$)")
  message(FATAL_ERROR "pkg-config --libs tsunagi-shmem (${rc}): '${shmem_flags}'")
endif()
separate_arguments(shmem_flags UNIX_COMMAND "${shmem_flags}")
run(cc -std=c11 ${shmem_src}/shmem_consumer.c ${shmem_flags} -Wl,-rpath,${libdir} -pthread
    -o ${WORK_DIR}/shmem-pc)
run(${clean} ${prefix}/bin/oshrun -n 2 --timeout 60 ${WORK_DIR}/shmem-pc)
# Relocated: the prefix moved elsewhere, the moved wrappers build and start.
set(moved ${WORK_DIR}/moved-prefix)
file(RENAME ${prefix} ${moved})
check_showme(${moved})
run(${clean} ${moved}/bin/oshcc ${shmem_src}/shmem_consumer.c -o ${WORK_DIR}/shmem-moved)
run(${clean} ${moved}/bin/oshrun -n 2 --timeout 60 ${WORK_DIR}/shmem-moved)
