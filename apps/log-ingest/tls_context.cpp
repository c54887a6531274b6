// make_tls_context: OpenSSL through Boost.Asio's ssl::context.
#include "tls_context.hpp"

#include <openssl/ssl.h>

#include <stdexcept>
#include <string>

namespace conveyor::log_ingest {

namespace ssl = boost::asio::ssl;

std::unique_ptr<ssl::context> make_tls_context(const InputConfig& input) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  std::string prefix = "input '";
  prefix.append(input.name).append("': tls.");
  const auto fail = [&prefix](const char* setting, const std::string& file,
                              const boost::system::system_error& error) {
    std::string message = prefix;
    message.append(setting).append(": cannot use '").append(file).append("': ");
    throw std::runtime_error(message.append(error.code().message()));
  };
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use);
  // A client may not renegotiate (each would cost a handshake's private-key operation): OpenSSL 3
  // refuses it already; 1.1.1 does not.
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_RENEGOTIATION);
  try {
    context->use_certificate_chain_file(input.tls.cert);
  } catch (const boost::system::system_error& error) {
    fail("cert", input.tls.cert, error);
  }
  try {
    context->use_private_key_file(input.tls.key, ssl::context::pem);
  } catch (const boost::system::system_error& error) {
    fail("key", input.tls.key, error);
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    std::string message = prefix;
    message.append("key '").append(input.tls.key).append("' is not the key of tls.cert '");
    throw std::runtime_error(message.append(input.tls.cert).append("'"));
  }
  if (!input.tls.client_ca.empty()) {
    try {
      context->load_verify_file(input.tls.client_ca);
    } catch (const boost::system::system_error& error) {
      fail("client_ca", input.tls.client_ca, error);
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return context;
}

}  // namespace conveyor::log_ingest
