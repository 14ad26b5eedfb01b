# Included by ctest after the discovered Google tests (tests/CMakeLists.txt): adds the label
# `concurrency` to the tests that use sockets, threads, signals or timing, which the stress script
# repeats 20 times, once on a loaded machine. One line per test program: the list discovery wrote
# (<target>_TESTS), the program's module label (kept), and a regex of the test names to label.
function(spore_label_concurrency list module regex)
  foreach(spore_test IN LISTS ${list})
    if(spore_test MATCHES "${regex}")
      set_tests_properties("${spore_test}" PROPERTIES LABELS "${module};concurrency")
    endif()
  endforeach()
endfunction()

# `spore serve` end to end: a real server on loopback sockets, its worker thread, disconnects
# seen while requests wait (tests/serve/server_http_test.cc).
spore_label_concurrency(test_serve_TESTS serve
                        "^(Serve|ServeNoModel|ServeTransport|ServeTransportAllowedHosts|HttpServerTest)[.]")

# spore pull against tools/test_hub.py on 127.0.0.1: sockets, a child process, stall timeouts
# (tests/nlp/pull_test.cc, pull_hostile_test.cc).
spore_label_concurrency(test_nlp_TESTS nlp "^(Pull|PullHostile)[.]")
