# Sourced by the scripts that need PostgreSQL: installs Debian's `postgresql`
# package with apt-get when it is missing, and defines `start_postgres DIR`,
# which makes a throwaway cluster under DIR on a free loopback port, starts
# it (as the `postgres` user when run as root: PostgreSQL will not run as
# root) and sets `postgres_url`; and `stop_postgres DIR`.
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [[ -z "$(pg_bin)" ]]; then
    echo "==> installing postgresql (Debian package)"
    pg_sudo=""
    [[ "$(id -u)" -ne 0 ]] && pg_sudo="sudo"
    $pg_sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $pg_sudo apt-get install -y -qq postgresql >/dev/null
fi
pg_bin_dir="$(pg_bin)"
pg_as_owner=()
[[ "$(id -u)" -eq 0 ]] && pg_as_owner=(runuser -u postgres --)

start_postgres() {
    local dir="$1" port
    mkdir -p "$dir"
    chmod 755 "$dir"
    [[ "$(id -u)" -eq 0 ]] && chown postgres: "$dir"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    "${pg_as_owner[@]}" "$pg_bin_dir/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
    "${pg_as_owner[@]}" "$pg_bin_dir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
    postgres_url="postgres://postgres@127.0.0.1:$port/postgres"
}

stop_postgres() {
    "${pg_as_owner[@]}" "$pg_bin_dir/pg_ctl" -D "$1/data" -m immediate stop >/dev/null 2>&1 || true
}
