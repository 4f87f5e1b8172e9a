#pragma once

#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"

namespace egress {

// A transport on a loop of the test's own, for the transport tests: the fixture makes
// `transport_` on `io_` and sends through SendAll / SendOne, which run the loop until every
// request has completed.
class TransportRunner {
 protected:
  // Sends every request and runs the loop until all have completed; results in request order.
  std::vector<Result<adapters::HttpResponse>> SendAll(std::vector<adapters::HttpRequest> requests) {
    std::vector<Result<adapters::HttpResponse>> out(requests.size(),
                                                    Status::Unavailable("not completed"));
    size_t pending = requests.size();
    for (size_t i = 0; i < requests.size(); ++i) {
      transport_->Send(std::move(requests[i]), [&, i](Result<adapters::HttpResponse> r) {
        out[i] = std::move(r);
        if (--pending == 0) {
          io_.stop();
        }
      });
    }
    io_.restart();
    io_.run();
    return out;
  }

  Result<adapters::HttpResponse> SendOne(adapters::HttpRequest r) {
    return std::move(SendAll({std::move(r)})[0]);
  }

  boost::asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<adapters::HttpTransport> transport_;
};

}  // namespace egress
