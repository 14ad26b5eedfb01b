// Writing answers (NOTE [HTTP transport]): a whole answer as bytes the event loop sends, or a
// streamed one (a handler's chunked content provider, SSE) written by the worker that runs it,
// each write bounded by a deadline of no progress.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>

#include "serve/api_error.h"

namespace spore::serve::http {

// Status line, headers (Content-Length and Connection set here), body.
std::string serialize(const httplib::Response& res, bool keep_alive, bool head_only = false);
// The error object as a whole answer that closes the connection.
std::string serialize_error(const ApiError& e, bool retry_after = false);
// Puts an error object into `res`.
void fill_error(httplib::Response& res, const ApiError& e);
// Writes `res`'s head and runs its content provider, each piece as an HTTP chunk (HTTP/1.0: raw
// bytes, the end marked by closing; `keep_alive` false: the head says the connection closes). Returns whether the stream ended with the provider's done()
// and every byte written; the provider's resource releaser then hears the outcome.
bool stream(int fd, httplib::Response& res, int minor_version, bool keep_alive, std::chrono::milliseconds write_timeout,
            const std::atomic<bool>& stopping);

}  // namespace spore::serve::http
