// sd_notify, when log-ingest is built with libsystemd.
#include "systemd_notify.hpp"

#ifdef CONVEYOR_HAS_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace conveyor::log_ingest {

namespace {

void notify(const std::string& state) {
#ifdef CONVEYOR_HAS_SYSTEMD
  (void)sd_notify(0, state.c_str());  // < 0: the socket is gone; the service runs on regardless
#else
  (void)state;
#endif
}

}  // namespace

void notify_ready(const std::string& status) {
  std::string state = "READY=1\nSTATUS=";
  notify(state.append(status));
}

void notify_reloading() {
  notify("RELOADING=1");
}

void notify_stopping(const std::string& status) {
  std::string state = "STOPPING=1\nSTATUS=";
  notify(state.append(status));
}

}  // namespace conveyor::log_ingest
