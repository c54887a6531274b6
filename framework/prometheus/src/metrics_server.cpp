// MetricsServer: prometheus-cpp's Exposer, with /healthz and /readyz answered by a civetweb
// request callback, and basic auth from a file.
#include "conveyor/prometheus/metrics_server.hpp"

#include <CivetServer.h>
#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <string_view>
#include <thread>

#include <prometheus/exposer.h>
#include <boost/archive/iterators/binary_from_base64.hpp>
#include <boost/archive/iterators/transform_width.hpp>

#include "conveyor/prometheus/process_metrics.hpp"
#include "rejected_requests.hpp"

namespace conveyor::prometheus {

namespace {

// civetweb's callback is a plain function; it finds the server by the port it was asked on.
std::mutex registry_mutex;
std::map<int, MetricsServer*> servers_by_port;

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return status >= 500 ? "Service Unavailable" : "Error";
  }
}

// `extra`: more header lines, each ending in CRLF.
int answer(mg_connection* connection, int status, std::string_view body,
           const std::string& type = "text/plain; charset=utf-8", const std::string& extra = "") {
  mg_printf(connection,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
            status, reason(status), type.c_str(), body.size(), extra.c_str());
  mg_write(connection, body.data(), body.size());
  return status;
}

int begin_request(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  if (request == nullptr || request->local_uri == nullptr) return 0;
  const std::string_view uri = request->local_uri;
  if (uri == "/healthz") return answer(connection, 200, "ok\n");
  MetricsServer* server = nullptr;
  {
    std::lock_guard lock(registry_mutex);
    const auto found = servers_by_port.find(request->server_port);
    if (found != servers_by_port.end()) server = found->second;
  }
  if (uri == "/readyz") {
    const bool ready = server != nullptr && server->is_ready();
    return ready ? answer(connection, 200, "ready\n") : answer(connection, 503, "not ready\n");
  }
  const auto unauthorized = [&] {
    server->rejected(401);
    return answer(connection, 401, "unauthorized\n", "text/plain; charset=utf-8",
                  "WWW-Authenticate: Basic realm=\"conveyor\"\r\n");
  };
  if (uri == "/metrics" || uri.starts_with("/metrics/")) {
    // Refused here, where it is counted; the Exposer's own check of the same users stays behind.
    if (server != nullptr && !server->authorized(mg_get_header(connection, "Authorization"))) {
      return unauthorized();
    }
    return 0;  // the Exposer's
  }
  const std::function<Page(std::string_view)> page =
      server != nullptr ? server->page(std::string(uri)) : nullptr;
  if (!page) return 0;  // the Exposer answers 404
  if (!server->authorized(mg_get_header(connection, "Authorization"))) return unauthorized();
  if (std::string_view(request->request_method) != "GET") {
    server->rejected(405);
    return answer(connection, 405, "GET only\n", "text/plain; charset=utf-8", "Allow: GET\r\n");
  }
  const Page result = page(request->query_string != nullptr ? request->query_string : "");
  if (result.status >= 400 && result.status < 500) server->rejected(result.status);
  return answer(connection, result.status, result.body, result.content_type);
}

// "Basic dXNlcjpwYXNz" -> "user:pass"; empty if it is not basic auth or not base64.
std::string basic_credentials(const char* header) {
  constexpr std::string_view scheme = "Basic ";
  if (header == nullptr || std::string_view(header).substr(0, scheme.size()) != scheme) return {};
  std::string encoded(header + scheme.size());
  while (!encoded.empty() && (encoded.back() == '=' || encoded.back() == ' '))
    encoded.pop_back();
  // No base64 text is this long, and the decoder would read past its end for the last character.
  if (encoded.size() % 4 == 1) return {};
  using Decoder = boost::archive::iterators::transform_width<
      boost::archive::iterators::binary_from_base64<std::string::const_iterator>, 8, 6>;
  try {
    return {Decoder(encoded.cbegin()), Decoder(encoded.cend())};
  } catch (const std::exception&) {
    return {};  // not base64
  }
}

const CivetCallbacks& callbacks() {
  static const CivetCallbacks instance = [] {
    CivetCallbacks result;
    result.begin_request = begin_request;
    return result;
  }();
  return instance;
}

// Not 0 where the texts differ, in time that depends on the given text's length only: not on
// where they differ, nor on the expected text's length (the loop runs over the given text, and
// reads the expected one cyclically).
unsigned char difference(std::string_view given, std::string_view expected) {
  unsigned char differs = given.size() == expected.size() ? 0 : 1;
  const std::string_view known = expected.empty() ? std::string_view("\0", 1) : expected;
  std::size_t j = 0;
  for (const char c : given) {
    differs |= static_cast<unsigned char>(c ^ known[j]);
    j = (j + 1) * static_cast<std::size_t>(j + 1 != known.size());  // no branch
  }
  return differs;
}

// Every entry's user and password are both compared, and the two differences joined without a
// branch, so the time does not tell which user matched, nor whether any did.
bool granted(const std::vector<std::pair<std::string, std::string>>& users, std::string_view user,
             std::string_view password) {
  bool any = false;
  for (const auto& [known_user, known_password] : users) {
    const unsigned char differs = static_cast<unsigned char>(difference(user, known_user) |
                                                             difference(password, known_password));
    any |= differs == 0;
  }
  return any;
}

// Connects to the server's own listening socket and hangs up. civetweb's accepting thread checks
// its stop flag only between polls of the listening sockets, two seconds apart when no one
// connects; a connection ends the poll at once.
void knock(const std::string& host, std::uint16_t port) {
  std::string numeric = host;
  if (numeric.size() > 2 && numeric.front() == '[') numeric = numeric.substr(1, numeric.size() - 2);
  if (numeric == "localhost" || numeric == "0.0.0.0") numeric = "127.0.0.1";
  if (numeric == "::") numeric = "::1";
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(numeric.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    (void)::connect(fd, found->ai_addr, found->ai_addrlen);  // refused once it has stopped
    ::close(fd);
  }
  ::freeaddrinfo(found);
}

}  // namespace

ListenAddress parse_listen_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw MetricsServerError("metrics: '" + text +
                             "' is not HOST:PORT (for example 127.0.0.1:9464)");
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || value > 65535) {
    throw MetricsServerError("metrics: '" + port + "' in '" + text + "' is not a port (0-65535)");
  }
  address.port = static_cast<std::uint16_t>(value);
  const bool bracketed = address.host.front() == '[' && address.host.back() == ']';
  const bool plain = address.host.find_first_of("[]:") == std::string::npos;
  if (!bracketed && !plain) {
    throw MetricsServerError("metrics: write an IPv6 address in brackets, as in [::1]:9464");
  }
  return address;
}

std::vector<std::pair<std::string, std::string>> read_auth_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw MetricsServerError("metrics: cannot read the auth file " + path);
  std::vector<std::pair<std::string, std::string>> users;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == line.size()) {
      throw MetricsServerError("metrics: " + path + ":" + std::to_string(number) +
                               ": expected user:password");
    }
    users.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  if (users.empty()) throw MetricsServerError("metrics: the auth file " + path + " names no user");
  return users;
}

MetricsServer::MetricsServer(const MetricsServerOptions& options)
    : rejected_(std::make_shared<RejectedRequests>()) {
  const ListenAddress address = parse_listen_address(options.listen);
  host_ = address.host;
  const std::string host = host_ == "localhost" ? "127.0.0.1" : host_;
  std::vector<std::pair<std::string, std::string>> users;
  if (!options.auth_file.empty()) users = read_auth_file(options.auth_file);
  try {
    // civetweb serves each connection on one of its threads until the connection ends; the
    // timeout bounds how long a client that sends or reads nothing holds one (its default is 30 s).
    exposer_ = std::make_unique<::prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", host + ":" + std::to_string(address.port),
                                 "num_threads", std::to_string(server_threads),
                                 "request_timeout_ms", std::to_string(request_timeout.count())},
        &callbacks());
  } catch (const std::exception& error) {
    throw MetricsServerError("metrics: cannot listen on " + options.listen +
                             ": the port is taken, or the address is not one of this host's (" +
                             error.what() + ")");
  }
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? address.port : static_cast<std::uint16_t>(ports.front());
  users_ = users;
  if (!users.empty()) {
    exposer_->RegisterAuth(
        [users = std::move(users)](const std::string& user, const std::string& password) {
          return granted(users, user, password);
        },
        "conveyor");
  }
  add(std::make_shared<ProcessMetrics>());
  add(rejected_);
  std::lock_guard lock(registry_mutex);
  servers_by_port[port_] = this;
}

MetricsServer::~MetricsServer() {
  {
    std::lock_guard lock(registry_mutex);
    servers_by_port.erase(port_);
  }
  // Stopping the server's threads (before the collectables go) waits for the accepting thread to
  // see the stop flag; knocking on the port meanwhile makes that milliseconds instead of seconds.
  std::jthread knocker([host = host_, port = port_](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      knock(host, port);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  exposer_.reset();
}

void MetricsServer::add(std::shared_ptr<::prometheus::Collectable> collectable) {
  std::lock_guard lock(mutex_);
  exposer_->RegisterCollectable(collectable);
  collectables_.push_back(std::move(collectable));
}

void MetricsServer::set_readiness(std::function<bool()> ready) {
  std::lock_guard lock(mutex_);
  readiness_ = std::move(ready);
}

void MetricsServer::add_page(const std::string& path,
                             std::function<Page(std::string_view query)> page) {
  std::lock_guard lock(mutex_);
  pages_[path] = std::move(page);
}

std::function<Page(std::string_view)> MetricsServer::page(const std::string& path) const {
  std::lock_guard lock(mutex_);
  const auto found = pages_.find(path);
  return found != pages_.end() ? found->second : nullptr;
}

bool MetricsServer::authorized(const char* header) const {
  if (users_.empty()) return true;
  const std::string credentials = basic_credentials(header);
  const auto colon = credentials.find(':');
  if (colon == std::string::npos) return false;
  const std::string_view user = std::string_view(credentials).substr(0, colon);
  const std::string_view password = std::string_view(credentials).substr(colon + 1);
  return granted(users_, user, password);
}

void MetricsServer::rejected(int status) {
  rejected_->add(status);
}

bool MetricsServer::is_ready() const {
  std::function<bool()> ready;
  {
    std::lock_guard lock(mutex_);
    ready = readiness_;
  }
  return !ready || ready();
}

std::string MetricsServer::address() const {
  return host_ + ":" + std::to_string(port_);
}

}  // namespace conveyor::prometheus
