// Launches Debian's headless Chromium through playwright-core, with the flags this machine needs
// (root: --no-sandbox; a closed network: no background networking).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { serve } from "../../scripts/serve.mjs";

export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Starts a browser with a fresh profile; `close()` also removes the profile. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "ck-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Serves the repository (the demo page and pkg/), starts a browser and opens the page;
 * `pageErrors` collects what the page throws, `close()` stops both.
 */
export async function openDemo() {
  const server = await serve();
  let browser;
  try {
    browser = await launch();
  } catch (err) {
    await server.close();
    throw err;
  }
  const page = await browser.context.newPage();
  const pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(err));
  await page.goto(server.url);
  return {
    page,
    pageErrors,
    async close() {
      await browser.close();
      await server.close();
    },
  };
}
