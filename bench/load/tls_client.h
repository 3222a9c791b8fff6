// The HTTPS client side the load generators share (bench/load/open_loop.cc, bench/load/tls_load.cc):
// one blocking TLS connection to 127.0.0.1 and reading one HTTP/1.1 response off it.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace bench {

// A TLS connection to 127.0.0.1:port (TCP_NODELAY), handshaken; nullptr when either step fails.
inline SSL* Connect(SSL_CTX* ctx, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return nullptr;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return nullptr;
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) != 1) {
    SSL_free(ssl);
    close(fd);
    return nullptr;
  }
  return ssl;
}

inline void Close(SSL* ssl) {
  int fd = SSL_get_fd(ssl);
  SSL_free(ssl);
  close(fd);
}

// Reads one response (head and Content-Length body) into `buf` and removes it, leaving any
// bytes after it; true when its status is 200, false on another status or a broken connection.
inline bool ReadResponse(SSL* ssl, std::string& buf) {
  size_t head_end;
  char tmp[65536];
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    int n = SSL_read(ssl, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  size_t cl = buf.find("Content-Length: ");
  if (cl == std::string::npos || cl > head_end) cl = buf.find("content-length: ");
  size_t len = cl == std::string::npos || cl > head_end ? 0 : std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
  bool ok = buf.compare(9, 3, "200") == 0;
  while (buf.size() < head_end + 4 + len) {
    int n = SSL_read(ssl, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  buf.erase(0, head_end + 4 + len);
  return ok;
}

}  // namespace bench
