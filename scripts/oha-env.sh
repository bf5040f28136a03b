# Sourced by the HTTP benchmark scripts: sets `oha`, installing it from
# crates.io when it is missing.
oha=$(command -v oha || true)
[[ -z "$oha" && -x "$HOME/.cargo/bin/oha" ]] && oha="$HOME/.cargo/bin/oha"
if [[ -z "$oha" ]]; then
    echo "==> installing oha from crates.io"
    cargo install oha --locked --quiet
    oha="$HOME/.cargo/bin/oha"
fi
"$oha" --version
