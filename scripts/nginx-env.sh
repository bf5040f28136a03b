# Sourced by the scripts that run nginx: sets `nginx_bin`, installing
# Debian's package with apt-get when it is missing.
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
