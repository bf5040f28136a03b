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

const base = process.argv[2].replace(/\/$/, '');
let failed = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  TypeScript SDK v2: ${what}${ok ? '' : `\n      ${detail}`}`);
  if (!ok) failed += 1;
};

// A browser's cookie jar, enough for the inbox.
const jar = new Map();
const remember = (response) => {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    jar.set(pair.slice(0, at), pair.slice(at + 1));
  }
};
const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
const csrf = (page) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
const send = async (path, form) => {
  const response = await fetch(`${base}${path}`, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { cookie: cookies(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  remember(response);
  return { status: response.status, text: await response.text() };
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

  const form = await send('/inbox');
  const signed = await send('/inbox/sign-in', { token: 'approver-token', csrf: csrf(form.text) });
  check(signed.status === 303, 'the approver signs in', `HTTP ${signed.status}`);
  const inbox = await send('/inbox');
  const decided = await send(`/inbox/approvals/${ticket.id}`, { decision: 'approve', note: 'ts', csrf: csrf(inbox.text) });
  check(decided.status === 303, 'the approver approves on the inbox', `HTTP ${decided.status} ${decided.text.slice(0, 200)}`);

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
