#!/usr/bin/env bash
# The install layout and the installed service (docs/deployment.md), run by ctest:
#   install_test.sh BUILD_DIR prefix   `cmake --install --prefix` into a scratch root
#   install_test.sh BUILD_DIR deb      the .deb from CPack, unpacked with `dpkg -x`
# Then the installed binary serves with the installed config (its data_dir and listen moved by
# RELAY_EGRESS_* overrides onto a scratch directory and a free loopback port), answers /healthz,
# and stops cleanly on SIGTERM. Nothing is installed on the machine itself.
set -euo pipefail
build="$(cd "$1" && pwd)"
mode="$2"
scratch="$(mktemp -d -t relay-egress-install.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$scratch"/*.log "$scratch"/serve.out "$scratch"/serve.err; do
    if [ -f "$f" ]; then
      echo "--- $f" >&2
      tail -n 40 "$f" >&2
    fi
  done
  exit 1
}

case "$mode" in
  prefix)
    cmake --install "$build" --prefix "$scratch/root/usr/local" > "$scratch/install.log" 2>&1 \
      || fail "cmake --install"
    prefix="$scratch/root/usr/local"
    etc="$prefix/etc/relay-egress"
    ;;
  deb)
    cpack -G DEB -B "$scratch/pkg" --config "$build/CPackConfig.cmake" > "$scratch/cpack.log" 2>&1 \
      || fail "cpack"
    deb="$(ls "$scratch"/pkg/relay-egress_*.deb)"
    dpkg-deb --info "$deb" > "$scratch/info.log"
    # Runtime dependencies from Debian (dpkg-shlibdeps), and adduser for the system user.
    grep -Eq '^ Depends: .*adduser' "$scratch/info.log" || fail "no adduser dependency"
    grep -Eq '^ Depends: .*librocksdb' "$scratch/info.log" || fail "no librocksdb dependency"
    grep -Eq '^ Depends: .*libcurl' "$scratch/info.log" || fail "no libcurl dependency"
    mkdir -p "$scratch/control"
    dpkg-deb --control "$deb" "$scratch/control"
    grep -q 'adduser --system --group' "$scratch/control/postinst" || fail "postinst adds no user"
    grep -qx '/etc/relay-egress/relay-egress.toml' "$scratch/control/conffiles" \
      || fail "the config is not a conffile"
    dpkg -x "$deb" "$scratch/root"
    prefix="$scratch/root/usr"
    etc="$scratch/root/etc/relay-egress"
    ;;
  *)
    echo "usage: $0 BUILD_DIR prefix|deb" >&2
    exit 2
    ;;
esac

bin="$prefix/bin/relay-egress"
unit="$prefix/lib/systemd/system/relay-egress.service"
for f in "$bin" "$etc/relay-egress.toml" "$unit" \
  "$prefix/share/bash-completion/completions/relay-egress" \
  "$prefix/share/doc/relay-egress/README.md" "$prefix/share/doc/relay-egress/deployment.md" \
  "$prefix/share/doc/relay-egress/profiles/slack.toml"; do
  [ -e "$f" ] || fail "not installed: ${f#"$scratch"/root}"
done
# No test, simulator or benchmark program is installed.
if [ -n "$(find "$prefix/bin" -type f ! -name relay-egress)" ]; then
  fail "unexpected programs in bin/: $(ls "$prefix/bin")"
fi
for line in 'ProtectSystem=strict' 'NoNewPrivileges=yes' 'StateDirectory=relay-egress' \
  'ReadWritePaths=/var/lib/relay-egress' 'User=relay-egress' 'ExecStart=/usr/bin/relay-egress serve' \
  'ExecReload=/bin/kill -HUP $MAINPID'; do
  grep -qxF "$line" "$unit" || fail "unit lacks $line"
done
"$bin" --version > "$scratch/version.log" || fail "--version"
grep -Eq '^relay-egress [0-9]+\.[0-9]+\.[0-9]+' "$scratch/version.log" || fail "--version output"
bash -n "$prefix/share/bash-completion/completions/relay-egress" || fail "completion syntax"

# The installed config, as the unit would start it (no flags), found through RELAY_EGRESS_CONFIG
# since it is not in /etc here; state and port moved by overrides.
export RELAY_EGRESS_CONFIG="$etc/relay-egress.toml"
export RELAY_EGRESS_SERVER_DATA_DIR="$scratch/data"
export RELAY_EGRESS_SERVER_LISTEN="127.0.0.1:0"
"$bin" serve --check-config > "$scratch/check.log" 2>&1 || fail "--check-config"
"$bin" serve --print-config > "$scratch/print.log" 2>&1 || fail "--print-config"
grep -qF "data_dir = '$scratch/data'" "$scratch/print.log" || fail "override not shown"
"$bin" serve > "$scratch/serve.out" 2> "$scratch/serve.err" &
pid=$!
addr=""
for _ in $(seq 600); do
  addr="$(sed -n 's/^listening //p' "$scratch/serve.out")"
  [ -n "$addr" ] && break
  kill -0 "$pid" 2> /dev/null || fail "serve exited"
  sleep 0.1
done
[ -n "$addr" ] || fail "serve did not listen within 60 s"
case "$addr" in
  127.0.0.1:*) ;;
  *) fail "listening on $addr, not loopback" ;;
esac
health="$(curl -sS --max-time 10 "http://$addr/healthz")" || fail "GET /healthz"
echo "healthz: $health"
[ -d "$scratch/data" ] || fail "no store in the overridden data_dir"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "serve exited with $rc after SIGTERM"
echo "OK ($mode)"
