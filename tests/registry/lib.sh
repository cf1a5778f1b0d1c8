# What the registry tests share: a free loopback port, and Debian's docker-registry (the
# distribution registry) started on it with its storage in the work directory, stopped at exit.
# Sourced after tests/tool/lib.sh.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# start_registry: sets $registry (127.0.0.1:PORT) and $registry_pid; exit 77 without the binary.
start_registry() {
  local binary=${SDM_TEST_DOCKER_REGISTRY:-/usr/bin/docker-registry}
  if [ ! -x "$binary" ]; then
    echo "SKIP: $binary is absent (Debian: apt-get install docker-registry; ./run.sh installs it)"
    exit 77
  fi
  local port; port=$(free_port)
  cat >"$work/registry.yml" <<CONFIG
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry-storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
CONFIG
  "$binary" serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
  registry_pid=$!
  # The script's status survives the trap (under set -e, the killed registry's 143 would end it);
  # an unpacked image's read-only directories (image.sh) are made writable, so that rm can empty them.
  trap 'status=$?; kill "$registry_pid" 2>/dev/null; wait "$registry_pid" 2>/dev/null || true; chmod -R u+w "$work"; rm -rf "$work"; exit $status' EXIT
  registry=127.0.0.1:$port
  for _ in $(seq 100); do
    if curl -sf "http://$registry/v2/" >/dev/null 2>&1 || python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://$registry/v2/" 2>/dev/null; then
      return 0
    fi
    kill -0 "$registry_pid" 2>/dev/null || { cat "$work/registry.log" >&2; fail "docker-registry exited"; }
    sleep 0.1
  done
  cat "$work/registry.log" >&2
  fail "docker-registry did not answer on $registry"
}
