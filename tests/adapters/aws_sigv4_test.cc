#include "adapters/aws_sigv4.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "dispatcher/base/hex.h"

namespace egress::adapters {
namespace {

// The credentials and time of AWS's Signature Version 4 test suite (aws-sig-v4-test-suite:
// AKIDEXAMPLE, region us-east-1, service "service", 2015-08-30 12:36:00 UTC).
const AwsCredentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const WallTime kSuiteTime{std::chrono::seconds(1440938160)};

std::string Header(const HttpRequest& request, std::string_view name) {
  for (const HttpHeader& header : request.headers) {
    if (EqualsIgnoreCase(header.name, name)) {
      return header.value;
    }
  }
  return "";
}

std::string SignedAuthorization(std::string method, std::string url) {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  SignAwsRequest(request, kSuite, "us-east-1", "service", kSuiteTime);
  EXPECT_EQ(Header(request, "X-Amz-Date"), "20150830T123600Z");
  return Header(request, "Authorization");
}

// Verifies the signing key of AWS's documented derivation example (IAM, 2012-02-15).
TEST(AwsSigV4Test, DerivesTheDocumentedSigningKey) {
  EXPECT_EQ(HexEncode(AwsSigningKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215",
                                    "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

// Verifies the signatures of the test suite's get-vanilla, post-vanilla and
// post-vanilla-query requests: host and x-amz-date signed, an empty body's hash.
TEST(AwsSigV4Test, SignsAsTheTestSuite) {
  const std::string prefix =
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
      "SignedHeaders=host;x-amz-date, Signature=";
  EXPECT_EQ(SignedAuthorization("GET", "https://example.amazonaws.com/"),
            prefix + "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(SignedAuthorization("POST", "https://example.amazonaws.com/"),
            prefix + "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  EXPECT_EQ(SignedAuthorization("POST", "https://example.amazonaws.com:443/?Param1=value1"),
            prefix + "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11");
}

// Verifies that the request's own headers and a session token are signed, and that the body
// changes the signature.
TEST(AwsSigV4Test, SignsTheHeadersTheTokenAndTheBody) {
  HttpRequest request;
  request.url = "http://127.0.0.1:8000/";
  request.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                     {"X-Amz-Target", "DynamoDB_20120810.GetItem"}};
  request.body = "{}";
  AwsCredentials temporary = kSuite;
  temporary.session_token = "token";
  HttpRequest other = request;
  SignAwsRequest(request, temporary, "eu-west-1", "dynamodb", kSuiteTime);
  EXPECT_EQ(Header(request, "X-Amz-Security-Token"), "token");
  const std::string authorization = Header(request, "Authorization");
  EXPECT_NE(authorization.find("/20150830/eu-west-1/dynamodb/aws4_request, SignedHeaders="
                               "content-type;host;x-amz-date;x-amz-security-token;x-amz-target, "),
            std::string::npos)
      << authorization;
  other.body = "{ }";
  SignAwsRequest(other, temporary, "eu-west-1", "dynamodb", kSuiteTime);
  EXPECT_NE(Header(other, "Authorization"), authorization);
}

}  // namespace
}  // namespace egress::adapters
