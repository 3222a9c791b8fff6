// ParseRfc3339Utc: the civil date and time, as seconds since the epoch.
#include "core/values/timestamp.h"

namespace shmguard {

std::optional<int64_t> ParseRfc3339Utc(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (t.size() < 20 || t.back() != 'Z' || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') ||
      t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  auto digits = [&](size_t at, size_t n) -> std::optional<int64_t> {
    int64_t v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return std::nullopt;
      v = v * 10 + (t[i] - '0');
    }
    return v;
  };
  auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2),
       sec = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !sec || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
      *sec > 60) {
    return std::nullopt;
  }
  if (t.size() > 20 && (t.size() == 21 || t[19] != '.' || !digits(20, t.size() - 21))) return std::nullopt;
  // Days from the civil date (Howard Hinnant's days_from_civil), then seconds.
  const int64_t yy = *y - (*mo <= 2 ? 1 : 0);
  const int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  const int64_t yoe = yy - era * 400;
  const int64_t doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + *h * 3600 + *mi * 60 + *sec;
}

}  // namespace shmguard
