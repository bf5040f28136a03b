// A server on the TypeScript SDK v2 (`@modelcontextprotocol/server`) for the
// client tests (tests/mcp_client_servers.rs). Written against 2.4.0.
//
//   node ts_v2_server.mjs serve     # both protocol eras
//   node ts_v2_server.mjs reject    # 2026-07-28 only: a 2025-11-25
//                                   # handshake is refused (-32022)
//
// scripts/test-client-servers.sh copies it next to the node_modules it
// installs the SDK into, and runs it from there.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const legacy = process.argv[2] ?? 'serve';
serveStdio(() => {
  const server = new McpServer({ name: 'ts-v2-test-server', version: '1' }, { capabilities: { tools: {} } });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: z.object({
        a: z.number(),
        b: z.number(),
        opts: z.object({ tags: z.array(z.string()) }).optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
  );
  return server;
}, { legacy });
