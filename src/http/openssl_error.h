// OpenSslError: the oldest error on OpenSSL's queue of this thread, in OpenSSL's words.
#pragma once

#include <openssl/err.h>

#include <string>

namespace shmguard::http {

// The oldest error on the queue, and the queue cleared; `none` when it was empty (a PEM reader
// that found nothing to read leaves no error).
inline std::string OpenSslError(const char* none) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return none;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

}  // namespace shmguard::http
