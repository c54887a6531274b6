// The sample generator: splitmix64 random numbers over fixed tables of clients, paths and agents.
#include "sample.hpp"

#include <array>
#include <cstdio>
#include <string_view>

#include "conveyor/stages/json_writer.hpp"

namespace conveyor::log_ingest {

namespace {

constexpr std::array<std::string_view, 24> sections = {"",
                                                       "index.html",
                                                       "about",
                                                       "blog",
                                                       "blog/feed.xml",
                                                       "products",
                                                       "products/widgets",
                                                       "products/gadgets",
                                                       "cart",
                                                       "checkout",
                                                       "login",
                                                       "logout",
                                                       "search",
                                                       "api/v1/items",
                                                       "api/v1/orders",
                                                       "api/v1/users",
                                                       "api/v2/items",
                                                       "static/css/site.css",
                                                       "static/js/app.js",
                                                       "static/img/logo.png",
                                                       "favicon.ico",
                                                       "robots.txt",
                                                       "docs/getting-started",
                                                       "healthz"};

constexpr std::array<std::string_view, 12> agents = {
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.0 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
    "python-requests/2.32.3",
    "Go-http-client/1.1",
    "Prometheus/2.42.0",
    "Wget/1.21.3",
    "-"};

constexpr std::array<std::string_view, 5> referrers = {
    "-", "https://www.google.com/", "https://duckduckgo.com/", "https://example.com/blog",
    "https://news.ycombinator.com/"};

constexpr std::array<std::string_view, 12> months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

SampleGenerator::SampleGenerator(SampleOptions options)
    : options_(options), state_(options.seed), time_(1'793'491'200) {}  // 2026-11-01T00:00:00Z

std::uint64_t SampleGenerator::random() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

std::uint64_t SampleGenerator::skewed(std::uint64_t n) {
  // The smaller of three draws: the head gets most of the mass.
  const std::uint64_t a = below(n);
  const std::uint64_t b = below(n);
  const std::uint64_t c = below(n);
  return std::min(a, std::min(b, c));
}

bool SampleGenerator::next(std::string& out) {
  if (made_ == options_.lines) return false;
  ++made_;
  if (below(100) < 2) ++time_;  // about a hundred requests a second... on average
  if (below(100) == 0) time_ += static_cast<std::int64_t>(below(3));

  const std::uint64_t client = skewed(3000);
  char host[32];
  std::snprintf(host, sizeof host, "%llu.%llu.%llu.%llu",
                static_cast<unsigned long long>(10 + client % 200),
                static_cast<unsigned long long>(client * 7 % 256),
                static_cast<unsigned long long>(client * 13 % 256),
                static_cast<unsigned long long>(1 + client % 254));
  std::string path = "/";
  path += sections[skewed(sections.size())];
  if (path.starts_with("/api/") && below(3) == 0) {
    path += '/';
    path += std::to_string(below(5000));
  }
  if (path == "/search") {
    path += "?q=";
    path += std::to_string(skewed(400));
  }
  const std::uint64_t m = below(100);
  const std::string_view method = m < 85   ? "GET"
                                  : m < 95 ? "POST"
                                  : m < 98 ? "HEAD"
                                  : m < 99 ? "PUT"
                                           : "DELETE";
  const std::uint64_t s = below(1000);
  const int status = s < 780   ? 200
                     : s < 860 ? 304
                     : s < 920 ? 404
                     : s < 950 ? 301
                     : s < 965 ? 302
                     : s < 975 ? 403
                     : s < 985 ? 201
                     : s < 993 ? 500
                     : s < 997 ? 503
                               : 400;
  const std::int64_t bytes = status == 304 ? 0 : static_cast<std::int64_t>(200 + skewed(60000));
  const std::string_view agent = agents[skewed(agents.size())];
  const std::string_view referrer = referrers[skewed(referrers.size())];
  const double duration =
      0.0005 + static_cast<double>(skewed(2000)) / 1000.0 * (status >= 500 ? 4 : 1);

  if (options_.format == SampleFormat::json) {
    out += "{\"time\":\"";
    out += stages::format_time(time_);
    out += "\",\"remote_addr\":\"";
    out += host;
    out += "\",\"method\":\"";
    out += method;
    out += "\",\"path\":";
    stages::append_json_string(out, path);
    out += ",\"protocol\":\"HTTP/1.1\",\"status\":" + std::to_string(status) +
           ",\"bytes\":" + std::to_string(bytes) + ",\"referrer\":";
    stages::append_json_string(out, referrer);
    out += ",\"user_agent\":";
    stages::append_json_string(out, agent);
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.4f", duration);
    out += ",\"request_time\":";
    out += seconds;
    out += "}\n";
  } else {
    // "2026-11-01T00:00:00Z" -> "[01/Nov/2026:00:00:00 +0000]"
    const std::string iso = stages::format_time(time_);
    const auto month = static_cast<std::size_t>((iso[5] - '0') * 10 + (iso[6] - '0') - 1);
    char stamp[40];
    std::snprintf(stamp, sizeof stamp, "[%.2s/%s/%.4s:%.8s +0000]", iso.c_str() + 8,
                  months[month].data(), iso.c_str(), iso.c_str() + 11);
    const std::size_t start = out.size();
    out += host;
    out += " - - ";
    out += stamp;
    out += " \"";
    out += method;
    out += ' ';
    out += path;
    out += " HTTP/1.1\" " + std::to_string(status) + ' ' + std::to_string(bytes) + " \"";
    out += referrer;
    out += "\" \"";
    out += agent;
    out += "\"\n";
    if (options_.malformed && below(1000) == 0) {
      // Damage the line the way real logs are damaged.
      const std::size_t length = out.size() - start;
      switch (below(3)) {
        case 0:
          out.resize(start + length / 2);
          out += '\n';
          break;  // truncated
        case 1:
          out.erase(out.rfind('"', out.size() - 2), 1);
          break;  // lost a quote
        default:
          out.resize(start);
          for (int i = 0; i < 40; ++i) {
            const auto c = static_cast<char>(1 + below(255));  // any byte but NUL
            out += c == '\n' ? 'x' : c;
          }
          out += '\n';
      }
    }
  }
  return true;
}

std::string make_sample(const SampleOptions& options) {
  SampleGenerator generator(options);
  std::string text;
  text.reserve(options.lines * 200);
  while (generator.next(text)) {
  }
  return text;
}

}  // namespace conveyor::log_ingest
