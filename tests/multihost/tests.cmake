# Many hosts on one machine (label dist): scripts/netns-hosts.sh makes two
# hosts of network namespaces joined by a bridge and runs Open MPI over TCP
# between them; netns_hosts.sh holds a tp 2 x dp 2 run across them to one
# process and, bit for bit, to the plain machine (also over a shaped link),
# and cuts a host's link mid-run. It needs root (else it skips, exit 77) and
# takes the hosts under a lock, so concurrent runs wait for each other.
add_test(NAME multihost.netns_hosts
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/netns_hosts.sh $<TARGET_FILE:parallm>
                 ${CMAKE_SOURCE_DIR}/scripts/netns-hosts.sh)
set_tests_properties(multihost.netns_hosts PROPERTIES LABELS dist TIMEOUT 300 SKIP_RETURN_CODE 77)
