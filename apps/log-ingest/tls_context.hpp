// The TLS settings of a `log-ingest serve` input, as an OpenSSL context for Boost.Asio: TLS 1.2
// or later, the certificate chain and key from PEM files, and, when the input names a client CA,
// every client must present a certificate that CA signed (the handshake fails otherwise).
//
// Contract: throws std::runtime_error naming the input, the setting and the file when a file
// cannot be read or the key does not match the certificate. The context is immutable once made
// and may be shared by every connection of the input.
#pragma once

#include <memory>

#include <boost/asio/ssl/context.hpp>

#include "serve_config.hpp"

namespace conveyor::log_ingest {

std::unique_ptr<boost::asio::ssl::context> make_tls_context(const InputConfig& input);

}  // namespace conveyor::log_ingest
