/**
 * What the browser suites share: where Chromium is, how it is launched
 * (headless Debian Chromium, driven by playwright-core), and axe-core run in
 * a page.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumPresent = existsSync(CHROMIUM_PATH);
export const browserRequired = (process.env.CI_REQUIRE_BROWSER ?? '') !== '';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core run in the page (evaluated through DevTools, which the page's CSP does not govern): no serious or critical violation. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  const source = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  // Expressions in the page's own terms (this project's TypeScript has no DOM types outside console/).
  const violations = await page.evaluate<AxeViolation[]>(
    'axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))',
  );
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect([name, serious]).toEqual([name, []]);
}
