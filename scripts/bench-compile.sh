#!/usr/bin/env bash
# Figure 4 of BENCHMARKS.md: build times of a crate of 100 tools, written three
# ways — plain functions, rmcp's #[tool] (in a #[tool_router] impl, one
# parameters struct per tool, as rmcp requires), and tool-envelope's #[tool]
# (free functions, served by a ToolSet) — each built cold (dependencies
# prebuilt, the crate itself from scratch) and after touching one function
# (after one untimed touch, so that each timed one finds the incremental
# cache as an edit-compile loop does). Each is built twice: as a library, and
# as the stdio server binary a user actually builds. rmcp's library is built
# two ways: with its router private, as rmcp's examples write it (nothing
# outside the crate can then build its server, so rustc generates almost no code for
# its tools there and the binary compiles all of it), and with
# `#[tool_router(vis = "pub")]` and its field public, a library another
# crate can serve, as
# tool-envelope's `pub fn tools()` is.
# Build times on a shared VM vary by tens of percent from run to run: the
# median of several runs is reported.
#
#   scripts/bench-compile.sh [RUNS]      (default 5; the median is reported)
#
# Everything happens under target/bench-compile; the dev profile is used, as
# in an edit-compile loop.
set -euo pipefail

runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/target/bench-compile"
tools=100
rm -rf "$work/crates"
mkdir -p "$work/crates"
export CARGO_TARGET_DIR="$work/target"

python3 - "$work/crates" "$root" "$tools" <<'PY'
import os, sys
crates, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

manifest = """[package]
name = "{name}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
{deps}

[workspace]
"""

def crate(name, deps, lib, main):
    """Writes the crate twice: as a library, and as the server binary a user
    builds (rustc defers generic code to the crate that instantiates it, so
    the binary is where an edit-compile loop spends its codegen)."""
    write(f"{crates}/{name}_lib/Cargo.toml", manifest.format(name=f"{name}_lib", deps=deps))
    write(f"{crates}/{name}_lib/src/lib.rs", lib)
    write(f"{crates}/{name}_bin/Cargo.toml", manifest.format(name=f"{name}_bin", deps=deps))
    write(f"{crates}/{name}_bin/src/main.rs", lib + main)

# Plain functions: the floor.
body = "\n".join(f'''/// Tool number {i}: looks up orders.
pub fn tool_{i}(customer_id: String, limit: u64) -> Result<String, std::io::Error> {{
    Ok(format!("{{customer_id}}:{{limit}}:{i}"))
}}
''' for i in range(n))
calls = "".join(f"\n    println!(\"{{:?}}\", tool_{i}(String::from(\"C-1\"), {i}));" for i in range(n))
crate("plain", "", body, f"\nfn main() {{{calls}\n}}\n")

tokio = 'tokio = { version = "1", features = ["macros", "rt-multi-thread", "io-std"] }'

# rmcp's macros: a parameters struct per tool, the methods in a #[tool_router] impl.
structs = "\n".join(f'''#[derive(Deserialize, JsonSchema)]
pub struct Args{i} {{
    /// The customer.
    pub customer_id: String,
    /// At most this many.
    pub limit: u64,
}}
''' for i in range(n))
methods = "\n".join(f'''    /// Tool number {i}: looks up orders.
    #[tool]
    async fn tool_{i}(&self, Parameters(args): Parameters<Args{i}>) -> Result<String, String> {{
        Ok(format!("{{}}:{{}}:{i}", args.customer_id, args.limit))
    }}
''' for i in range(n))
crate("rmcp", f'''rmcp = {{ version = "3.11", default-features = false, features = ["server", "macros", "transport-io"] }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}
{tokio}''', f'''use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{{ServerHandler, tool, tool_handler, tool_router}};
use schemars::JsonSchema;
use serde::Deserialize;

{structs}
#[derive(Clone)]
pub struct Server {{
    tool_router: ToolRouter<Self>,
}}

#[tool_router]
impl Server {{
{methods}}}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {{}}
''', '''
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use rmcp::ServiceExt;
    let server = Server { tool_router: Server::tool_router() };
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
''')

# The same rmcp library, usable by a server in another crate: as written above
# (the router private, as rmcp's examples have it), nothing outside the crate
# can build a `Server`, so rustc generates no code for its tools at all. A
# library of tools exists to be served from elsewhere, as tool-envelope's
# `pub fn tools()` is: `vis = "pub"` makes rmcp's router public, and a
# public field lets another crate build the server with it.
rmcp_lib = open(f"{crates}/rmcp_lib/src/lib.rs").read()
assert "\n#[tool_router]\n" in rmcp_lib
write(f"{crates}/rmcp_pub_lib/Cargo.toml", open(f"{crates}/rmcp_lib/Cargo.toml").read().replace('"rmcp_lib"', '"rmcp_pub_lib"'))
assert "    tool_router: ToolRouter<Self>," in rmcp_lib
write(f"{crates}/rmcp_pub_lib/src/lib.rs", rmcp_lib
      .replace("\n#[tool_router]\n", '\n#[tool_router(vis = "pub")]\n')
      .replace("    tool_router: ToolRouter<Self>,", "    pub tool_router: ToolRouter<Self>,"))

# tool-envelope's #[tool]: the functions themselves, async as rmcp's are,
# served by a ToolSet.
functions = "\n".join(f'''/// Tool number {i}: looks up orders.
#[tool(read_only)]
pub async fn tool_{i}(
    /// The customer.
    customer_id: String,
    /// At most this many.
    limit: u64,
) -> Result<String, std::io::Error> {{
    Ok(format!("{{customer_id}}:{{limit}}:{i}"))
}}
''' for i in range(n))
registrations = "".join(f"\n        .tool::<tool_{i}>()" for i in range(n))
crate("envelope", f'''tool-envelope = {{ path = "{root}", features = ["rmcp"] }}
{tokio}''', f'''use tool_envelope::mcp::ToolSet;
use tool_envelope::tool;

{functions}
/// Every tool, ready to serve.
pub fn tools() -> ToolSet {{
    ToolSet::new(){registrations}
}}
''', '''
#[tokio::main]
async fn main() -> std::io::Result<()> {
    tools().serve_stdio().await
}
''')
PY

now() { date +%s.%N; }
calc() { python3 -c "print(round($1, 3))"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

declare -A cold touched
crates=(plain_lib rmcp_lib rmcp_pub_lib envelope_lib plain_bin rmcp_bin envelope_bin)
for crate in "${crates[@]}"; do
    dir="$work/crates/$crate"
    src="$dir/src/lib.rs"
    [[ -f $src ]] || src="$dir/src/main.rs"
    echo "== $crate: building dependencies"
    (cd "$dir" && cargo build --quiet)
    cold_times=()
    touch_times=()
    for run in $(seq 1 "$runs"); do
        (cd "$dir" && cargo clean --quiet -p "$crate")
        start=$(now)
        (cd "$dir" && cargo build --quiet)
        cold_times+=("$(calc "$(now) - $start")")
        # Touch one function: change the body of tool 50, once untimed.
        sed -i "s/:50\"/:50-w$run\"/; s/:50-[0-9a-z]*\"/:50-w$run\"/" "$src"
        (cd "$dir" && cargo build --quiet)
        sed -i "s/:50-[0-9a-z]*\"/:50-t$run\"/" "$src"
        start=$(now)
        (cd "$dir" && cargo build --quiet)
        touch_times+=("$(calc "$(now) - $start")")
    done
    cold[$crate]=$(printf '%s\n' "${cold_times[@]}" | median)
    touched[$crate]=$(printf '%s\n' "${touch_times[@]}" | median)
    printf '   cold %s s   touched %s s   (runs: %s | %s)\n' "${cold[$crate]}" "${touched[$crate]}" "${cold_times[*]}" "${touch_times[*]}"
done

echo
echo "100 tools, dev profile, median of $runs runs:"
printf '%-16s %10s %10s\n' crate "cold (s)" "touch (s)"
for crate in "${crates[@]}"; do
    printf '%-16s %10.2f %10.2f\n' "$crate" "${cold[$crate]}" "${touched[$crate]}"
done
ratio() { # $1: label, $2: ours, $3: rmcp's
    printf 'tool-envelope / rmcp (%s): cold %.2fx, touched %.2fx\n' "$1" \
        "$(calc "${cold[$2]} / ${cold[$3]}")" \
        "$(calc "${touched[$2]} / ${touched[$3]}")"
}
ratio "lib, rmcp's router private" envelope_lib rmcp_lib
ratio "lib, rmcp's router public" envelope_lib rmcp_pub_lib
ratio bin envelope_bin rmcp_bin
