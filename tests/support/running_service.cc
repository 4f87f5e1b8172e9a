#include "tests/support/running_service.h"

#include <gtest/gtest.h>

namespace egress {

Status RunningService::Start(service::ServiceOptions options,
                             std::unique_ptr<adapters::HttpTransport> transport) {
  if (service_) {
    return Status::FailedPrecondition("RunningService: already running");
  }
  auto started =
      transport ? service::Service::Start(*io_, clock_, std::move(options), std::move(transport))
                : service::Service::Start(*io_, clock_, std::move(options));
  if (!started) {
    return started.error();
  }
  service_ = std::move(*started);
  port_ = service_->endpoint().port();
  loop_ = std::thread([this] { io_->run(); });
  return Status::Ok();
}

void RunningService::Stop() {
  if (!service_) {
    return;
  }
  std::promise<Status> closed;
  boost::asio::post(*io_, [&] {
    service_->Shutdown(Millis(5000), [&](Status s) {
      closed.set_value(s);
      io_->stop();
    });
  });
  const Status status = closed.get_future().get();
  EXPECT_TRUE(status.ok()) << status.ToString();
  loop_.join();
  service_.reset();
  io_ = std::make_unique<boost::asio::io_context>();  // the stopped service's handlers go with it
}

}  // namespace egress
