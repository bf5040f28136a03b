// The TypeScript SDK v2 and a refund over the cap run as a task by
// examples/mcp_server --require-token --tasks.
//
// The SDK's `Client` (2.4.0) refuses a task result ("Unsupported result type
// 'task' for tools/call": its codec knows `complete` and `input_required`
// only), so this speaks MCP's tasks extension (SEP-2663) the way a
// TypeScript user can today: over the SDK's own `StreamableHTTPClientTransport`
// (its bearer header, and the 2026-07-28 `MCP-Protocol-Version`, `Mcp-Method`
// and `Mcp-Name` headers it derives from each request), with the SDK's
// `_meta` keys. Then:
//
// - a $740 refund, called with `refunds-token` and the extension declared,
//   answers with a task, which waits: `working`, its status message naming
//   `refunds:approve` and the ticket;
// - another token's `tasks/get` of that task is refused as an unknown task;
// - an approver approves the ticket on the inbox (over HTTP);
// - the task completes with the refund's result.
//
//   node ts_v2_task_approval.mjs BASE_URL
//
// scripts/test-inbox.sh copies it next to the node_modules holding the SDK.
// Prints one line per check; exits 1 if any fails.
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { approve } from './ts_v2_inbox.mjs';

const base = process.argv[2].replace(/\/$/, '');
const TASKS = 'io.modelcontextprotocol/tasks';
const DEADLINE_MS = 60000;
let failed = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  TypeScript SDK v2 transport, a task: ${what}${ok ? '' : `\n      ${detail}`}`);
  if (!ok) failed += 1;
  return ok;
};

// One caller: the SDK's transport with a token, requests matched to replies by id.
const caller = async (token) => {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const waiting = new Map();
  transport.onmessage = (message) => {
    const answer = waiting.get(message.id);
    if (answer) {
      waiting.delete(message.id);
      answer(message);
    }
  };
  transport.onerror = (error) => console.log(`      transport: ${error}`);
  await transport.start();
  let next = 0;
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      next += 1;
      const id = next;
      waiting.set(id, resolve);
      const _meta = {
        [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
        [CLIENT_INFO_META_KEY]: { name: 'ts-v2-task-approval', version: '1' },
        [CLIENT_CAPABILITIES_META_KEY]: { extensions: { [TASKS]: {} } },
      };
      transport.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta } }).catch(reject);
    });
  return { request, close: () => transport.close() };
};

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  const alice = await caller('refunds-token');
  const created = await alice.request('tools/call', {
    name: 'process_refund',
    arguments: { order: 'O-TS-TASK', amount: 740 },
  });
  const task = created.result ?? {};
  if (!check(task.resultType === 'task' && typeof task.taskId === 'string', 'the call answers with a task', JSON.stringify(created))) {
    process.exit(1);
  }

  // It waits, and says for whom.
  const deadline = Date.now() + DEADLINE_MS;
  let state;
  for (;;) {
    state = (await alice.request('tasks/get', { taskId: task.taskId })).result ?? {};
    if ((state.statusMessage ?? '').includes('ticket') || state.status !== 'working' || Date.now() > deadline) break;
    await pause(100);
  }
  const message = state.statusMessage ?? '';
  check(
    state.status === 'working' && message.includes('refunds:approve'),
    `the task waits, and says for whom: ${JSON.stringify(message)}`,
    JSON.stringify(state),
  );

  // Another token's look at it: an unknown task.
  const bob = await caller('second-desk-token');
  const peek = await bob.request('tasks/get', { taskId: task.taskId });
  check(
    peek.error !== undefined && !JSON.stringify(peek).includes('O-TS-TASK'),
    'another token reads nothing of it',
    JSON.stringify(peek),
  );
  await bob.close();

  // The approver decides on the inbox.
  const ticket = /ticket ([A-Za-z0-9_-]+)/.exec(message)?.[1] ?? '';
  const decision = await approve(base, ticket, 'ts task');
  check(decision.signedIn === 303, 'the approver signs in', `HTTP ${decision.signedIn}`);
  check(decision.decided === 303, `the approver approves ticket ${ticket}`, `HTTP ${decision.decided} ${decision.body.slice(0, 200)}`);

  // The task ends with the refund's result.
  for (;;) {
    state = (await alice.request('tasks/get', { taskId: task.taskId })).result ?? {};
    if (state.status !== 'working' || Date.now() > deadline) break;
    await pause(100);
  }
  const result = state.result ?? {};
  check(
    state.status === 'completed' && result.isError !== true && result.structuredContent?.result === 'Refunded $740 on O-TS-TASK',
    'approved, the task completes with the refund\'s result',
    JSON.stringify(state),
  );
  await alice.close();
} catch (error) {
  check(false, 'the session', error?.stack ?? String(error));
}
process.exit(failed === 0 ? 0 : 1);
