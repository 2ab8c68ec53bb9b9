/** Waiting for a condition in tests: polled, with a deadline, never a fixed sleep. */

/** Polls `check` every 100 ms until it returns true; fails after `ms` naming `what`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The status of GET `url` (with `headers`, e.g. bearer()), or undefined when nothing answers. */
export async function statusOf(url: string, headers?: Record<string, string>): Promise<number | undefined> {
  const res = await fetch(url, { headers }).catch(() => undefined);
  await res?.arrayBuffer();
  return res?.status;
}
