#pragma once

#include <string>
#include <string_view>

#include "adapters/curl_transport.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// Checks the local trust settings before any delivery depends on them: transport.ca_file, when
// set, must be a readable file holding at least one PEM certificate OpenSSL can parse, and
// transport.ca_path, when set, a directory. InvalidArgument naming the setting and the problem
// otherwise. A bad local file fails `serve --check-config` and the start, rather than every
// HTTPS delivery at its first attempt. Reads the files; call at start only.
Status CheckTrustFiles(const TransportOptions& options);

// The same checks of one section's pair, the errors naming `section` ("platforms.slack":
// "platforms.slack.ca_file: ...").
Status CheckTrustFiles(std::string_view section, const std::string& ca_file,
                       const std::string& ca_path);

}  // namespace egress::adapters
