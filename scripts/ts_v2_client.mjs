// The TypeScript SDK v2 client (`@modelcontextprotocol/client`, 2.4.0) against
// examples/full_server, negotiating its revision (`versionNegotiation:
// 'auto'`): it speaks 2026-07-28, and a tool that asks the user is answered
// through the client's `elicitation/create` handler, in an
// InputRequiredResult round.
//
//   node ts_v2_client.mjs URL
//
// scripts/test-rounds.sh copies it next to the node_modules it installs the
// SDK into, and runs it from there. Prints one line per check; exits 1 if
// any fails.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2];
let failed = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  TypeScript SDK v2: ${what}${ok ? '' : `\n      ${detail}`}`);
  if (!ok) failed += 1;
};

const asked = [];
const client = new Client(
  { name: 'ts-v2-conformance', version: '1' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
);
client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request.params.message);
  const wants = Object.keys(request.params.requestedSchema?.properties ?? {});
  const content = wants.includes('name') ? { name: 'Ada' } : { username: 'ada', email: 'ada@example.com' };
  return { action: 'accept', content };
});

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const version = client.getNegotiatedProtocolVersion();
  check(version === '2026-07-28', 'negotiates 2026-07-28', `negotiated ${version}`);

  const greeted = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  const text = JSON.stringify(greeted.structuredContent ?? greeted.content);
  check(text.includes('Hello, Ada!'), 'a tool that asks the user is answered', text);

  const form = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
  const formText = JSON.stringify(form.content);
  check(formText.includes('ada@example.com'), 'a form with two fields is answered', formText);
  check(asked.includes('Who are you?'), 'the handler saw the question', JSON.stringify(asked));
  await client.close();
} catch (error) {
  check(false, 'the session', error?.stack ?? String(error));
}
process.exit(failed === 0 ? 0 : 1);
