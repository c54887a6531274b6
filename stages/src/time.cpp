// Civil time to seconds since the epoch, without the C library's time zone state.
#include <cstdint>
#include <string_view>

#include "conveyor/stages/parsers.hpp"
#include "digits.hpp"

namespace conveyor::stages {

std::int64_t epoch_seconds(int year, int month, int day, int hour, int minute,
                           int second) noexcept {
  // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  const int y = year - (month <= 2 ? 1 : 0);
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int year_of_era = y - era * 400;
  const int day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + day_of_era - 719468;
  return days * 86400 + std::int64_t{hour} * 3600 + std::int64_t{minute} * 60 + second;
}

int month_number(std::string_view name) noexcept {
  static constexpr std::string_view months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (name == months[i]) return i + 1;
  }
  return 0;
}

using detail::digits;

bool parse_rfc3339(std::string_view text, std::int64_t& seconds) noexcept {
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 19 || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !digits(text, 11, 2, hour) ||
      text[13] != ':' || !digits(text, 14, 2, minute) || text[16] != ':' ||
      !digits(text, 17, 2, second)) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return false;
  }
  std::size_t at = 19;
  if (at < text.size() && (text[at] == '.' || text[at] == ',')) {
    ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9')
      ++at;
  }
  std::int64_t offset = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int hours = 0;
    int minutes = 0;
    const bool colon = at + 3 < text.size() && text[at + 3] == ':';
    if (!digits(text, at + 1, 2, hours) || !digits(text, at + (colon ? 4 : 3), 2, minutes)) {
      return false;
    }
    offset = (std::int64_t{hours} * 3600 + std::int64_t{minutes} * 60) * (text[at] == '-' ? -1 : 1);
    at += colon ? 6 : 5;
  }
  if (at != text.size()) return false;
  seconds = epoch_seconds(year, month, day, hour, minute, second) - offset;
  return true;
}

bool parse_clf_time(std::string_view text, std::int64_t& seconds) noexcept {
  if (text.size() != 26 || text[2] != '/' || text[6] != '/' || text[11] != ':' || text[14] != ':' ||
      text[17] != ':' || text[20] != ' ' || (text[21] != '+' && text[21] != '-')) {
    return false;
  }
  int day = 0;
  int year = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  int zone_hours = 0;
  int zone_minutes = 0;
  const int month = month_number(text.substr(3, 3));
  if (month == 0 || !digits(text, 0, 2, day) || !digits(text, 7, 4, year) ||
      !digits(text, 12, 2, hour) || !digits(text, 15, 2, minute) || !digits(text, 18, 2, second) ||
      !digits(text, 22, 2, zone_hours) || !digits(text, 24, 2, zone_minutes)) {
    return false;
  }
  if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return false;
  const std::int64_t offset = (std::int64_t{zone_hours} * 3600 + std::int64_t{zone_minutes} * 60) *
                              (text[21] == '-' ? -1 : 1);
  seconds = epoch_seconds(year, month, day, hour, minute, second) - offset;
  return true;
}

}  // namespace conveyor::stages
