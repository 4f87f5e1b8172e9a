#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/simulator/simulator.h"
#include "tests/support/fake_clock.h"

namespace egress::sim {

// Builds a POST as the HTTP server would hand it over (lower-case header names).
inline SimRequest Post(std::string target, std::string body,
                       std::initializer_list<std::pair<std::string, std::string>> headers = {}) {
  SimRequest req;
  req.method = "POST";
  size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    req.query = target.substr(q + 1);
  }
  req.headers.assign(headers.begin(), headers.end());
  req.body = std::move(body);
  return req;
}

inline std::string HeaderOf(const SimResponse& r, const std::string& name) {
  for (const auto& [key, value] : r.headers) {
    if (key == name) {
      return value;
    }
  }
  return "";
}

inline nlohmann::json BodyOf(const SimResponse& r) {
  return nlohmann::json::parse(r.body, nullptr, false);
}

// A Simulator over a FakeClock, failing the test on a bad config.
inline std::unique_ptr<Simulator> MakeSimulator(const FakeClock& clock, std::string config) {
  auto sim = Simulator::Create(clock, std::move(config));
  EXPECT_TRUE(sim.has_value()) << sim.status().ToString();
  return sim.has_value() ? std::move(*sim) : nullptr;
}

// The counters of one destination from the stats document.
inline nlohmann::json StatsOf(Simulator& sim, const std::string& dest) {
  nlohmann::json stats = nlohmann::json::parse(sim.StatsJson());
  return stats["destinations"].value(dest, nlohmann::json::object());
}

}  // namespace egress::sim
