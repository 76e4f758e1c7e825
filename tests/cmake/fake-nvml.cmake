# Fake NVML libraries for the NVML tests (no GPU on CI machines). Each is loaded by
# probe/nvml.c through the same dlopen path as the real libnvidia-ml.so.1; tests find
# them through the environment variables added to LL_TEST_ENV below.
#   fake_nvml         the scenarios of tests/fake-nvml/fake_nvml.c ($FAKE_NVML_SCENARIO)
#   fake_nvml_noinit  lacks nvmlInit_v2: a library that is not NVML
#   fake_nvml_old     a pre-R460 driver: no remote device type, no _v3/_v2 PCI calls
set(LL_FAKE_NVML_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fake-nvml/fake_nvml.c)
foreach(variant IN ITEMS fake_nvml fake_nvml_noinit fake_nvml_old)
  add_library(${variant} SHARED ${LL_FAKE_NVML_SRC})
  target_include_directories(${variant} PRIVATE ${CMAKE_SOURCE_DIR}/probe)
  set_target_properties(${variant} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake-nvml)
endforeach()
target_compile_definitions(fake_nvml_noinit PRIVATE FAKE_NVML_NO_INIT)
target_compile_definitions(fake_nvml_old PRIVATE FAKE_NVML_OLD)

list(APPEND LL_TEST_ENV
  "LL_FAKE_NVML=$<TARGET_FILE:fake_nvml>"
  "LL_FAKE_NVML_NOINIT=$<TARGET_FILE:fake_nvml_noinit>"
  "LL_FAKE_NVML_OLD=$<TARGET_FILE:fake_nvml_old>")
