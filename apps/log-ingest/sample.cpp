// The sample generator: splitmix64 random numbers over fixed tables of paths, agents and
// referrers. The small profile is the original generator, kept byte for byte; Traffic makes the
// realistic and distinct ones.
#include "sample.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
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

// ---- The realistic and distinct profiles ------------------------------------------------------

// What a request is for: it decides the status codes and sizes that are likely.
enum class Kind : std::uint8_t {
  page,
  asset,
  api,
  image,
  probe,
  scanner,
  beacon,
  download,
  change
};

struct FixedPath {
  std::string_view path;
  std::uint16_t weight;  // per mille of GET requests
  Kind kind;
  std::uint32_t bytes;  // of a 200 (a static file's size does not change)
};

// The popular head: pages everybody sees, the build's assets, probes and scanners.
constexpr FixedPath fixed_paths[] = {
    {"/", 45, Kind::page, 21874},
    {"/healthz", 30, Kind::probe, 2},
    {"/favicon.ico", 16, Kind::asset, 15086},
    {"/robots.txt", 3, Kind::asset, 312},
    {"/sitemap.xml", 2, Kind::asset, 48211},
    {"/login", 7, Kind::page, 9120},
    {"/cart", 7, Kind::page, 14550},
    {"/checkout", 3, Kind::page, 16873},
    {"/about", 1, Kind::page, 11240},
    {"/contact", 1, Kind::page, 8755},
    {"/blog", 3, Kind::page, 25601},
    {"/products", 7, Kind::page, 64310},
    {"/api/v1/cart", 7, Kind::api, 1834},
    {"/api/v1/session", 6, Kind::api, 412},
    {"/apple-touch-icon.png", 2, Kind::asset, 7362},
    {"/manifest.webmanifest", 1, Kind::asset, 611},
    {"/wp-login.php", 2, Kind::scanner, 0},
    {"/.env", 1, Kind::scanner, 0},
    {"/downloads/catalog-2024.pdf", 1, Kind::download, 4718220},
    {"/static/js/app.3f9a1c.js", 22, Kind::asset, 248193},
    {"/static/js/vendor.8b2e4d.js", 21, Kind::asset, 612884},
    {"/static/js/runtime.c41d07.js", 14, Kind::asset, 3410},
    {"/static/css/site.5c7d21.css", 22, Kind::asset, 88417},
    {"/static/fonts/inter-var.2b9f0e.woff2", 8, Kind::asset, 98452},
    {"/static/img/logo.svg", 18, Kind::asset, 4210},
    {"/static/img/hero-summer.webp", 7, Kind::asset, 184220},
    {"/static/img/sprite.1e8a3f.svg", 7, Kind::asset, 23911},
};

// The long tail: paths with ids and query strings, drawn per request.
enum class TailPath : std::uint8_t {
  product,
  product_image,
  order,
  orders_of_user,
  item,
  search,
  blog,
  account,
  beacon
};

struct TailWeight {
  TailPath path;
  std::uint16_t weight;  // per mille of GET requests
};

constexpr TailWeight tail_paths[] = {
    {TailPath::product, 150},       {TailPath::product_image, 110}, {TailPath::order, 130},
    {TailPath::orders_of_user, 70}, {TailPath::item, 70},           {TailPath::search, 80},
    {TailPath::blog, 45},           {TailPath::account, 30},        {TailPath::beacon, 51},
};

constexpr int per_mille_total() {
  int total = 0;
  for (const FixedPath& fixed : fixed_paths)
    total += fixed.weight;
  for (const TailWeight& tail : tail_paths)
    total += tail.weight;
  return total;
}
static_assert(per_mille_total() == 1000, "the GET paths' weights add up to 1000");

struct WeightedText {
  std::string_view text;
  std::uint16_t weight;
};

// Browsers of mid-2024, crawlers, and programs; a client keeps its agent.
constexpr WeightedText user_agents[] = {
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.0.0 Safari/537.36",
     160},
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/124.0.0.0 Safari/537.36",
     50},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.0.0 Safari/537.36",
     60},
    {"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 "
     "Safari/537.36",
     15},
    {"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.0.0 Mobile Safari/537.36",
     120},
    {"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.6422.113 Mobile Safari/537.36",
     10},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
     110},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1",
     30},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) CriOS/125.0.6422.80 Mobile/15E148 Safari/604.1",
     10},
    {"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/17.5 Mobile/15E148 Safari/604.1",
     15},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/17.5 Safari/605.1.15",
     40},
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:126.0) Gecko/20100101 Firefox/126.0", 30},
    {"Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0", 10},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:126.0) Gecko/20100101 Firefox/126.0", 8},
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0",
     45},
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/125.0.0.0 Safari/537.36 OPR/110.0.0.0",
     6},
    {"Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
     "SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
     12},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
     "+http://www.google.com/bot.html) Chrome/125.0.6422.141 Safari/537.36",
     25},
    {"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", 10},
    {"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", 15},
    {"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", 5},
    {"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", 8},
    {"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", 6},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
     4},
    {"DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", 2},
    {"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", 5},
    {"Twitterbot/1.0", 2},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.0; "
     "+https://openai.com/gptbot)",
     4},
    {"curl/7.88.1", 6},
    {"curl/8.7.1", 4},
    {"Wget/1.21.3", 2},
    {"python-requests/2.31.0", 6},
    {"Go-http-client/2.0", 3},
    {"okhttp/4.12.0", 4},
    {"axios/1.7.2", 2},
    {"Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", 2},
    {"-", 2},
};

constexpr std::string_view probe_agent = "kube-probe/1.29";
constexpr std::array<std::string_view, 3> probe_hosts = {"10.42.0.1", "10.42.1.1", "10.42.2.1"};
constexpr std::string_view site = "https://shop.example.com";

constexpr WeightedText search_engines[] = {
    {"https://www.google.com/", 70},  {"https://www.bing.com/", 12},
    {"https://duckduckgo.com/", 6},   {"https://yandex.ru/", 5},
    {"https://search.yahoo.com/", 4}, {"https://www.ecosia.org/", 3},
};
constexpr std::array<std::string_view, 6> other_sites = {"https://t.co/",
                                                         "https://www.facebook.com/",
                                                         "https://l.instagram.com/",
                                                         "https://www.reddit.com/",
                                                         "https://news.ycombinator.com/",
                                                         "android-app://com.google.android.gm/"};

constexpr std::array<std::string_view, 6> users = {"alice",  "bob",   "carol",
                                                   "deploy", "admin", "jenkins"};

// IPv6 prefixes of large access networks and clouds.
constexpr std::array<std::string_view, 8> ipv6_prefixes = {"2a02:810b", "2a01:cb00", "2001:4860",
                                                           "2600:1700", "2a00:23c6", "2406:da14",
                                                           "2003:e6",   "2a0e:97c0"};

constexpr std::array<std::string_view, 96> words = {
    "widget",   "gadget",  "lamp",    "chair",   "table",   "desk",    "sofa",    "mug",
    "kettle",   "toaster", "blender", "knife",   "pan",     "pot",     "plate",   "bowl",
    "jacket",   "shirt",   "jeans",   "sneaker", "boot",    "sock",    "scarf",   "hat",
    "backpack", "wallet",  "watch",   "ring",    "lens",    "camera",  "tripod",  "drone",
    "phone",    "case",    "charger", "cable",   "speaker", "headset", "monitor", "keyboard",
    "mouse",    "router",  "laptop",  "tablet",  "printer", "ink",     "paper",   "pen",
    "red",      "blue",    "green",   "black",   "white",   "grey",    "oak",     "steel",
    "linen",    "wool",    "cotton",  "leather", "bamboo",  "glass",   "compact", "classic",
    "modern",   "vintage", "pro",     "mini",    "max",     "ultra",   "light",   "heavy",
    "outdoor",  "indoor",  "kids",    "travel",  "office",  "kitchen", "garden",  "winter",
    "summer",   "sale",    "new",     "best",    "cheap",   "gift",    "eco",     "smart",
    "wireless", "usb-c",   "4k",      "hdmi",    "guide",   "review",  "how-to",  "vs"};

constexpr std::array<std::string_view, 6> sort_keys = {"price",  "-price",     "date",
                                                       "rating", "popularity", "name"};
constexpr std::array<std::string_view, 5> order_states = {"pending", "paid", "shipped", "delivered",
                                                          "returned"};
constexpr std::array<std::string_view, 6> colors = {"red",   "blue",  "black",
                                                    "white", "green", "grey"};
constexpr std::array<std::string_view, 4> events = {"pageview", "click", "scroll", "add_to_cart"};

// Two hours of traffic from 01/Jun/2024:00:00:00 local time, at +0200 (Central European Summer
// Time), that is 2024-05-31T22:00:00Z.
constexpr std::int64_t first_second = 1'717'192'800;
constexpr std::int64_t span_seconds = std::int64_t{2} * 60 * 60;
constexpr std::int64_t zone_seconds = std::int64_t{2} * 60 * 60;
constexpr std::string_view zone = "+0200";
constexpr std::uint64_t clients = 100'000;

constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

void append_number(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), result.ptr);
}

void append_hex(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value, 16);
  out.append(digits.data(), result.ptr);
}

void append_two_digits(char* at, int value) {
  at[0] = static_cast<char>('0' + value / 10);
  at[1] = static_cast<char>('0' + value % 10);
}

template <typename Table>
const auto& weighted(const Table& table, std::uint64_t draw) {
  for (const auto& entry : table) {
    if (draw < entry.weight) return entry;
    draw -= entry.weight;
  }
  return *std::prev(std::end(table));
}

template <typename Table>
constexpr std::uint64_t total_weight(const Table& table) {
  std::uint64_t total = 0;
  for (const auto& entry : table)
    total += entry.weight;
  return total;
}

}  // namespace

class SampleGenerator::Traffic {
 public:
  explicit Traffic(const SampleOptions& options)
      : options_(options),
        state_(mix(options.seed ^ 0x6c6f672d696e6765ULL)),
        client_salt_(mix(options.seed + 1)),
        expected_lines_(std::max<std::uint64_t>(
            1, options.expected_lines != 0 ? options.expected_lines : options.lines)) {
    path_.reserve(256);
    referrer_.reserve(256);
  }

  // Appends line `index` (from 0); true when it was damaged on purpose.
  bool append(std::string& out, std::uint64_t index) {
    // Time advances evenly over the two hours; a request that took long is logged after
    // requests that came later, with its start time, so a few lines are a second or two early.
    auto time =
        first_second + static_cast<std::int64_t>(index * static_cast<std::uint64_t>(span_seconds) /
                                                 expected_lines_);
    if (below(400) == 0) time -= 1 + static_cast<std::int64_t>(below(2));
    if (time != stamp_time_) render_stamp(time);

    const Request request = draw_request(index);
    const std::size_t start = out.size();
    if (options_.format == SampleFormat::json) {
      append_json(out, request);
    } else {
      append_combined(out, request);
    }
    if (!options_.malformed || below(10'000) >= 3) return false;
    damage(out, start);
    return true;
  }

 private:
  struct Target {
    Kind kind;
    std::uint32_t bytes;  // of a 200, when fixed
  };

  struct Request {
    std::string_view host_literal;  // a probe's address; else `host` is made from `client`
    std::uint64_t client = 0;
    std::string_view user;
    std::string_view method;
    std::string_view protocol;
    int status = 200;
    std::uint64_t bytes = 0;
    std::string_view agent;
  };

  std::uint64_t random() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    return mix(z);
  }
  std::uint64_t below(std::uint64_t n) { return random() % n; }
  std::uint64_t between(std::uint64_t low, std::uint64_t high) { return low + below(high - low); }

  // A client's rank: every octave of ranks (1, 2-3, 4-7, ...) gets the same share of requests,
  // so a rank's share falls as 1/rank (Zipf): a few clients make many requests, most make few.
  std::uint64_t zipf(std::uint64_t n) {
    const auto octave = static_cast<unsigned>(below(static_cast<std::uint64_t>(std::bit_width(n))));
    const std::uint64_t first = (std::uint64_t{1} << octave) - 1;
    const std::uint64_t last = std::min(n, (std::uint64_t{2} << octave) - 1);
    return first + below(last - first);
  }

  // A heavy-tailed size about `median`: its log2 is about normal, with `spread` octaves of
  // standard deviation (a binomial from a popcount, and a piecewise-linear 2^x: no libm, so the
  // bytes are the same on every machine).
  std::uint64_t sized(double median, double spread) {
    const std::uint64_t r = random();
    const int ones = std::popcount(r & 0xffffU) - 8;  // mean 0, standard deviation 2
    const double fraction = static_cast<double>((r >> 16U) & 0xffffU) / 65536.0 - 0.5;
    const double octaves = (ones + fraction) * spread / 2.0;
    const double whole = std::floor(octaves);
    const double value = std::ldexp(median * (1.0 + octaves - whole), static_cast<int>(whole));
    return static_cast<std::uint64_t>(value) + 1;
  }

  Request draw_request(std::uint64_t index) {
    Request request;
    const std::uint64_t m = below(1000);
    request.method = m < 880   ? "GET"
                     : m < 950 ? "POST"
                     : m < 980 ? "HEAD"
                     : m < 990 ? "PUT"
                     : m < 996 ? "DELETE"
                               : "OPTIONS";
    path_.clear();
    Target target{Kind::change, 0};
    if (request.method == "GET" || request.method == "HEAD") {
      target = draw_get_path();
    } else {
      draw_change_path(request.method);
    }
    const Kind kind = target.kind;
    if (options_.profile == SampleProfile::distinct) {
      // A cache buster, as scripts add: unique per line.
      path_ += path_.find('?') == std::string::npos ? "?_=" : "&_=";
      append_number(path_, 1'717'192'800'000ULL + index);
    }

    if (kind == Kind::probe) {
      request.host_literal = probe_hosts[below(probe_hosts.size())];
      request.agent = probe_agent;
      request.user = "-";
      request.protocol = "HTTP/1.1";
    } else {
      request.client = mix(zipf(clients) ^ client_salt_);
      const std::uint64_t identity = request.client;
      request.user = identity % 500 == 0 ? users[(identity >> 20U) % users.size()] : "-";
      const std::uint64_t p = (identity >> 24U) % 100;
      request.protocol = p < 62 ? "HTTP/1.1" : p < 98 ? "HTTP/2.0" : "HTTP/1.0";
      // Most requests come from the client's own browser; some from a second device behind the
      // same address.
      const std::uint64_t device = below(10) == 0 ? mix(identity) : identity;
      request.agent = weighted(user_agents, (device >> 32U) % total_weight(user_agents)).text;
    }
    request.status = draw_status(kind, request.method);
    request.bytes = draw_bytes(kind, request, target.bytes);
    draw_referrer(kind);
    return request;
  }

  Target draw_get_path() {
    std::uint64_t draw = below(1000);
    for (const FixedPath& fixed : fixed_paths) {
      if (draw < fixed.weight) {
        path_ += fixed.path;
        return {fixed.kind, fixed.bytes};
      }
      draw -= fixed.weight;
    }
    switch (weighted(tail_paths, draw).path) {
      case TailPath::product:
        append_product_page(path_);
        return {Kind::page, 0};
      case TailPath::product_image:
        path_ += "/images/products/";
        append_number(path_, between(10'000, 100'000));
        path_ += '/';
        append_number(path_, 1 + below(8));
        path_ += below(3) == 0 ? ".webp" : ".jpg";
        if (below(2) == 0) {
          path_ += "?w=";
          append_number(path_, 160U << below(4));
        }
        return {Kind::image, 0};
      case TailPath::order:
        path_ += "/api/v1/orders";
        if (below(4) != 0) {
          path_ += '/';
          append_number(path_, between(1'000'000, 10'000'000));
          if (below(3) == 0) path_ += "/items";
        }
        if (below(2) == 0) append_listing_query(path_);
        return {Kind::api, 0};
      case TailPath::orders_of_user:
        path_ += "/api/v1/users/";
        append_number(path_, between(100'000, 1'000'000));
        path_ += "/orders";
        if (below(3) != 0) append_listing_query(path_);
        return {Kind::api, 0};
      case TailPath::item:
        path_ += "/api/v2/items/";
        append_number(path_, between(1'000'000, 10'000'000));
        if (below(2) == 0) path_ += "?fields=id,name,price,stock";
        return {Kind::api, 0};
      case TailPath::search:
        append_search(path_);
        return {Kind::page, 0};
      case TailPath::blog:
        append_blog_post(path_);
        return {Kind::page, 0};
      case TailPath::account:
        path_ += "/account/orders/";
        append_number(path_, between(1'000'000, 10'000'000));
        return {Kind::page, 0};
      case TailPath::beacon:
        path_ += "/t.gif?e=";
        path_ += events[below(events.size())];
        path_ += "&sid=";
        append_hex(path_, random() >> 16U);
        return {Kind::beacon, 43};
    }
    return {Kind::page, 0};
  }

  // POST, PUT, DELETE and OPTIONS go to the API and the forms.
  void draw_change_path(std::string_view method) {
    const std::uint64_t d = below(100);
    if (method == "POST") {
      if (d < 35) {
        path_ += "/api/v1/cart/items";
      } else if (d < 65) {
        path_ += "/api/v1/events";
      } else if (d < 78) {
        path_ += "/login";
      } else if (d < 90) {
        path_ += "/api/v1/orders";
      } else if (d < 95) {
        path_ += "/checkout";
      } else {
        path_ += "/api/v1/users/";
        append_number(path_, between(100'000, 1'000'000));
        path_ += "/reviews";
      }
    } else if (method == "PUT") {
      if (d < 60) {
        path_ += "/api/v1/cart/items/";
        append_number(path_, between(1'000'000, 10'000'000));
      } else {
        path_ += "/api/v1/users/";
        append_number(path_, between(100'000, 1'000'000));
        path_ += "/address";
      }
    } else if (method == "DELETE") {
      if (d < 70) {
        path_ += "/api/v1/cart/items/";
        append_number(path_, between(1'000'000, 10'000'000));
      } else {
        path_ += "/api/v1/sessions/";
        append_hex(path_, random());
      }
    } else {
      path_ += d < 50 ? "/api/v1/cart/items" : "/api/v1/orders";  // CORS preflights
    }
  }

  void append_product_page(std::string& path) {
    path += "/products/";
    path += words[below(words.size())];
    path += '-';
    path += words[below(48)];  // a noun
    path += '-';
    append_number(path, between(10'000, 100'000));
    const std::uint64_t q = below(10);
    if (q == 0) {
      path += "?color=";
      path += colors[below(colors.size())];
    } else if (q == 1) {
      path += "?variant=";
      append_number(path, between(100'000, 1'000'000));
    }
  }

  void append_search(std::string& path) {
    path += "/search?q=";
    const std::uint64_t count = 1 + below(3);
    for (std::uint64_t i = 0; i < count; ++i) {
      if (i != 0) path += '+';
      path += words[below(words.size())];
    }
    if (below(3) == 0) {
      path += "&page=";
      append_number(path, 2 + below(9));
    }
    if (below(4) == 0) {
      path += "&sort=";
      path += sort_keys[below(sort_keys.size())];
    }
  }

  void append_blog_post(std::string& path) {
    path += "/blog/";
    append_number(path, 2019 + below(6));
    path += '/';
    const std::uint64_t month = 1 + below(12);
    if (month < 10) path += '0';
    append_number(path, month);
    path += '/';
    for (int i = 0; i < 4; ++i) {
      if (i != 0) path += '-';
      path += words[below(words.size())];
    }
  }

  void append_listing_query(std::string& path) {
    path += "?page=";
    append_number(path, 1 + below(20));
    path += "&sort=";
    path += sort_keys[below(sort_keys.size())];
    if (below(3) == 0) {
      path += "&status=";
      path += order_states[below(order_states.size())];
    }
  }

  int draw_status(Kind kind, std::string_view method) {
    const std::uint64_t s = below(1000);
    if (method == "POST") {
      return s < 700   ? 200
             : s < 820 ? 201
             : s < 880 ? 302
             : s < 930 ? 400
             : s < 950 ? 401
             : s < 960 ? 403
             : s < 975 ? 422
             : s < 985 ? 429
             : s < 992 ? 500
             : s < 996 ? 502
                       : 503;
    }
    if (method == "PUT") {
      return s < 800 ? 200 : s < 880 ? 204 : s < 930 ? 400 : s < 970 ? 404 : s < 985 ? 409 : 500;
    }
    if (method == "DELETE") return s < 850 ? 204 : s < 950 ? 404 : s < 980 ? 403 : 500;
    if (method == "OPTIONS") return 204;
    switch (kind) {
      case Kind::probe:
        return s < 998 ? 200 : 503;
      case Kind::scanner:
        return s < 900 ? 404 : 403;
      case Kind::beacon:
        return s < 980 ? 200 : 400;
      case Kind::asset:
        return s < 700 ? 200 : s < 975 ? 304 : 404;
      case Kind::image:
        return s < 780 ? 200 : s < 950 ? 304 : s < 995 ? 404 : 500;
      case Kind::download:
        return s < 900 ? 200 : 304;
      case Kind::api:
        return s < 880   ? 200
               : s < 900 ? 304
               : s < 940 ? 404
               : s < 955 ? 400
               : s < 965 ? 401
               : s < 970 ? 403
               : s < 975 ? 429
               : s < 990 ? 500
               : s < 995 ? 502
                         : 503;
      default:
        return s < 850   ? 200
               : s < 870 ? 301
               : s < 895 ? 302
               : s < 925 ? 304
               : s < 975 ? 404
               : s < 980 ? 400
               : s < 984 ? 401
               : s < 988 ? 403
               : s < 994 ? 500
               : s < 997 ? 502
                         : 503;
    }
  }

  std::uint64_t draw_bytes(Kind kind, const Request& request, std::uint32_t fixed_bytes) {
    const int status = request.status;
    if (status == 204 || status == 304 || request.method == "HEAD") return 0;
    if (status == 301 || status == 302) return between(162, 360);
    if (status == 404) return between(146, 620);
    if (status >= 400) return between(60, 560);
    switch (kind) {
      case Kind::page:
        return sized(24'000, 1.0);
      case Kind::image:
        return sized(85'000, 1.2);
      case Kind::api:
      case Kind::change:
        return sized(1'400, 1.5);
      default:
        return fixed_bytes;
    }
  }

  void draw_referrer(Kind kind) {
    referrer_.clear();
    const std::uint64_t r = below(100);
    switch (kind) {
      case Kind::probe:
      case Kind::scanner:
        referrer_ += '-';
        return;
      case Kind::page:
        if (r < 30) {
          referrer_ += '-';
        } else if (r < 60) {
          referrer_ += weighted(search_engines, below(total_weight(search_engines))).text;
        } else if (r < 85) {
          append_internal_page(referrer_);
        } else {
          referrer_ += other_sites[below(other_sites.size())];
        }
        return;
      default:
        if (r < 15) {
          referrer_ += '-';
        } else {
          append_internal_page(referrer_);
        }
    }
  }

  // A page of the site that links to the request.
  void append_internal_page(std::string& out) {
    out += site;
    const std::uint64_t p = below(100);
    if (p < 25) {
      out += '/';
    } else if (p < 35) {
      out += "/products";
    } else if (p < 70) {
      append_product_page(out);
    } else if (p < 82) {
      append_search(out);
    } else if (p < 90) {
      out += "/cart";
    } else {
      append_blog_post(out);
    }
  }

  void append_host(std::string& out, const Request& request) {
    if (!request.host_literal.empty()) {
      out += request.host_literal;
      return;
    }
    const std::uint64_t identity = request.client;
    if (identity % 100 < 12) {  // an IPv6 client: a network's prefix, then six groups
      out += ipv6_prefixes[(identity >> 8U) % ipv6_prefixes.size()];
      const std::uint64_t low = mix(identity);
      for (const std::uint64_t group :
           {identity >> 48U, identity >> 32U, low >> 48U, low >> 32U, low >> 16U, low}) {
        out += ':';
        append_hex(out, group & 0xffffU);
      }
      return;
    }
    auto first = 1 + (identity >> 8U) % 223;  // public unicast, roughly
    if (first == 10 || first == 127) ++first;
    append_number(out, first);
    out += '.';
    append_number(out, (identity >> 16U) & 0xffU);
    out += '.';
    append_number(out, (identity >> 24U) & 0xffU);
    out += '.';
    append_number(out, 1 + (identity >> 32U) % 254);
  }

  // "01/Jun/2024:00:00:00 +0200": the local time of `time` at the zone's offset.
  void render_stamp(std::int64_t time) {
    stamp_time_ = time;
    const std::int64_t local = time + zone_seconds;
    const std::int64_t days = local / 86'400;  // the years generated are after 1970
    const auto second_of_day = static_cast<int>(local % 86'400);
    // Civil date of a day count (H. Hinnant's civil_from_days).
    const std::int64_t z = days + 719'468;
    const std::int64_t era = z / 146'097;
    const auto day_of_era = static_cast<int>(z - era * 146'097);
    const int year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36'524 - day_of_era / 146'096) / 365;
    const int day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const int shifted_month = (5 * day_of_year + 2) / 153;
    const int day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    const int month = shifted_month < 10 ? shifted_month + 3 : shifted_month - 9;
    const auto year = static_cast<int>(year_of_era + era * 400 + (month <= 2 ? 1 : 0));
    char* s = stamp_.data();
    append_two_digits(s, day);
    s[2] = '/';
    std::copy_n(months[static_cast<std::size_t>(month - 1)].data(), 3, s + 3);
    s[6] = '/';
    append_two_digits(s + 7, year / 100);
    append_two_digits(s + 9, year % 100);
    s[11] = ':';
    append_two_digits(s + 12, second_of_day / 3600);
    s[14] = ':';
    append_two_digits(s + 15, second_of_day / 60 % 60);
    s[17] = ':';
    append_two_digits(s + 18, second_of_day % 60);
    s[20] = ' ';
    std::copy_n(zone.data(), zone.size(), s + 21);
  }

  std::string_view stamp() const { return {stamp_.data(), stamp_.size()}; }

  // 203.0.113.7 - - [01/Jun/2024:00:00:00 +0200] "GET / HTTP/1.1" 200 21874 "-" "Mozilla/5.0 ..."
  void append_combined(std::string& out, const Request& request) {
    append_host(out, request);
    out += " - ";
    out += request.user;
    out += " [";
    out += stamp();
    out += "] \"";
    out += request.method;
    out += ' ';
    out += path_;
    out += ' ';
    out += request.protocol;
    out += "\" ";
    append_number(out, static_cast<std::uint64_t>(request.status));
    out += ' ';
    append_number(out, request.bytes);
    out += " \"";
    out += referrer_;
    out += "\" \"";
    out += request.agent;
    out += "\"\n";
  }

  // The same record as Fluentd's and Fluent Bit's apache2 parser emit it. No field holds a quote,
  // a backslash or a control character, so none needs escaping.
  void append_json(std::string& out, const Request& request) {
    out += "{\"host\":\"";
    append_host(out, request);
    out += "\",\"user\":\"";
    out += request.user;
    out += "\",\"method\":\"";
    out += request.method;
    out += "\",\"path\":\"";
    out += path_;
    out += "\",\"code\":";
    append_number(out, static_cast<std::uint64_t>(request.status));
    out += ",\"size\":";
    append_number(out, request.bytes);
    out += ",\"referer\":\"";
    out += referrer_;
    out += "\",\"agent\":\"";
    out += request.agent;
    out += "\",\"time\":\"";
    out += stamp();
    out += "\"}\n";
  }

  // Damages the line that starts at `start` the way real logs are damaged.
  void damage(std::string& out, std::size_t start) {
    const std::size_t length = out.size() - start;
    switch (below(3)) {
      case 0:  // cut short: a crash or a full disk mid-write
        out.resize(start + length / 2);
        out += '\n';
        break;
      case 1:  // a lost quote
        out.erase(out.rfind('"', out.size() - 2), 1);
        break;
      default:  // binary noise
        out.resize(start);
        for (int i = 0; i < 40; ++i) {
          const auto c = static_cast<char>(1 + below(255));  // any byte but NUL
          out += c == '\n' ? 'x' : c;
        }
        out += '\n';
    }
  }

  SampleOptions options_;
  std::uint64_t state_;
  std::uint64_t client_salt_;
  std::uint64_t expected_lines_;
  std::int64_t stamp_time_ = 0;
  std::array<char, 26> stamp_{};
  std::string path_;
  std::string referrer_;
};

SampleGenerator::SampleGenerator(SampleOptions options)
    : options_(options), state_(options.seed), time_(1'793'491'200) {  // 2026-11-01T00:00:00Z
  if (options_.profile != SampleProfile::small) traffic_ = std::make_unique<Traffic>(options_);
}

SampleGenerator::~SampleGenerator() = default;

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
  if (traffic_) {
    if (traffic_->append(out, made_)) ++malformed_;
  } else {
    next_small(out);
  }
  ++made_;
  return true;
}

void SampleGenerator::next_small(std::string& out) {
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
      ++malformed_;
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
}

std::string make_sample(const SampleOptions& options) {
  SampleGenerator generator(options);
  std::string text;
  text.reserve(options.lines * 200);
  while (generator.next(text)) {
  }
  return text;
}

std::uint64_t estimate_lines(SampleOptions options, std::uint64_t bytes) {
  constexpr std::uint64_t probe = 20'000;
  options.lines = probe;
  options.expected_lines = probe;
  const std::uint64_t made = std::max<std::uint64_t>(1, make_sample(options).size());
  return std::max<std::uint64_t>(1, bytes * probe / made);
}

std::optional<SampleProfile> parse_profile(std::string_view name) noexcept {
  if (name == "small") return SampleProfile::small;
  if (name == "realistic") return SampleProfile::realistic;
  if (name == "distinct") return SampleProfile::distinct;
  return std::nullopt;
}

}  // namespace conveyor::log_ingest
