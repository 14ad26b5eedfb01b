// Seeing a client leave while its request waits (NOTE [Server], "Disconnects"). A handler gets
// httplib's Request, which carries no socket, and a closed connection shows only when a write
// fails (NOTE [HTTP transport]), so a JSON request (nothing written until the end) or a stream
// still queued (nothing written yet) would run on after its client left. PeerSocket finds the
// accepted socket the request came on and asks the kernel, without reading or blocking, whether
// the peer has closed or reset it.
#pragma once
#include <httplib.h>

namespace spore::serve {

class PeerSocket {
 public:
  // The descriptor of the accepted socket whose local and peer addresses are the request's
  // (scans /proc/self/fd; -1 when none matches). Call it from the thread serving the request:
  // the transport closes that socket only after the handler returns, so the number cannot be reused
  // by another connection meanwhile.
  static int find(const httplib::Request& req);
  // The peer has closed (EOF) or reset `fd` (poll with no wait, then recv with MSG_PEEK). Bytes
  // waiting to be read (a pipelined next request) mean the client is still there.
  static bool closed(int fd);
};

}  // namespace spore::serve
