#pragma once

// Private to the HTTP server (http_server.cc, http_session.cc): what the server and its
// connections share, and the start of one connection.

#include <array>
#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/service/api/http_server.h"

namespace egress::service {

// What the server and its sessions share; sessions may outlive the server. Loop thread only.
struct HttpServerShared : std::enable_shared_from_this<HttpServerShared> {
  HttpServerShared(boost::asio::io_context& io, HttpServerOptions o, HttpHandler h)
      : options(std::move(o)), handler(std::move(h)), release_timer(io) {}

  // Counts `n` more bytes of request body held for `owner`; false (nothing counted) when the
  // total would pass max_body_bytes_in_flight or the owner's half of it.
  bool TakeBodyBytes(const std::string& owner, size_t n);
  // Gives back what TakeBodyBytes counted; asks for a memory release after a large body.
  void GiveBodyBytes(const std::string& owner, size_t n);
  // Asks for a memory release (at most once a second) when `n` bytes of a request's or a
  // response's body were freed and they are many (a /metrics of 10,000 tenants is ~9 MiB).
  void ReleaseAfter(size_t n);

  HttpServerOptions options;
  HttpHandler handler;
  bool draining = false;
  HttpServerStats stats;
  std::unordered_map<std::string, size_t> per_address;  // open connections by AddressKey
  size_t health_open = 0;                               // connections in a health slot
  std::unordered_map<std::string, size_t> body_owners;  // body bytes held by owner
  // What lingering connections read lands here and is dropped (one thread: nobody reads it).
  std::array<char, 16 << 10> discard{};
  boost::asio::steady_timer release_timer;
  bool release_armed = false;
};

// Serves one accepted connection until it closes. `address_key` (AddressKey of the peer, empty
// when the peer is not counted per address) is given back from per_address when it ends;
// `health_only`: a health slot, answering one probe.
void StartSession(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<HttpServerShared> shared,
                  std::string address_key, bool health_only);

}  // namespace egress::service
