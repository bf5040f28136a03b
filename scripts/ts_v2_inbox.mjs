// An approver on the inbox page of examples/mcp_server, over HTTP as a
// browser would (its cookies, the CSRF token of each form): signs in with
// `approver-token` and decides one ticket. Shared by the TypeScript SDK v2
// scripts; scripts/test-inbox.sh copies it next to them.

/**
 * Signs in at `base`'s inbox and approves `ticket` with `note`.
 * Returns the HTTP statuses of the sign-in and of the decision (303 each
 * when they went through) and the decision's body.
 */
export async function approve(base, ticket, note) {
  const jar = new Map();
  const send = async (path, form) => {
    const response = await fetch(`${base}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return { status: response.status, text: await response.text() };
  };
  const csrf = (page) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  const form = await send('/inbox');
  const signed = await send('/inbox/sign-in', { token: 'approver-token', csrf: csrf(form.text) });
  const inbox = await send('/inbox');
  const decided = await send(`/inbox/approvals/${ticket}`, { decision: 'approve', note, csrf: csrf(inbox.text) });
  return { signedIn: signed.status, decided: decided.status, body: decided.text };
}
