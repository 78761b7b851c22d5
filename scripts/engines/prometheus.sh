# Prometheus for the metrics test (gateway-server's PrometheusScrapeTest). Sourced by scripts/test (uses
# scripts/lib/common.sh); do not run it. Installs Debian's prometheus, starts it on loopback only with a scrape
# configuration that reads its targets from files (a test writes one naming its gateway's metrics port, Prometheus
# picks it up within a second), and exports for the tests:
#   SANDGATE_PROMETHEUS_URL      e.g. http://127.0.0.1:19090
#   SANDGATE_PROMETHEUS_TARGETS  the folder of target files (file_sd_configs)
# shellcheck shell=bash

apt_install prometheus curl

sandgate_prometheus_port="${SANDGATE_PROMETHEUS_PORT:-19090}"
SANDGATE_PROMETHEUS_URL="http://127.0.0.1:$sandgate_prometheus_port"
SANDGATE_PROMETHEUS_TARGETS="$SANDGATE_RUN_DIR/prometheus/targets"
export SANDGATE_PROMETHEUS_URL SANDGATE_PROMETHEUS_TARGETS
mkdir -p "$SANDGATE_PROMETHEUS_TARGETS" "$SANDGATE_RUN_DIR/prometheus/data"
rm -f "$SANDGATE_PROMETHEUS_TARGETS"/*.json
cat >"$SANDGATE_RUN_DIR/prometheus/prometheus.yml" <<CONF
# Written by sandgate scripts/engines/prometheus.sh
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sandgate-tests
    file_sd_configs:
      - files: ['$SANDGATE_PROMETHEUS_TARGETS/*.json']
        refresh_interval: 1s
CONF

if curl -sf --max-time 2 "$SANDGATE_PROMETHEUS_URL/-/ready" >/dev/null 2>&1; then
  die "something already answers on $SANDGATE_PROMETHEUS_URL: stop it or set SANDGATE_PROMETHEUS_PORT"
fi
start_daemon prometheus prometheus \
  --config.file="$SANDGATE_RUN_DIR/prometheus/prometheus.yml" \
  --storage.tsdb.path="$SANDGATE_RUN_DIR/prometheus/data" \
  --web.listen-address="127.0.0.1:$sandgate_prometheus_port"
if ! wait_for "curl -sf --max-time 2 '$SANDGATE_PROMETHEUS_URL/-/ready'" 60; then
  tail -30 "$SANDGATE_RUN_DIR/logs/prometheus.log" >&2 || true
  die "Prometheus did not answer on $SANDGATE_PROMETHEUS_URL within 60 s (log: $SANDGATE_RUN_DIR/logs/prometheus.log)"
fi
log "Prometheus ready on $SANDGATE_PROMETHEUS_URL, targets from $SANDGATE_PROMETHEUS_TARGETS"
