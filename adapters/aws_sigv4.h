#pragma once

#include <string>
#include <string_view>

#include "adapters/aws_credentials.h"
#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// Signs `request` with AWS Signature Version 4 (docs.aws.amazon.com/IAM/latest/UserGuide/
// reference_sigv4-create-signed-request.html) for `service` in `region` at `when`: adds the
// x-amz-date header (and x-amz-security-token when the credentials have a session token), then
// the Authorization header over the host, every header already on the request, the path, the
// query and a SHA-256 of the body. The request's headers must not be changed afterwards. The
// URL's path and query are signed as written (an AWS JSON API posts to "/": no encoding is
// needed; a query's pairs are sorted).
//
// Ours rather than libcurl's CURLOPT_AWS_SIGV4: the signature is then checked against AWS's
// published example (tests/adapters/aws_sigv4_test.cc) and works the same over any transport.
void SignAwsRequest(HttpRequest& request, const AwsCredentials& credentials,
                    std::string_view region, std::string_view service, WallTime when);

// The signing key of a day (kSigning in AWS's documentation), raw bytes: for the test of AWS's
// published example.
std::string AwsSigningKey(std::string_view secret, std::string_view date, std::string_view region,
                          std::string_view service);

}  // namespace egress::adapters
