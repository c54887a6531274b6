// The line parsers. Each fills a Record with views into the line and returns nullptr, or returns
// why the line is not of its format (a static string, also the dead-letter reason) and leaves the
// record in an unspecified state. None of them throws, allocates (except JSON's other fields),
// or reads outside the line.
//
//   common    NCSA common log format:   host ident user [time] "request" status bytes
//   combined  Apache combined:           common + "referrer" "user agent"
//   json      one JSON object per line (simdjson); see JsonParser
//   syslog    RFC 5424 ("<pri>1 timestamp host app procid msgid [sd] msg") and RFC 3164
//             ("<pri>Mmm dd hh:mm:ss host tag[pid]: msg", the "<pri>" optional as in files)
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

using ParseError = const char*;

ParseError parse_common(std::string_view line, Record& record) noexcept;
ParseError parse_combined(std::string_view line, Record& record) noexcept;

// RFC 3164 lines carry no year: `year` is assumed (the current year, by default).
ParseError parse_syslog(std::string_view line, Record& record, int year) noexcept;

// Strings that a parser had to rewrite (JSON strings with escapes), kept as long as the records
// that point into them. A deque, so that adding one never moves the others.
using Arena = std::deque<std::string>;

// JSON lines: maps the usual keys of access logs onto the record (first match wins; a dotted
// name is a path into nested objects, or a key written with its dots) and keeps every other
// top-level key in `extra`. Keys of Apache/nginx via Fluentd or Fluent Bit, nginx JSON, Caddy,
// Traefik and the Elastic Common Schema (ECS):
//   time       time, timestamp, @timestamp, ts, StartUTC, start_time: RFC 3339 (any fraction,
//              zone or none, 'T' or space), CLF, or epoch s/ms/us/ns by magnitude (number or text)
//   host       remote_addr, client_ip, ClientHost, client, host, request.remote_ip,
//              request.client_ip, source.ip, source.address, client.ip, client.address
//   user       remote_user, user, ClientUsername, user.name
//   method     method, request_method, RequestMethod, request.method, http.request.method
//   path       path, uri, request_uri, RequestPath, url, request.uri, url.path, url.original
//   protocol   protocol, server_protocol, RequestProtocol, request.proto, http.version
//   status     status, status_code, code, DownstreamStatus, response.status,
//              http.response.status_code
//   bytes      bytes, body_bytes_sent, bytes_sent, size, DownstreamContentSize,
//              http.response.body.bytes, http.response.bytes
//   referrer   referrer, referer, http_referer, request.headers.Referer, request_Referer,
//              http.request.referrer
//   agent      user_agent, agent, http_user_agent, request.headers.User-Agent,
//              request_User-Agent, user_agent.original (an array's first string counts)
//   duration   duration, request_time, response_time (seconds); Duration, event.duration (ns)
// A time field that is there but not understood sets Record::time_unparsed and stays in `extra`.
// One On-Demand pass reads the whole line: a line that is not valid JSON is rejected.
// Not thread-safe: one per worker.
class JsonParser {
 public:
  JsonParser();
  ~JsonParser();
  JsonParser(const JsonParser&) = delete;
  JsonParser& operator=(const JsonParser&) = delete;
  // `capacity`: bytes readable from line.data() on (at least line.size()); with 64 to spare the
  // line is parsed in place, else it is copied first.
  ParseError parse(std::string_view line, std::size_t capacity, Record& record,
                   Arena& arena) noexcept;

 private:
  struct State;  // simdjson's parser, and a padded copy of lines that need one
  std::unique_ptr<State> state_;
};

// Seconds since the epoch of a civil UTC date and time (proleptic Gregorian).
std::int64_t epoch_seconds(int year, int month, int day, int hour, int minute, int second) noexcept;
// RFC 3339 / ISO 8601 ("2024-02-18T02:29:57.123+08:00", "...Z"); false if it is not one.
bool parse_rfc3339(std::string_view text, std::int64_t& seconds) noexcept;
// Common Log Format ("10/Oct/2000:13:55:36 -0700"); false if it is not one.
bool parse_clf_time(std::string_view text, std::int64_t& seconds) noexcept;
// "Jan".."Dec" -> 1..12, else 0.
int month_number(std::string_view name) noexcept;

}  // namespace conveyor::stages
