// systemd readiness for `log-ingest serve` under a `Type=notify` unit, through libsystemd's
// sd_notify: READY=1 once every listener is bound and the pipeline runs, RELOADING=1 while SIGHUP
// is handled, STOPPING=1 when the drain begins, and a STATUS= line for `systemctl status`.
//
// Contract: each call sends one datagram to $NOTIFY_SOCKET and returns; without that variable (not
// started by systemd), or in a build without libsystemd, it does nothing. Any thread may call.
#pragma once

#include <string>

namespace conveyor::log_ingest {

void notify_ready(const std::string& status);
void notify_reloading();
void notify_stopping(const std::string& status);

}  // namespace conveyor::log_ingest
