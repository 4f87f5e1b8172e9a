#pragma once

// GET /ui/...: the operator console (docs/console.md). The files are public (they hold no
// data); everything the console shows comes from the JSON API with the key its user pastes.

#include <string_view>

#include <boost/beast/http/verb.hpp>

#include "dispatcher/service/api/http_server.h"

namespace egress::service {

// The Content-Security-Policy of every console answer: scripts, styles and fetches from the
// service itself only (no inline script or style, no CDN), no framing, no forms elsewhere.
inline constexpr std::string_view kConsoleCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// The answer to `method target` for a target under /ui (`target` as the request line has it,
// query included): /ui redirects (308) to /ui/, /ui/ is index.html, /ui/<file> that file with
// its content type, the CSP above, nosniff, no-referrer and Cache-Control: no-cache; any other
// file is 404 not_found and any method but GET 405, both as the API's error envelope. Pure; any
// thread.
HttpResponse ConsoleResponse(boost::beast::http::verb method, std::string_view target);

}  // namespace egress::service
