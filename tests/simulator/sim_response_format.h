#pragma once

#include <string>

#include "tests/simulator/sim_message.h"

namespace egress::sim {

// Appends the HTTP/1 response for `response` (its status, headers and body; the
// delay and reset fields are the caller's) to `out`: byte for byte what Beast's serializer
// writes for the http::response<string_body> built from it (keep_alive(keep_alive), then each
// header set() in order, Content-Type unless an empty 204, prepare_payload()), without the
// allocations. `version` is the request's (10 or 11). Returns whether the connection stays
// open after this response, as that message's keep_alive() would.
bool AppendHttpResponse(const SimResponse& response, unsigned version, bool keep_alive,
                        std::string& out);

}  // namespace egress::sim
