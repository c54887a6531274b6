// parse_endpoint and url: the listeners' addresses.
#include "service_input.hpp"

#include <charconv>
#include <stdexcept>

namespace conveyor::log_ingest {

Endpoint parse_endpoint(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::invalid_argument("'" + text + "' is not HOST:PORT");
  }
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535 ||
      port_text.empty()) {
    throw std::invalid_argument("'" + text + "': the port must be a number from 0 to 65535");
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code bad;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, bad);
  if (bad) {
    throw std::invalid_argument("'" + text + "': '" + host +
                                "' is not an IP address (IPv6 goes in brackets)");
  }
  return {address, static_cast<std::uint16_t>(port)};
}

std::string url(const char* scheme, const boost::asio::ip::address& address, std::uint16_t port) {
  std::string text(scheme);
  text.append("://");
  if (address.is_v6()) {
    text.append("[").append(address.to_string()).append("]");
  } else {
    text.append(address.to_string());
  }
  return text.append(":").append(std::to_string(port));
}

}  // namespace conveyor::log_ingest
