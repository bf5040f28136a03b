// The TypeScript SDK v2 client (`@modelcontextprotocol/client`) and a refund
// over the cap of examples/mcp_server --require-token: the call comes back
// as a ticket that waits for `refunds:approve` (the client, whose handler
// would approve anything, is never asked); an approver approves it on the
// inbox page (over HTTP, with its cookies and CSRF tokens); calling again
// reads the result.
//
//   node ts_v2_tickets.mjs BASE_URL
//
// scripts/test-inbox.sh copies it next to the node_modules holding the SDK.
// Prints one line per check; exits 1 if any fails.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { approve } from './ts_v2_inbox.mjs';

const base = process.argv[2].replace(/\/$/, '');
let failed = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  TypeScript SDK v2: ${what}${ok ? '' : `\n      ${detail}`}`);
  if (!ok) failed += 1;
};

const asked = [];
const client = new Client(
  { name: 'ts-v2-tickets', version: '1' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
);
client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request.params.message);
  return { action: 'accept', content: { approver: 'agent' } };
});

try {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: 'Bearer refunds-token' } },
  });
  await client.connect(transport);
  const args = { order: 'O-TS', amount: 710 };
  const waiting = await client.callTool({ name: 'process_refund', arguments: args });
  const envelope = waiting.structuredContent ?? {};
  const ticket = envelope.escalation?.ticket ?? {};
  check(
    waiting.isError === true && envelope.reason === 'AWAITING_APPROVAL' && envelope.isRetryable === false,
    'a $710 refund comes back AWAITING_APPROVAL, not retryable',
    JSON.stringify(envelope),
  );
  check(ticket.approvers === 'refunds:approve' && ticket.id, 'its ticket names refunds:approve', JSON.stringify(ticket));
  check(asked.length === 0, 'the client is never asked to approve', JSON.stringify(asked));

  const decision = await approve(base, ticket.id, 'ts');
  check(decision.signedIn === 303, 'the approver signs in', `HTTP ${decision.signedIn}`);
  check(decision.decided === 303, 'the approver approves on the inbox', `HTTP ${decision.decided} ${decision.body.slice(0, 200)}`);

  const deadline = Date.now() + 30000;
  let result;
  do {
    result = await client.callTool({ name: 'process_refund', arguments: args });
    if (!result.isError) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  } while (Date.now() < deadline);
  check(
    result.isError !== true && result.structuredContent?.result === 'Refunded $710 on O-TS',
    'calling again reads the refund\'s result',
    JSON.stringify(result),
  );
  await client.close();
} catch (error) {
  check(false, 'the session', error?.stack ?? String(error));
}
process.exit(failed === 0 ? 0 : 1);
