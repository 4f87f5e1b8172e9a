#pragma once

#include <chrono>

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>

namespace egress::sim {

// Sockets and timers bound to a connection's strand: handlers run there without wrapping, and
// no type-erased executor is copied (and allocated) per operation. Internal to the server
// (http_server.cc, http1_session.h, h2_session.cc).
using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;
using TlsStream = boost::asio::ssl::stream<Socket>;
using Timer =
    boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                      boost::asio::wait_traits<std::chrono::steady_clock>, Strand>;

// A connection with no request for between one and two of these is closed.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
// The largest request body taken, on either framing. Larger: HTTP/1.1 drops the connection,
// HTTP/2 resets the stream.
constexpr uint64_t kBodyLimit = 8 * 1024 * 1024;

inline Socket& LowestLayer(Socket& s) { return s; }
inline Socket& LowestLayer(TlsStream& s) { return s.next_layer(); }

}  // namespace egress::sim
