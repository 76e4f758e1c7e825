# Agreement (issue 4): the agreement step alone as a program (integration tests and
# bench/agree.sh drive it under srun and mpirun), and the bare PMIx fence it is
# measured against.
add_executable(ll-agree-tool ${CMAKE_SOURCE_DIR}/tests/tools/agree-tool.c)
target_link_libraries(ll-agree-tool PRIVATE llmlaunch_core llmlaunch_pmix_objs)
add_executable(pmix-fence ${CMAKE_SOURCE_DIR}/bench/pmix-fence.c)
target_link_libraries(pmix-fence PRIVATE PkgConfig::PMIX)

list(APPEND LL_TEST_ENV
  "LL_AGREE_TOOL=$<TARGET_FILE:ll-agree-tool>"
  "LL_PMIX_FENCE=$<TARGET_FILE:pmix-fence>")
add_executable(agree-logic ${CMAKE_SOURCE_DIR}/bench/agree-logic.c)
target_link_libraries(agree-logic PRIVATE llmlaunch_core)
# Rank 0's work per node at check-in (record parsed, digests noted), 16 to 10,000 nodes.
add_executable(agree-digests ${CMAKE_SOURCE_DIR}/bench/agree-digests.c)
target_link_libraries(agree-digests PRIVATE llmlaunch_core)
# The rendezvous proof with 10,000 simulated nodes on loopback (issue 13).
add_executable(rdzv-reach ${CMAKE_SOURCE_DIR}/bench/rdzv-reach.c)
target_link_libraries(rdzv-reach PRIVATE llmlaunch_core)
# The preflight check's schedule and cost at 1,000 and 10,000 nodes (issue 16).
add_executable(check-cost ${CMAKE_SOURCE_DIR}/bench/check-cost.c)
target_link_libraries(check-cost PRIVATE llmlaunch_core)
# Host lists compressed for the check's exclude file, at 262,144 names (issue 21).
add_executable(hostlist-compress ${CMAKE_SOURCE_DIR}/bench/hostlist-compress.c)
target_link_libraries(hostlist-compress PRIVATE llmlaunch_core)
