# shmem.h's typed families compile cleanly in every language mode a SHMEM
# program uses (helper A's checks; included from tests/shmem/CMakeLists.txt).
# Compile-only: object libraries, so building them is the check; nothing
# links, as the calls only need the declarations.
set(tsu_shmem_header_flags -Wall -Wextra -Wpedantic -Werror)

# C11: every _Generic name once for each of its types, ctx forms included.
add_library(shmem_header_generic_c11 OBJECT header_generic_c11.c)
set_target_properties(shmem_header_generic_c11 PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)

# C89 and C99: only the typed names (no _Generic before C11).
add_library(shmem_header_c89 OBJECT header_c89.c)
set_target_properties(shmem_header_c89 PROPERTIES C_STANDARD 90 C_EXTENSIONS OFF)
add_library(shmem_header_c99 OBJECT header_c89.c)
set_target_properties(shmem_header_c99 PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)

foreach(t shmem_header_generic_c11 shmem_header_c89 shmem_header_c99)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${t} PRIVATE ${tsu_shmem_header_flags})
endforeach()

# C++: the same names as overloads, as C++11 and as the project's C++20.
add_library(shmem_header_generic_cxx11 OBJECT header_generic_cxx.cpp)
set_target_properties(shmem_header_generic_cxx11 PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
add_library(shmem_header_generic_cxx20 OBJECT header_generic_cxx.cpp)
foreach(t shmem_header_generic_cxx11 shmem_header_generic_cxx20)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${t} PRIVATE tsu_warnings)
  target_compile_options(${t} PRIVATE -Werror)
endforeach()
