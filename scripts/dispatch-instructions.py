#!/usr/bin/env python3
"""Figure 3 of BENCHMARKS.md, counted in instructions rather than seconds.

Runs a bench server (benches/servers) over stdio under callgrind and makes
CALLS sequential `tools/call`s of one tool, each waiting for its answer, as
the `dispatch` bench's rmcp client does; then does the same with no call at
all, and prints the difference divided by CALLS: the server's instructions a
call, which the machine's load does not change. Run by hand, not in CI:

    cargo build --release -p tool-envelope-bench-servers
    scripts/dispatch-instructions.py target/release/tool_envelope_server fail
    scripts/dispatch-instructions.py target/release/rmcp_macros_server fail

KEEP=folder keeps the profile of the run with calls there
(<server>-<tool>.callgrind, for callgrind_annotate --inclusive=yes).

Needs valgrind. Under valgrind, code that picks a CPU feature at run time
(SHA, AES) may take its portable path: compare servers, not absolutes.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CALLS = int(os.environ.get("CALLS", "2000"))


def run(server, tool, calls):
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "callgrind.out")
        child = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={path}", server],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

        def send(message):
            child.stdin.write(json.dumps(message) + "\n")
            child.stdin.flush()

        def answer(id):
            while True:
                line = child.stdout.readline()
                if not line:
                    sys.exit(f"{server} closed its output before answering {id}")
                message = json.loads(line)
                if message.get("id") == id:
                    return message

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "dispatch-instructions", "version": "1"}}})
        answer(0)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        errors = 0
        for id in range(1, calls + 1):
            send({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                  "params": {"name": tool, "arguments": {"text": "C-4821"}}})
            reply = answer(id)
            if "result" not in reply:
                sys.exit(f"{tool} answered with a JSON-RPC error: {reply}")
            errors += bool(reply["result"].get("isError"))
        child.stdin.close()
        child.wait()
        with open(path) as profile:
            totals = re.search(r"^(?:summary|totals): (\d+)", profile.read(), re.M)
        keep = os.environ.get("KEEP")
        if keep and calls:
            os.makedirs(keep, exist_ok=True)
            shutil.copy(path, os.path.join(keep, f"{os.path.basename(server)}-{tool}.callgrind"))
        return int(totals.group(1)), errors


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    server, tool = sys.argv[1], sys.argv[2]
    base, _ = run(server, tool, 0)
    total, errors = run(server, tool, CALLS)
    per_call = (total - base) / CALLS
    print(f"{os.path.basename(server)} {tool}: {per_call / 1000:.1f} k instructions a call "
          f"({CALLS} calls, {errors} with isError)")


if __name__ == "__main__":
    main()
