#include "adapters/aws_credentials.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "adapters/http_header.h"

namespace egress::adapters {

Result<AwsCredentials> ReadAwsCredentialsFile(const std::string& path, std::string_view profile) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Status::InvalidArgument(fmt::format("AWS credentials file {}: cannot be read", path));
  }
  std::string text(64 * 1024 + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  if (text.size() > 64 * 1024) {
    return Status::InvalidArgument(fmt::format("AWS credentials file {}: over 64 KiB", path));
  }
  AwsCredentials credentials;
  bool in_profile = false;
  bool found = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = TrimOws(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') {
      line = TrimOws(line.substr(0, line.size() - 1));
    }
    if (line.empty() || line[0] == '#' || line[0] == ';') {
      continue;
    }
    if (line.front() == '[' && line.back() == ']') {
      in_profile = TrimOws(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    const size_t eq = line.find('=');
    if (!in_profile || eq == std::string_view::npos) {
      continue;
    }
    const std::string_view key = TrimOws(line.substr(0, eq));
    const std::string value(TrimOws(line.substr(eq + 1)));
    if (key == "aws_access_key_id") {
      credentials.access_key_id = value;
    } else if (key == "aws_secret_access_key") {
      credentials.secret_access_key = value;
    } else if (key == "aws_session_token") {
      credentials.session_token = value;
    }
  }
  if (!found) {
    return Status::InvalidArgument(
        fmt::format("AWS credentials file {}: no profile [{}]", path, profile));
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return Status::InvalidArgument(fmt::format(
        "AWS credentials file {}: profile [{}] lacks aws_access_key_id or aws_secret_access_key",
        path, profile));
  }
  return credentials;
}

Result<AwsCredentials> AwsCredentialsFromEnv(
    const std::function<std::optional<std::string>(std::string_view)>& getenv) {
  AwsCredentials credentials;
  credentials.access_key_id = getenv("AWS_ACCESS_KEY_ID").value_or("");
  credentials.secret_access_key = getenv("AWS_SECRET_ACCESS_KEY").value_or("");
  credentials.session_token = getenv("AWS_SESSION_TOKEN").value_or("");
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return Status::InvalidArgument(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
        "cluster.dynamodb_credentials_file");
  }
  return credentials;
}

}  // namespace egress::adapters
