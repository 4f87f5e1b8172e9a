#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// AWS credentials: an access key id, its secret, and the session token of temporary
// credentials (empty when none). The secret and the token are secrets: never log them.
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

// The credentials of `profile` in an AWS shared credentials file (the INI file the AWS CLI
// writes, ~/.aws/credentials: "[profile]" sections of aws_access_key_id, aws_secret_access_key
// and aws_session_token). InvalidArgument naming the file and what is missing (never a value);
// at most 64 KiB is read.
Result<AwsCredentials> ReadAwsCredentialsFile(const std::string& path, std::string_view profile);

// The credentials of the standard variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN; InvalidArgument when the first two are not both set.
Result<AwsCredentials> AwsCredentialsFromEnv(
    const std::function<std::optional<std::string>(std::string_view)>& getenv);

}  // namespace egress::adapters
