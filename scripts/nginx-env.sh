# Sourced by the scripts that run nginx: sets `nginx_bin`, installing
# Debian's package with apt-get when it is missing, and defines what they
# share: `free_port`, `wait_for_address`, `nginx_temp_paths` and
# `make_certificates`.
nginx_bin="$(command -v nginx || true)"
[[ -z "$nginx_bin" && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
if [[ -z "$nginx_bin" ]]; then
    echo "==> installing nginx (Debian package)"
    sudo=""
    [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx >/dev/null
    nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
fi
"$nginx_bin" -v

# Prints a loopback port nothing listens on.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Prints the 127.0.0.1:PORT a server (process $2) wrote in its log $1 once it
# bound; fails, showing the log, if it exits or does not bind in 10 s.
wait_for_address() {
    local log="$1" pid="$2" address=""
    for _ in $(seq 1 100); do
        address="$(grep -o '127.0.0.1:[0-9]*' "$log" | head -1 || true)"
        [[ -n "$address" ]] && break
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the server in $log exited" >&2; return 1; }
        sleep 0.1
    done
    [[ -n "$address" ]] || { cat "$log" >&2; echo "the server in $log did not start" >&2; return 1; }
    echo "$address"
}

# nginx's temporary paths under $1, for an `http` block.
nginx_temp_paths() {
    local dir="$1/tmp"
    mkdir -p "$dir"
    printf '    %s_temp_path %s/%s;\n' client_body "$dir" body proxy "$dir" proxy \
        fastcgi "$dir" fastcgi uwsgi "$dir" uwsgi scgi "$dir" scgi
}

# Makes a CA ($1/ca.pem) and the certificate it issues for localhost and
# 127.0.0.1 ($1/server.pem, $1/server.key) with openssl, installing Debian's
# package when it is missing. Both last two days.
make_certificates() {
    local dir="$1"
    if ! command -v openssl >/dev/null; then
        echo "==> installing openssl (Debian package)"
        local sudo=""
        [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends openssl >/dev/null
    fi
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" -subj "/CN=tool-envelope test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=localhost" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/ext.cnf"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -out "$dir/server.pem" -extfile "$dir/ext.cnf" 2>/dev/null
    openssl verify -CAfile "$dir/ca.pem" "$dir/server.pem" >/dev/null
}
