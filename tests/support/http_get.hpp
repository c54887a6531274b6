// A blocking HTTP/1.1 GET on loopback (Boost.Beast), for tests of the metrics endpoint.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace conveyor::testing {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string content_type;
};

// GET http://127.0.0.1:<port><target>, with basic auth when `authorization` is given (the
// base64 of user:password). Throws on a connection error; gives up after `timeout`.
inline HttpResponse http_get(std::uint16_t port, const std::string& target,
                             const std::string& authorization = {},
                             std::chrono::seconds timeout = std::chrono::seconds(10)) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context context;
  beast::tcp_stream stream(context);
  stream.expires_after(timeout);
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!authorization.empty()) request.set(http::field::authorization, "Basic " + authorization);
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  beast::error_code ignored;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  return HttpResponse{static_cast<int>(response.result_int()), response.body(),
                      std::string(response[http::field::content_type])};
}

}  // namespace conveyor::testing
