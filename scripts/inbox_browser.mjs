// The inbox page in Debian's Chromium, driven by playwright-core: a person
// signs in, sees the $620 refund that waits for them, approves it, and sees
// the result; signs out, and out everywhere; follows a link to the approval
// from another site, signed in and out. Run by scripts/test-inbox.sh:
//
//     node scripts/inbox_browser.mjs BASE_URL TICKET SCREENSHOT_DIR
//
// Exits 0 when every check passes, 1 otherwise.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "x.js"));
const { chromium } = require("playwright-core");

const [base, ticket, shots] = process.argv.slice(2);
if (!base || !ticket || !shots) {
  console.error("usage: inbox_browser.mjs BASE_URL TICKET SCREENSHOT_DIR");
  process.exit(2);
}

function check(ok, what) {
  if (!ok) {
    throw new Error(what);
  }
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    // A name that is not this machine's, for the page over plain HTTP.
    "--host-resolver-rules=MAP inbox.test 127.0.0.1",
  ],
});
try {
  const context = await browser.newContext();
  const page = await context.newPage();

  // A token without the approver scope is refused at sign-in.
  await page.goto(`${base}/inbox`);
  await page.fill("#token", "refunds-token");
  await page.click("button[type=submit]");
  await page.waitForSelector(".problem");
  const refusal = await page.textContent(".problem");
  check(refusal.includes("refunds:approve"), `a refunds-token sign-in was not refused: ${refusal}`);
  check(
    !(await context.cookies()).some((cookie) => cookie.name === "tool_envelope_inbox"),
    "a refused sign-in got a session",
  );
  console.log("PASS  a token without refunds:approve cannot sign in");

  // The approver signs in: a session cookie, HttpOnly and SameSite=Lax.
  await page.fill("#token", "approver-token");
  await page.click("button[type=submit]");
  await page.waitForSelector(`#approval-${ticket}`);
  const session = (await context.cookies()).find((cookie) => cookie.name === "tool_envelope_inbox");
  check(session && session.httpOnly && session.sameSite === "Lax", `session cookie ${JSON.stringify(session)}`);
  const card = page.locator(`#approval-${ticket}`);
  const headline = await card.locator(".headline").textContent();
  check(headline.includes("$620") && headline.includes("$500"), `headline: ${headline}`);
  const reason = await card.locator(".tag.reason").textContent();
  check(reason.includes("REFUND_OVER_CAP"), `reason: ${reason}`);
  const context_ = await card.textContent();
  for (const shown of ["process_refund", "refunds-desk", "O-77", "620", "refunds:approve"]) {
    check(context_.includes(shown), `the card does not show ${shown}: ${context_}`);
  }
  await page.screenshot({ path: path.join(shots, "inbox-pending.png"), fullPage: true });
  console.log("PASS  approver-token signs in and sees the $620 refund, its reason and its context");

  // A POST without the CSRF token, from this very browser, is refused.
  const forged = await page.request.post(`${base}/inbox/approvals/${ticket}`, {
    form: { decision: "approve", note: "forged" },
    maxRedirects: 0,
  });
  check(forged.status() === 403, `a POST without the CSRF token got ${forged.status()}`);
  await page.reload();
  check(
    (await page.locator(`#approval-${ticket} .tag.state`).textContent()).trim() === "pending",
    "the forged POST decided the approval",
  );
  console.log("PASS  a POST without the CSRF token is refused (403), nothing decided");

  // The same form, its CSRF token that holds copied, sent from a page of
  // another origin: the browser says so (Sec-Fetch-Site), and the inbox
  // refuses it before reading it.
  const token = await card.locator("input[name=csrf]").first().getAttribute("value");
  const elsewhere = await context.newPage();
  await elsewhere.goto(`${base.replace("127.0.0.1", "localhost")}/inbox/style.css`);
  await elsewhere.setContent(
    `<form method="post" action="${base}/inbox/approvals/${ticket}">` +
      `<input name="decision" value="approve"><input name="csrf" value="${token}"></form>`,
  );
  const [sent] = await Promise.all([
    elsewhere.waitForResponse((response) => response.url().endsWith(`/inbox/approvals/${ticket}`)),
    elsewhere.evaluate(() => document.forms[0].submit()),
  ]);
  const answer = await sent.text();
  check(
    sent.status() === 403 && answer.includes("another site"),
    `a form from another origin got ${sent.status()}: ${answer.slice(0, 200)}`,
  );
  await elsewhere.close();
  await page.reload();
  check(
    (await page.locator(`#approval-${ticket} .tag.state`).textContent()).trim() === "pending",
    "the form from another origin decided the approval",
  );
  console.log("PASS  a form sent from another origin is refused (403), nothing decided");

  // Approve, with a note; the page shows the result once the call ran.
  await card.locator("input[name=note]").fill("receipt checked");
  await card.locator("button.approve").click();
  await page.waitForURL(`${base}/inbox/approvals/${ticket}`);
  await page.waitForSelector(".result.success", { timeout: 20000 });
  const outcome = await page.textContent(".result");
  check(outcome.includes("Refunded $620 on O-77"), `outcome: ${outcome}`);
  const decision = await page.textContent(".outcome");
  check(decision.includes("approver") && decision.includes("receipt checked"), `decision: ${decision}`);
  await page.screenshot({ path: path.join(shots, "inbox-done.png"), fullPage: true });
  console.log("PASS  approved on the page: the refund ran, and its result is shown");

  // Sign out; then the cookie copied before, put back into the browser as
  // a thief would, is no session: the page asks to sign in again.
  const copied = (await context.cookies()).find((cookie) => cookie.name === "tool_envelope_inbox");
  await page.click("form.sign-out button:not([name])");
  await page.waitForSelector("#token");
  check(
    !(await context.cookies()).some((cookie) => cookie.name === "tool_envelope_inbox"),
    "the session cookie stayed after signing out",
  );
  await context.addCookies([copied]);
  await page.goto(`${base}/inbox`);
  await page.waitForSelector("#token");
  check((await page.locator(".sign-out").count()) === 0, "a replayed cookie was signed in");
  console.log("PASS  signed out: the copied session cookie, replayed, is refused");

  // Signed in on two browsers — a laptop and a phone — then "Sign out
  // everywhere" on the laptop: the phone's next page asks to sign in.
  const phone = await (await browser.newContext()).newPage();
  for (const each of [page, phone]) {
    await each.goto(`${base}/inbox`);
    await each.fill("#token", "approver-token");
    await each.click("button[type=submit]");
    await each.waitForSelector(".sign-out");
  }
  await page.click("form.sign-out button[name=everywhere]");
  await page.waitForSelector("#token");
  await phone.reload();
  await phone.waitForSelector("#token");
  check((await phone.locator(".sign-out").count()) === 0, "the phone stayed signed in");
  await page.fill("#token", "approver-token");
  await page.click("button[type=submit]");
  await page.waitForSelector(".sign-out");
  console.log("PASS  signed out everywhere: the other browser's session is refused, a new sign-in is not");

  // A link to the approval, followed from another site (a chat): signed
  // in, it opens the approval (a SameSite=Strict cookie would not be
  // sent, and the page would ask to sign in); signed out, the sign-in
  // leads back to it.
  const link = `${base}/inbox/approvals/${ticket}`;
  const chat = async (each) => {
    await each.route("http://chat.example/**", (route) =>
      route.fulfill({
        contentType: "text/html",
        body: `<!doctype html><title>chat</title><a id="go" href="${link}">the refund</a>`,
      }),
    );
    await each.goto("http://chat.example/channel");
    await each.click("#go");
    await each.waitForURL(link);
  };
  await chat(page);
  await page.waitForSelector(".outcome");
  check((await page.locator("#token").count()) === 0, "a link from another site asked a signed-in person to sign in");
  const stranger = await (await browser.newContext()).newPage();
  await chat(stranger);
  await stranger.fill("#token", "approver-token");
  await stranger.click("button[type=submit]");
  await stranger.waitForURL(link);
  await stranger.waitForSelector(".outcome");
  const landed = await stranger.textContent(".result");
  check(landed.includes("Refunded $620 on O-77"), `after signing in: ${landed}`);
  console.log("PASS  a link from another site opens the approval signed in, and leads back to it through the sign-in");

  // Over plain HTTP to a host other than this machine, a browser sends no
  // Sec-Fetch-Site: the inbox's own forms are told apart by their Origin,
  // which the page's referrer policy lets the browser send.
  const plain = base.replace("127.0.0.1", "inbox.test");
  const away = await (await browser.newContext()).newPage();
  await away.goto(`${plain}/inbox`);
  await away.fill("#token", "approver-token");
  const [signed] = await Promise.all([
    away.waitForResponse((response) => response.url() === `${plain}/inbox/sign-in`),
    away.click("button[type=submit]"),
  ]);
  check(signed.status() === 303, `signing in over plain HTTP to inbox.test got ${signed.status()}`);
  await away.waitForSelector(".sign-out");
  console.log("PASS  over plain HTTP to another host's name, the inbox's own forms are taken (by their Origin)");
} catch (error) {
  console.error(`FAIL  ${error.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
