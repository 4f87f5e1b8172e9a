#!/usr/bin/env bash
# A webhook sink for the benchmarks: Debian's nginx on 127.0.0.1 answering 200 ("ok") to any
# request under /hooks/ after reading its body, over plain HTTP/1.1 or TLS (HTTP/2 offered by
# ALPN, HTTP/1.1 otherwise), with a throwaway CA and server certificate made by openssl for
# this run only.
#
#   bench/nginx_sink.sh DIR plain|tls
#
# Writes DIR/ca.pem (the CA to trust; tls only), DIR/nginx.conf and nginx's files under DIR,
# prints "listening 127.0.0.1:PORT" on stdout, then runs nginx in the foreground (one worker)
# until it gets SIGTERM or SIGQUIT. Needs nginx (nginx-light) and openssl.
set -euo pipefail

DIR="$1"
MODE="${2:-tls}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
if [[ ! -x "$NGINX" ]]; then
  echo "nginx_sink: no nginx (apt-get install nginx-light)" >&2
  exit 2
fi
mkdir -p "$DIR/logs" "$DIR/body"

if [[ "$MODE" == tls ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=relay-egress bench CA" \
    -keyout "$DIR/ca.key" -out "$DIR/ca.pem" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$DIR/server.key" \
    -out "$DIR/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' \
    >"$DIR/server.ext"
  openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
    -CAcreateserial -days 2 -extfile "$DIR/server.ext" -out "$DIR/server.pem" 2>/dev/null
fi

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if [[ "$MODE" == tls ]]; then
  LISTEN="listen 127.0.0.1:$PORT ssl http2;
    ssl_certificate $DIR/server.pem;
    ssl_certificate_key $DIR/server.key;
    ssl_session_cache shared:bench:1m;"
else
  LISTEN="listen 127.0.0.1:$PORT;"
fi
# The echo module (packaged with nginx-light) reads the body before answering; a bare
# `return 200` answers before the body is read, which makes HTTP/2 clients see the stream reset.
ECHO_MODULE=/usr/lib/nginx/modules/ngx_http_echo_module.so
# SINK_READS_BODY=0 answers with `return 200` (for comparison).
if [[ -f "$ECHO_MODULE" && "${SINK_READS_BODY:-1}" == 1 ]]; then
  LOAD="load_module $ECHO_MODULE;"
  ANSWER="echo_read_request_body; echo ok;"
else
  LOAD=""
  ANSWER="return 200 ok;"
fi
cat >"$DIR/nginx.conf" <<EOF
$LOAD
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $DIR/body;
  client_body_buffer_size 64k;
  keepalive_requests ${KEEPALIVE_REQUESTS:-1000};  # nginx's default: GOAWAY / close after 1000
  server {
    $LISTEN
    location /hooks/ { default_type text/plain; $ANSWER }
    location / { return 404; }
  }
}
EOF
echo "listening 127.0.0.1:$PORT"
exec "$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log" -g 'daemon off;'
