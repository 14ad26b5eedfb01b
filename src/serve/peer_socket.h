// Seeing a client leave while its request waits (NOTE [Server], "Disconnects"). cpp-httplib 0.11
// hands a handler no socket and notices a closed connection only when a write fails, so a JSON
// request (nothing written until the end) or a stream still queued (nothing written yet) would
// run on after its client left. PeerSocket finds the accepted socket the request came on and
// asks the kernel, without reading or blocking, whether the peer has closed or reset it.
#pragma once
#include <httplib.h>

namespace spore::serve {

class PeerSocket {
 public:
  // The descriptor of the accepted socket whose local and peer addresses are the request's
  // (scans /proc/self/fd; -1 when none matches, as on another platform: then the answer runs to
  // the end). Call it from the thread serving the request: httplib closes that socket only after
  // the response is done, so the number cannot be reused by another connection meanwhile.
  static int find(const httplib::Request& req);
  // The peer has closed (EOF) or reset `fd` (poll with no wait, then recv with MSG_PEEK). Bytes
  // waiting to be read (a pipelined next request) mean the client is still there.
  static bool closed(int fd);
};

}  // namespace spore::serve
