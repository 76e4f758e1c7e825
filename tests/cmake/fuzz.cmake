# libFuzzer harnesses: every tests/fuzz/fuzz-NAME.c becomes the executable fuzz-NAME,
# linked with llmlaunch_core, when LLMLAUNCH_FUZZ is ON and the compiler is clang
# (the `fuzz` preset). tests/fuzz/run.sh builds that preset and runs each for a
# bounded time. The core library itself is built with -fsanitize=fuzzer-no-link so
# the fuzzer sees coverage inside it.
if(LLMLAUNCH_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "LLMLAUNCH_FUZZ needs clang (libFuzzer); harnesses not built with ${CMAKE_C_COMPILER_ID}")
  else()
    target_compile_options(llmlaunch_core PRIVATE -fsanitize=fuzzer-no-link)
    file(GLOB LL_FUZZ_HARNESSES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz-*.c)
    foreach(src IN LISTS LL_FUZZ_HARNESSES)
      get_filename_component(name ${src} NAME_WE)
      add_executable(${name} ${src})
      target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
      target_link_options(${name} PRIVATE -fsanitize=fuzzer)
      target_link_libraries(${name} PRIVATE llmlaunch_core)
    endforeach()
  endif()
endif()
