# Fake ROCm SMI libraries for the ROCm SMI tests (no AMD GPU on CI machines). Each is
# loaded by probe/rsmi.c through the same dlopen path as the real librocm_smi64.so;
# tests find them through LL_FAKE_RSMI and LL_FAKE_RSMI_NOINIT.
#   fake_rsmi         the scenarios of tests/fake-rsmi/fake_rsmi.c ($FAKE_RSMI_SCENARIO)
#   fake_rsmi_noinit  lacks rsmi_init: a library that is not ROCm SMI
set(LL_FAKE_RSMI_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fake-rsmi/fake_rsmi.c)
foreach(variant IN ITEMS fake_rsmi fake_rsmi_noinit)
  add_library(${variant} SHARED ${LL_FAKE_RSMI_SRC})
  target_include_directories(${variant} PRIVATE ${CMAKE_SOURCE_DIR}/probe)
  set_target_properties(${variant} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake-rsmi)
endforeach()
target_compile_definitions(fake_rsmi_noinit PRIVATE FAKE_RSMI_NO_INIT)

list(APPEND LL_TEST_ENV
  "LL_FAKE_RSMI=$<TARGET_FILE:fake_rsmi>"
  "LL_FAKE_RSMI_NOINIT=$<TARGET_FILE:fake_rsmi_noinit>")
